"""The report's figures, drawn with matplotlib's object API (no pyplot, no global state).

Each function returns a :class:`matplotlib.figure.Figure`, or ``None`` when the job has
nothing to show for it. Every axis is labelled with a metric's heading or an objective's
label and unit, and scaled by one rule (:func:`nictune.report.axes.axis_scale`: log where
positive data span more than 100x); the recommended configuration (a red star) and the
default (a blue diamond) are marked and named in a legend. Figures of a simulated testbed
carry a footer saying so. The Pareto figure is in :mod:`nictune.report.pareto_figure`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nictune import metrics
from nictune.formatting import format_number
from nictune.optimizer import Goal, Objective
from nictune.report.axes import (
    BAD,
    BEST,
    DEFAULT,
    OTHER,
    axis_scale,
    default_label,
    fit_axis,
    mark,
    new_figure,
    objective_heading,
    recommended_label,
    trial_labels,
    with_value,
)
from nictune.report.data import JobData, TrialData, median
from nictune.report.importance import Importance
from nictune.report.ofat import Round
from nictune.report.pareto_figure import pareto

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Loss of 0 % cannot sit on a log axis: it is drawn at this floor (in percent).
LOSS_FLOOR = 1e-6
#: At most this many knobs get an effect panel.
MAX_EFFECT_KNOBS = 6


def fmt(value: float) -> str:
    """A number with sensible precision (as the CLI prints them)."""
    return format_number(value)


def _convergence_panel(ax: Axes, job: JobData, o: Objective) -> int:
    """Objective ``o`` of every trial, its best so far, the default and the recommendation."""
    goal = Goal([o], job.goal.constraints)  # "best so far" of this objective alone
    done = [(t, job.value(t.metrics, o)) for t in job.completed]
    done = [(t, v) for t, v in done if math.isfinite(v)]
    ok_label, bad_label = trial_labels(job)
    ok = [(t.number, v) for t, v in done if t.feasible]
    bad = [(t.number, v) for t, v in done if not t.feasible]
    if ok:
        ax.scatter([p[0] for p in ok], [p[1] for p in ok], s=14, color=OTHER, alpha=0.6, label=ok_label)
    if bad:
        ax.scatter([p[0] for p in bad], [p[1] for p in bad], s=18, color=BAD, marker="x", label=bad_label)
    xs, ys = [], []
    best_score, best_value = None, math.nan
    for t, v in done:
        score = goal.score(t.metrics)
        if best_score is None or score > best_score:
            best_score, best_value = score, v
        xs.append(t.number)
        ys.append(best_value)
    ax.step(xs, ys, where="post", color=BEST, linewidth=1.5, alpha=0.7,
            label="best so far" + (" (this objective alone)" if job.pareto else ""))
    plotted = [v for _, v in done]
    default, best = job.baseline, job.best
    if default is not None and math.isfinite(dv := job.value(default.metrics, o)):
        named = with_value(default_label(default), dv, o.unit)
        history = default.source == "history"  # no trial of this job: a line, no point
        ax.axhline(dv, color=DEFAULT, linestyle="--", linewidth=1, label=named if history else None)
        if not history:
            mark(ax, default.number, dv, "default", named)
    if best is not None and math.isfinite(bv := job.value(best.metrics, o)):
        mark(ax, best.number, bv, "recommended", with_value(recommended_label(job, best), bv, o.unit))
    fit_axis(ax, plotted, objective_heading(o, better=True), fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", fontsize=7)
    return len(done)


def convergence(job: JobData) -> Figure | None:
    """Objective of every trial against the trial number, with the best so far, the default
    and the recommendation. A Pareto job gets one panel per objective."""
    objectives = job.goal.objectives
    if not any(math.isfinite(job.value(t.metrics, o)) for t in job.completed for o in objectives):
        return None
    fig = new_figure(job, 8, 3.4 * len(objectives) + 0.8)
    axes = fig.subplots(len(objectives), 1, sharex=True, squeeze=False)[:, 0]
    counts = [_convergence_panel(ax, job, o) for ax, o in zip(axes, objectives, strict=True)]
    axes[-1].set_xlabel("trial number")
    if job.pareto:
        names = " and ".join(o.label for o in objectives)
        title = (f"job {job.job_id}: convergence of {job.info['engine']}, one panel per objective "
                 f"({names}; {max(counts)} completed trials)")
    else:
        title = (f"job {job.job_id}: convergence of {job.info['engine']} on {objectives[0].label} "
                 f"({counts[0]} completed trials)")
    fig.suptitle(title, fontsize=10)
    return fig


def _pairs(job: JobData) -> list[tuple[str, str, TrialData, str]]:
    """(tick, legend label, trial, colour) of the default (when measured and not the recommendation)
    and the recommendation."""
    best, default = job.best, job.baseline
    if best is None:
        return []
    pairs = []
    if default is not None and default.config_hash != best.config_hash:
        pairs.append(("default", default_label(default), default, DEFAULT))
    pairs.append(("recommended", recommended_label(job, best), best, BEST))
    return pairs


def _values(trial: TrialData, name: str) -> tuple[float, float, float, list[float]]:
    mean = trial.metrics.get(name, math.nan)
    spread = trial.spread.get(name, {})
    reps = [r[name] for r in trial.repeats if name in r]
    lo = spread.get("min", min(reps) if reps else mean)
    hi = spread.get("max", max(reps) if reps else mean)
    return mean, lo, hi, reps


def _compared_metrics(job: JobData) -> list[str]:
    pairs = _pairs(job)
    present = {m for *_, t, _c in pairs for m in t.metrics}
    return [m for m in metrics.DEFINITIONS if m in present] + sorted(present - set(metrics.DEFINITIONS))


def _all_values(trial: TrialData, name: str) -> list[float]:
    mean, lo, hi, reps = _values(trial, name)
    return [mean, lo, hi, *reps]


def zero_metrics(job: JobData) -> list[str]:
    """Metrics that are 0 in every repeat of both the default and the recommendation: the
    default-vs-best figure leaves them out (its caption names them)."""
    pairs = _pairs(job)
    return [m for m in _compared_metrics(job)
            if all(v == 0 for *_, t, _c in pairs if m in t.metrics for v in _all_values(t, m))]


def default_vs_best(job: JobData) -> Figure | None:
    """Each metric of the default and the recommendation: mean, min..max and each repeat.
    Metrics that are zero in both are left out (:func:`zero_metrics`)."""
    pairs = _pairs(job)
    zeros = set(zero_metrics(job))
    names = [m for m in _compared_metrics(job) if m not in zeros]
    if not names:
        return None
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig = new_figure(job, 3.0 * cols, 2.6 * rows + 0.8)
    own = {o.metric for o in job.goal.objectives if o.per is None}
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows, cols, i + 1)
        plotted: list[float] = []
        for x, (_tick, label, trial, colour) in enumerate(pairs):
            mean, lo, hi, reps = _values(trial, name)
            if math.isnan(mean):
                continue
            ax.bar(x, mean, width=0.6, color=colour, alpha=0.55, label=label)
            ax.errorbar(x, mean, yerr=[[max(mean - lo, 0)], [max(hi - mean, 0)]], color="black",
                        capsize=4, linewidth=1)
            if reps:
                ax.scatter([x] * len(reps), reps, s=10, color="black", zorder=3)
            plotted += _all_values(trial, name)
        fit_axis(ax, plotted, metrics.unit(name) or "value", fontsize=8)
        ax.set_title(metrics.heading(name) + ("  (objective)" if name in own else ""), fontsize=9,
                     fontweight="bold" if name in own else "normal")
        ax.set_xticks(range(len(pairs)), [p[0] for p in pairs], fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3, which="both")
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(color=c, alpha=0.55, label=label) for _t, label, _tr, c in pairs],
               loc="outside lower center", ncols=len(pairs), fontsize=8)
    fig.suptitle(f"job {job.job_id}: default vs recommended, mean with min..max of the repeats "
                 "(dots: each repeat)", fontsize=10)
    return fig


def importance_bars(job: JobData, importance: Importance) -> Figure | None:
    """The share of the objective's variance each knob explains."""
    if not importance.scores:
        return None
    names = list(importance.scores)[::-1]
    values = [importance.scores[n] for n in names]
    fig = new_figure(job, 7, 0.35 * len(names) + 1.4)
    ax = fig.add_subplot()
    ax.barh(names, values, color=DEFAULT)
    for y, v in enumerate(values):
        ax.text(v, y, f" {format_number(v)}", va="center", fontsize=8)
    ax.set_xlim(0, max(values) * 1.18 if max(values) > 0 else 1)
    ax.set_xlabel(f"share of the variance of the {job.objective.label} (fANOVA)")
    ax.set_title(f"job {job.job_id}: knob importance over {importance.trials} trials", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return fig


def effect_knobs(job: JobData, importance: Importance) -> list[str]:
    """Knobs worth an effect panel: the important ones, else those the best changed."""
    knobs = [n for n, v in importance.scores.items() if v >= 0.02][:MAX_EFFECT_KNOBS]
    if not knobs:
        knobs = [c["knob"] for c in job.info.get("changes", [])][:MAX_EFFECT_KNOBS]
    return knobs


def _order(values: Sequence[Any], listed: Sequence[Any] | None) -> list[Any]:
    uniq = list(dict.fromkeys(values))
    if listed:
        rank = {repr(v): i for i, v in enumerate(listed)}
        return sorted(uniq, key=lambda v: (rank.get(repr(v), len(rank)), repr(v)))
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in uniq):
        return sorted(uniq)
    return sorted(uniq, key=repr)


