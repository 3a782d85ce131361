"""What every report figure shares: the figure itself, axis scales and labels, markers.

One rule picks every axis's scale (:func:`axis_scale`: log when positive data span more
than :data:`LOG_SPAN` times), one function labels it (:func:`fit_axis`), and the default
and the recommended configuration are drawn and named the same way in every figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from nictune.formatting import format_number
from nictune.optimizer import Objective
from nictune.report.data import JobData, TrialData

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Positive data whose largest value is more than this many times the smallest get a log axis.
LOG_SPAN = 100.0

#: Colours: the recommendation, the default, other trials, trials breaking a constraint.
BEST, DEFAULT, OTHER, BAD = "#d62728", "#1f77b4", "#7f7f7f", "#ff7f0e"

Scale = Literal["linear", "log"]


def axis_scale(values: Iterable[float]) -> Scale:
    """``log`` when the finite values are all positive and span more than :data:`LOG_SPAN`x."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2 or min(finite) <= 0:
        return "linear"
    return "log" if max(finite) / min(finite) > LOG_SPAN else "linear"


def fit_axis(ax: Axes, values: Iterable[float], label: str, axis: Literal["x", "y"] = "y",
             fontsize: float | None = None) -> Scale:
    """Give ``ax``'s ``axis`` the scale :func:`axis_scale` picks for ``values`` and ``label``
    (``, log scale`` appended when it is log)."""
    scale = axis_scale(values)
    text = label + (", log scale" if scale == "log" else "")
    if axis == "y":
        ax.set_yscale(scale)
        ax.set_ylabel(text, fontsize=fontsize)
    else:
        ax.set_xscale(scale)
        ax.set_xlabel(text, fontsize=fontsize)
    return scale


def objective_heading(o: Objective, better: bool = False) -> str:
    """``throughput (Gbit/s)``; with ``better``: ``throughput (Gbit/s), higher is better``."""
    text = f"{o.label} ({o.unit})" if o.unit else o.label
    if better:
        text += ", higher is better" if o.direction == "maximize" else ", lower is better"
    return text


def trial_labels(job: JobData) -> tuple[str, str]:
    """Legend entries of ordinary trials: feasible, infeasible. "Feasible" only means
    something when the job has constraints; without, every trial is just a trial."""
    if job.goal.constraints:
        return "trial meeting the constraints", "trial breaking a constraint"
    return "trial", "trial"


def recommended_label(job: JobData, trial: TrialData) -> str:
    """``recommended (trial 27)``, or ``recommended = default (trial 0)``."""
    same = trial.config_hash == job.space.default().hash
    return f"recommended{' = default' if same else ''} (trial {trial.number})"


def default_label(trial: TrialData) -> str:
    """``default (trial 0)``, or ``default (earlier jobs)`` when this job did not measure it."""
    return "default (earlier jobs)" if trial.source == "history" else f"default (trial {trial.number})"


def mark(ax: Axes, x: float, y: float, which: Literal["recommended", "default"], label: str) -> None:
    """The recommendation (a red star) or the default (a blue diamond) at ``(x, y)``, named ``label``."""
    if which == "recommended":
        ax.scatter([x], [y], s=170, marker="*", color=BEST, edgecolor="black", linewidth=0.6, zorder=5, label=label)
    else:
        ax.scatter([x], [y], s=70, marker="D", color=DEFAULT, edgecolor="black", linewidth=0.6, zorder=4,
                   label=label)


def with_value(label: str, value: float, unit: str) -> str:
    """``label: 39.6 Gbit/s`` (one formatter for every number)."""
    return f"{label}: {format_number(value)} {unit}".rstrip()


def new_figure(job: JobData, width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches; a simulated testbed's carries a footer saying so,
    so a PNG copied out of the report still says its numbers come from a model."""
    # matplotlib is imported here, not with the module: it costs about a third of a second,
    # and every CLI command imports this package but only `report` draws.
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    if not job.simulated:
        return Figure(figsize=(width, height), dpi=100, layout="constrained")
    # Room at the bottom for the footer, so it never sits on a tick label.
    footer = min(0.2, 0.16 / height)
    fig = Figure(figsize=(width, height + 0.16), dpi=100,
                 layout=ConstrainedLayoutEngine(rect=(0, footer, 1, 1 - footer)))
    fig.text(0.995, 0.005, f"simulated testbed (a model, not hardware): {job.info['testbed']}",
             ha="right", va="bottom", fontsize=7, color="#a00", style="italic")
    return fig


__all__ = ["BAD", "BEST", "DEFAULT", "LOG_SPAN", "OTHER", "axis_scale", "default_label", "fit_axis", "mark",
           "new_figure", "objective_heading", "recommended_label", "trial_labels", "with_value"]
