"""``nictune report``: figures and a self-contained HTML page for one job."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from nictune.cli._common import SIM_NOTE, console
from nictune.cli.dbopt import DB_OPTION, open_db
from nictune.jobs.runner import INT32_MAX
from nictune.report import build_report


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report)


def report(
    job_id: int = typer.Argument(..., min=1, max=INT32_MAX, help="Job id (see nictune history)."),
    out: Path | None = typer.Option(None, "--out", "-o", metavar="DIR",
                                    help="Directory for report.html and the PNGs (default: ./nictune-report-jobN)."),
    db_url: str | None = DB_OPTION,
) -> None:
    """Write an HTML report (figures inlined, opens with no network) and its PNG figures.

    Figures: convergence, default vs best for every metric, knob importance, per-knob
    effect, the Pareto front (several objectives) and the one-factor profiles (engine ofat).
    """
    dbe = open_db(db_url, must_exist=True)
    out_dir = out if out is not None else Path(f"nictune-report-job{job_id}")
    with console.status(f"building the report of job {job_id}"):
        result = build_report(dbe, job_id, out_dir)
    console.print(Text.assemble(f"report of job {job_id}: ", (str(result.html), "bold")))
    for name, path in result.figures.items():
        console.print(f"  figure {name}: {path}")
    for note in result.notes:
        console.print(f"  note: {note}")
    if result.simulated:
        console.print(f"({SIM_NOTE})")


__all__ = ["register", "report"]