def knob_effects(job: JobData, knobs: Sequence[str]) -> Figure | None:
    """The objective of every trial against the value of each knob in ``knobs``."""
    if not knobs:
        return None
    done = [(t, job.value(t.metrics)) for t in job.completed]
    done = [(t, v) for t, v in done if math.isfinite(v)]
    if not done:
        return None
    cols = min(3, len(knobs))
    rows = math.ceil(len(knobs) / cols)
    fig = new_figure(job, 4.0 * cols, 3.0 * rows + 0.4)
    best, default = job.best, job.baseline
    for i, name in enumerate(knobs):
        ax = fig.add_subplot(rows, cols, i + 1)
        knob = job.space.knobs.get(name)
        points = [(t.config[name], v, t) for t, v in done if name in t.config]
        if not points:
            ax.set_title(f"{name}: not active in any trial", fontsize=9)
            continue
        order = _order([p[0] for p in points], knob.values() if knob is not None else None)
        pos = {repr(v): j for j, v in enumerate(order)}
        for j, value in enumerate(order):
            ys = [v for x, v, _ in points if repr(x) == repr(value)]
            jitter = [j + 0.18 * ((k * 0.618) % 1 - 0.5) for k in range(len(ys))]
            ax.scatter(jitter, ys, s=12, color=OTHER, alpha=0.6)
            ax.plot([j - 0.25, j + 0.25], [median(ys)] * 2, color="black", linewidth=2)
        # The default may come from earlier jobs, with a value no trial of this job had.
        if default is not None and repr(default.config.get(name)) in pos:
            mark(ax, pos[repr(default.config[name])], job.value(default.metrics), "default", default_label(default))
        if best is not None and repr(best.config.get(name)) in pos:
            mark(ax, pos[repr(best.config[name])], job.value(best.metrics), "recommended",
                 recommended_label(job, best))
        unit = f" ({knob.unit})" if knob is not None and knob.unit else ""
        ax.set_xticks(range(len(order)), [str(v) for v in order], fontsize=7,
                      rotation=45 if len(order) > 4 else 0)
        ax.set_xlabel(name + unit, fontsize=8)
        fit_axis(ax, [v for _, v, _ in points], objective_heading(job.objective), fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3, which="both")
        if i == 0:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"job {job.job_id}: {job.objective.label} against each important knob "
                 "(bar: median of the trials with that value)", fontsize=10)
    return fig


