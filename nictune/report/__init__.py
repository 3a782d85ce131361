"""Reports of finished jobs: figures (PNG) and one self-contained HTML page.

Typical use::

    report = build_report(open_database(url), job_id=12, out_dir=Path("report-12"))
    print(report.html)
"""

from __future__ import annotations

from nictune.report.build import Report, build_report, render_html
from nictune.report.data import SIMULATED_NOTE, JobData, TrialData, gain, load_job
from nictune.report.importance import Importance, knob_importance
from nictune.report.ofat import Profile, Round, ofat_rounds

__all__ = [
    "SIMULATED_NOTE",
    "Importance",
    "JobData",
    "Profile",
    "Report",
    "Round",
    "TrialData",
    "build_report",
    "gain",
    "knob_importance",
    "load_job",
    "ofat_rounds",
    "render_html",
]
