"""``pareto.png``: the job's first two objectives, its front, the default and the recommendation.

The axes are the objectives as the job optimised them (:meth:`Objective.value`: interrupts
per GB, receiver CPU per Gbit/s), not the raw metrics they are computed from, each scaled
by the report's one rule (log where the trials span more than 100x).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from nictune.formatting import format_number
from nictune.optimizer import Objective
from nictune.report.axes import (
    BAD,
    BEST,
    OTHER,
    default_label,
    fit_axis,
    mark,
    new_figure,
    objective_heading,
    recommended_label,
    trial_labels,
)
from nictune.report.data import JobData, TrialData

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _point_label(label: str, trial: TrialData, job: JobData, objectives: tuple[Objective, Objective]) -> str:
    values = ", ".join(f"{format_number(job.value(trial.metrics, o))} {o.unit}" for o in objectives)
    return f"{label}: {values}"


def pareto(job: JobData) -> Figure | None:
    """The first two objectives of every completed trial, the front joined, the default and the
    recommendation marked; ``None`` for a single-objective job or one with no plottable trial."""
    if not job.pareto:
        return None
    o1, o2 = job.goal.objectives[0], job.goal.objectives[1]

    def xy(trial: TrialData) -> tuple[float, float]:
        return job.value(trial.metrics, o1), job.value(trial.metrics, o2)

    def finite(trial: TrialData) -> bool:
        return all(math.isfinite(v) for v in xy(trial))

    trials = [t for t in job.completed if finite(t)]
    if not trials:
        return None
    front = [t for t in job.front() if finite(t)]
    on_front = {t.number for t in front}
    fig = new_figure(job, 7.5, 5.2)
    ax = fig.add_subplot()
    ok_label, bad_label = trial_labels(job)
    for feasible, label, style in ((True, ok_label, {"color": OTHER, "alpha": 0.6, "s": 14}),
                                   (False, bad_label, {"color": BAD, "marker": "x", "s": 18})):
        pts = [xy(t) for t in trials if t.feasible == feasible and t.number not in on_front]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=label, **style)  # type: ignore[arg-type]
    if front:
        fpts = sorted(xy(t) for t in front)
        ax.plot([p[0] for p in fpts], [p[1] for p in fpts], color=BEST, marker="o", markersize=5, linewidth=1.2,
                label=f"Pareto front ({len(front)} trials)")
    default, best = job.baseline, job.best
    if default is not None and finite(default):
        mark(ax, *xy(default), "default", _point_label(default_label(default), default, job, (o1, o2)))
    if best is not None and finite(best):
        mark(ax, *xy(best), "recommended", _point_label(recommended_label(job, best), best, job, (o1, o2)))
    fit_axis(ax, [xy(t)[0] for t in trials], objective_heading(o1, better=True), axis="x")
    fit_axis(ax, [xy(t)[1] for t in trials], objective_heading(o2, better=True), axis="y")
    extra = f" (front over all {len(job.goal.objectives)} objectives)" if len(job.goal.objectives) > 2 else ""
    ax.set_title(f"job {job.job_id}: Pareto front of {o1.label} and {o2.label}{extra}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="best")
    return fig


__all__ = ["pareto"]