def _stats(values: list[float]) -> tuple[float, float, float]:
    return (min(values), median(values), max(values)) if values else (math.nan,) * 3


def _errorbars(ax: Axes, rows: list[tuple[int, tuple[float, float, float], str]], label: str, fmt: str,
               floor: float | None = None) -> None:
    """min/median/max of each profile at its x. With ``floor``, a log axis draws values below
    it (a loss of 0 %) at the floor and says so."""
    lowest = floor if floor is not None else -math.inf
    floored = [max(v, lowest) for _, st, _ in rows for v in st]
    log = axis_scale(floored) == "log"
    if log and floor is not None and any(v <= 0 for _, st, _ in rows for v in st):
        label += f"; 0 drawn at {floor:g}"
    fit_axis(ax, floored, label)
    for x, stats, colour in rows:
        lo, mid, hi = (max(v, lowest) for v in stats) if log else stats
        ax.errorbar([x], [mid], yerr=[[mid - lo], [hi - mid]], fmt=fmt, color=colour, capsize=3, markersize=4)


def ofat_profiles(job: JobData, rnd: Round) -> Figure | None:
    """The 40 GbE paper's figure: min/median/max per profile, loss below (log when it spans decades)."""
    profiles = rnd.profiles
    if len(profiles) < 2:
        return None
    show_loss_top = job.objective.metric == "loss_pct"
    width = max(8.0, 0.32 * len(profiles) + 2)
    fig = new_figure(job, width, 7.2)
    ax_top, ax_loss = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    top: list[tuple[int, tuple[float, float, float], str]] = []
    loss: list[tuple[int, tuple[float, float, float], str]] = []
    center_value = math.nan
    for x, prof in enumerate(profiles):
        trial = prof.trial
        colour = BEST if prof.is_center else DEFAULT
        if not trial.completed:
            ax_top.scatter([x], [0], marker="x", color=BAD)
            continue
        if show_loss_top:
            vals = [r["throughput_gbps"] for r in trial.repeats if "throughput_gbps" in r] or \
                   [trial.metrics.get("throughput_gbps", math.nan)]
        else:
            vals = job.repeat_values(trial)
        top.append((x, _stats(vals), colour))
        if prof.is_center:
            center_value = top[-1][1][1]
        losses = [r["loss_pct"] for r in trial.repeats if "loss_pct" in r] or \
                 ([trial.metrics["loss_pct"]] if "loss_pct" in trial.metrics else [])
        if losses:
            loss.append((x, _stats(losses), colour))
    _errorbars(ax_top, top, metrics.heading("throughput_gbps") if show_loss_top else objective_heading(job.objective),
               "o")
    _errorbars(ax_loss, loss, metrics.heading("loss_pct"), "s", floor=LOSS_FLOOR)
    if math.isfinite(center_value):
        ax_top.axhline(center_value, color=BEST, linestyle=":", linewidth=1)
    ax_top.grid(axis="y", alpha=0.3, which="both")
    ax_loss.grid(axis="y", alpha=0.3, which="both")
    ax_loss.set_xticks(range(len(profiles)), [p.label for p in profiles], rotation=75, ha="right", fontsize=7)
    for tick, prof in zip(ax_loss.get_xticklabels(), profiles, strict=True):
        if prof.is_center:
            tick.set_color(BEST)
            tick.set_fontweight("bold")
    ax_top.set_title(f"job {job.job_id}, round {rnd.index + 1}: one-factor changes of the center "
                     "(min / median / max over the repeats)", fontsize=10)
    return fig


__all__ = [
    "LOSS_FLOOR",
    "convergence",
    "default_vs_best",
    "effect_knobs",
    "fmt",
    "importance_bars",
    "knob_effects",
    "ofat_profiles",
    "pareto",
    "zero_metrics",
]
