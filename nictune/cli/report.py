"""``nictune report``: figures and a self-contained HTML page for one job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from nictune.cli._common import QUIET_OPTION, SIM_NOTE, console, output_mode, plain_line
from nictune.cli.dbopt import DB_OPTION, open_db
from nictune.jobs.runner import INT32_MAX
from nictune.report import Report, build_report


def _build(dbe: Any, job_id: int, out_dir: Path, quiet: bool) -> Report:
    """The report, its stages shown as a spinner on a terminal and as plain lines in a pipe."""
    mode = output_mode(quiet=quiet)
    if mode == "lines":
        return build_report(dbe, job_id, out_dir, progress=lambda stage: plain_line(f"report of job {job_id}: {stage}"))
    if mode == "quiet":
        return build_report(dbe, job_id, out_dir)
    with console.status(f"building the report of job {job_id}") as status:
        return build_report(dbe, job_id, out_dir, progress=lambda stage: status.update(
            f"building the report of job {job_id}: {stage}"))


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""
    app.command("report")(report)


def report(
    job_id: int = typer.Argument(..., min=1, max=INT32_MAX, help="Job id (see nictune history)."),
    out: Path | None = typer.Option(None, "--out", "-o", metavar="DIR",
                                    help="Directory for report.html and the PNGs (default: ./nictune-report-jobN)."),
    db_url: str | None = DB_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Write an HTML report (figures inlined, opens with no network) and its PNG figures.

    Figures: convergence, default vs best for every metric, knob importance, per-knob
    effect, the Pareto front (several objectives) and the one-factor profiles (engine ofat).
    When stdout is not a terminal, each stage is a plain line; --quiet prints only the result.
    """
    dbe = open_db(db_url, must_exist=True)
    out_dir = out if out is not None else Path(f"nictune-report-job{job_id}")
    result = _build(dbe, job_id, out_dir, quiet)
    # Paths are never wrapped: a script reading the output (or a narrow pipe) gets them whole.
    console.print(Text.assemble(f"report of job {job_id}: ", (str(result.html), "bold")), soft_wrap=True)
    for name, path in result.figures.items():
        console.print(f"  figure {name}: {path}", soft_wrap=True)
    for note in result.notes:
        console.print(f"  note: {note}")
    if result.simulated:
        console.print(f"({SIM_NOTE})")


__all__ = ["register", "report"]
