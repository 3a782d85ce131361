"""Exports of a measured configuration: TuneD profile, sysctl drop-in, shell scripts, JSON.

Typical use::

    src = load_source(open_database(url), job_id=12)        # the best trial
    write_export(src, "script", Path("tune.sh"))            # tune.sh + tune-rollback.sh
"""

from __future__ import annotations

from nictune.export.json_export import export_document, render_json
from nictune.export.script import Scripts, render_scripts
from nictune.export.source import Before, ExportSource, Item, load_source, source_from_job
from nictune.export.sysctl import render_sysctl, sysctl_lines
from nictune.export.tuned import profile_name, render_tuned
from nictune.export.write import FORMATS, Written, default_path, rollback_path, write_export

__all__ = [
    "FORMATS",
    "Before",
    "ExportSource",
    "Item",
    "Scripts",
    "Written",
    "default_path",
    "export_document",
    "load_source",
    "profile_name",
    "render_json",
    "render_scripts",
    "render_sysctl",
    "render_tuned",
    "rollback_path",
    "source_from_job",
    "sysctl_lines",
    "write_export",
]
