"""``nictune export``: the best (or a chosen) configuration of a job as TuneD, sysctl, script or JSON."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from nictune.cli._common import SIM_NOTE, console, err_console
from nictune.cli.dbopt import DB_OPTION, open_db
from nictune.errors import InvalidInputError
from nictune.export import FORMATS, load_source, render_json, render_sysctl, render_tuned, write_export
from nictune.export.source import ExportSource
from nictune.jobs.runner import INT32_MAX

_STDOUT = {"tuned": render_tuned, "sysctl": render_sysctl, "json": render_json}


def register(app: typer.Typer) -> None:
    """Add ``export`` to ``app``."""
    app.command("export")(export)


def export(
    job_id: int = typer.Argument(..., min=1, max=INT32_MAX, help="Job id (see nictune history)."),
    fmt: str = typer.Option(..., "--format", "-f", metavar="FORMAT", help="tuned, sysctl, script or json."),
    out: Path | None = typer.Option(
        None, "--out", "-o", metavar="PATH",
        help="Where to write (a directory for tuned; '-' prints tuned.conf, sysctl or json). "
             "Default: a name with the job id in the current directory."),
    trial: int | None = typer.Option(None, "--trial", metavar="N", help="Export trial N instead of the best."),
    device: str | None = typer.Option(
        None, "--device", "-d", metavar="IFACE",
        help="The data interface of the host the export is for (default: the one the trial measured; "
             "a profile for a host whose interface was not recorded otherwise names CHANGE-ME)."),
    include: list[str] = typer.Option(
        [], "--include", metavar="PROFILE",
        help="tuned only: a stock TuneD profile this one builds on (include=PROFILE in [main]), "
             "e.g. network-throughput or network-latency; repeatable."),
    force: bool = typer.Option(False, "--force", help="Replace files that exist (never through a symbolic link)."),
    db_url: str | None = DB_OPTION,
) -> None:
    """Export a measured configuration.

    tuned: a TuneD profile directory; sysctl: a /etc/sysctl.d drop-in; script: an idempotent
    shell script for the ip/ethtool settings and its rollback; json: the configuration and
    its metrics. Existing files are kept unless --force; files are written atomically.
    Per-socket buffer defaults of 4 MiB or more are warned about with the memory they may
    commit on a busy host.
    """
    if fmt not in FORMATS:
        raise InvalidInputError(f"--format {fmt!r}: unknown export format", field="format",
                                allowed=", ".join(FORMATS))
    if trial is not None and trial < 0:
        raise InvalidInputError(f"--trial {trial}: trial numbers start at 0", field="trial",
                                allowed="an integer >= 0")
    names = [n.strip() for value in include for n in value.split(",") if n.strip()]
    if names and fmt != "tuned":
        raise InvalidInputError(f"--include is for --format tuned, not {fmt}", field="include",
                                allowed="--include with --format tuned")
    src = load_source(open_db(db_url, must_exist=True), job_id, trial, device=device, include=names)
    if out is not None and str(out) == "-":
        if fmt not in _STDOUT:
            raise InvalidInputError("--out -: the script format writes two files (script and rollback)",
                                    field="out", allowed="a file path for --format script")
        print(_STDOUT[fmt](src), end="")
        _warn(src)
        if src.simulated:
            err_console.print(f"({SIM_NOTE})")
        return
    written = write_export(src, fmt, out, force=force)
    which = "best trial" if src.is_best else "trial"
    console.print(f"job {src.job_id}, {which} {src.trial} ({src.config_hash[:12]}): {src.gain_text}")
    _warn(src)
    for what, path in written.files.items():
        console.print(Text.assemble(f"  {what}: ", (str(path), "bold")))
    if src.simulated:
        console.print(f"({SIM_NOTE}; measure on your hosts before relying on these settings)")


def _warn(src: ExportSource) -> None:
    """The warnings every exported file carries, on the terminal too."""
    for text in src.warnings():
        err_console.print(f"warning: {text}", style="yellow", highlight=False)


__all__ = ["export", "register"]
