"""The report's figures, drawn with matplotlib's object API (no pyplot, no global state).

Each function returns a :class:`matplotlib.figure.Figure`, or ``None`` when the job has
nothing to show for it. Figures of a simulated testbed carry a footer saying so, so a PNG
copied out of the report still says its numbers come from a model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nictune.errors import MeasurementError
from nictune.formatting import format_number
from nictune.measure._base import METRICS
from nictune.optimizer.pareto import MultiScore, pareto_front
from nictune.report.data import JobData, TrialData, median
from nictune.report.importance import Importance
from nictune.report.ofat import Round

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Loss of 0 % cannot sit on a log axis: it is drawn at this floor (in percent).
LOSS_FLOOR = 1e-6
#: At most this many knobs get an effect panel.
MAX_EFFECT_KNOBS = 6

#: Short units of the metrics, for axis labels.
UNITS = {
    "throughput_gbps": "Gbit/s",
    "packet_rate_mpps": "Mpps",
    "loss_pct": "% of sent",
    "retransmits": "segments per run",
    "interrupts_per_s": "interrupts/s",
    "interrupts_per_gb": "interrupts/GB",
    "cpu_rx_pct": "% of one core",
    "cpu_tx_pct": "% of one core",
}

_BEST, _DEFAULT, _OTHER, _BAD = "#d62728", "#1f77b4", "#7f7f7f", "#ff7f0e"


def fmt(value: float) -> str:
    """A number with sensible precision (as the CLI prints them)."""
    return format_number(value)


def _figure(job: JobData, width: float, height: float) -> Figure:
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


def _axis_label(job: JobData) -> str:
    o = job.objective
    better = "higher" if o.direction == "maximize" else "lower"
    return f"{o.label} ({o.unit}), {better} is better"


def convergence(job: JobData) -> Figure | None:
    """Objective of every trial and the best so far against the trial number."""
    done = [(t, job.value(t.metrics)) for t in job.completed]
    done = [(t, v) for t, v in done if math.isfinite(v)]
    if not done:
        return None
    fig = _figure(job, 8, 4.2)
    ax = fig.add_subplot()
    ok = [(t.number, v) for t, v in done if t.feasible]
    bad = [(t.number, v) for t, v in done if not t.feasible]
    if ok:
        ax.scatter([p[0] for p in ok], [p[1] for p in ok], s=14, color=_OTHER, alpha=0.6, label="trial")
    if bad:
        ax.scatter([p[0] for p in bad], [p[1] for p in bad], s=18, color=_BAD, marker="x",
                   label="trial breaking a constraint")
    xs, ys = [], []
    best_score = None
    best_value = math.nan
    for t, v in done:
        score = job.goal.score(t.metrics)
        if best_score is None or score > best_score:
            best_score, best_value = score, v
        xs.append(t.number)
        ys.append(best_value)
    ax.step(xs, ys, where="post", color=_BEST, linewidth=2, label="best so far")
    default = job.default
    if default is not None and math.isfinite(job.value(default.metrics)):
        dv = job.value(default.metrics)
        ax.axhline(dv, color=_DEFAULT, linestyle="--", linewidth=1.2,
                   label=f"default (trial {default.number}): {fmt(dv)} {job.objective.unit}")
    ax.set_xlabel("trial number")
    ax.set_ylabel(_axis_label(job))
    ax.set_title(f"job {job.job_id}: convergence of {job.info['engine']} ({len(done)} completed trials)")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return fig


def _metric_values(trial: TrialData, name: str) -> tuple[float, float, float, list[float]]:
    mean = trial.metrics.get(name, math.nan)
    spread = trial.spread.get(name, {})
    reps = [r[name] for r in trial.repeats if name in r]
    lo = spread.get("min", min(reps) if reps else mean)
    hi = spread.get("max", max(reps) if reps else mean)
    return mean, lo, hi, reps


def default_vs_best(job: JobData) -> Figure | None:
    """Each metric of the default and the best trial: mean, min..max and each repeat."""
    best, default = job.best, job.default
    if best is None:
        return None
    pairs: list[tuple[str, TrialData]] = []
    if default is not None and default.number != best.number:
        pairs.append((f"default (trial {default.number})", default))
    pairs.append((f"best (trial {best.number})", best))
    names = [m for m in METRICS if any(m in t.metrics for _, t in pairs)]
    names += sorted({m for _, t in pairs for m in t.metrics} - set(names))
    if not names:
        return None
    cols = 4
    rows = math.ceil(len(names) / cols)
    fig = _figure(job, 3.0 * cols, 2.6 * rows + 0.4)
    colours = [_DEFAULT, _BEST] if len(pairs) == 2 else [_BEST]
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows, cols, i + 1)
        positives = []
        for x, ((_label, trial), colour) in enumerate(zip(pairs, colours, strict=True)):
            mean, lo, hi, reps = _metric_values(trial, name)
            if math.isnan(mean):
                continue
            ax.bar(x, mean, width=0.6, color=colour, alpha=0.55)
            ax.errorbar(x, mean, yerr=[[max(mean - lo, 0)], [max(hi - mean, 0)]], color="black",
                        capsize=4, linewidth=1)
            if reps:
                ax.scatter([x] * len(reps), reps, s=10, color="black", zorder=3)
            positives += [v for v in (mean, lo, hi, *reps) if v > 0]
        if positives and min(positives) > 0 and max(positives) / min(positives) > 1000 \
                and all(trial.metrics.get(name, 1) > 0 for _, trial in pairs):
            ax.set_yscale("log")
        unit = UNITS.get(name, "")
        is_objective = name == job.objective.metric
        ax.set_title(name + ("  (objective)" if is_objective else ""), fontsize=9,
                     fontweight="bold" if is_objective else "normal")
        ax.set_xticks(range(len(pairs)), [p[0].split(" ")[0] for p in pairs], fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        if unit:
            ax.set_ylabel(unit, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"job {job.job_id}: default vs best, mean with min..max of the repeats (dots: each repeat)",
                 fontsize=10)
    return fig


def importance_bars(job: JobData, importance: Importance) -> Figure | None:
    """The share of the objective's variance each knob explains."""
    if not importance.scores:
        return None
    names = list(importance.scores)[::-1]
    values = [importance.scores[n] for n in names]
    fig = _figure(job, 7, 0.35 * len(names) + 1.4)
    ax = fig.add_subplot()
    ax.barh(names, values, color=_DEFAULT)
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:.2f}", va="center", fontsize=8)
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
    fig = _figure(job, 4.0 * cols, 3.0 * rows + 0.4)
    best, default = job.best, job.default
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
            ax.scatter(jitter, ys, s=12, color=_OTHER, alpha=0.6)
            ax.plot([j - 0.25, j + 0.25], [median(ys)] * 2, color="black", linewidth=2)
        for trial, colour, label in ((default, _DEFAULT, "default"), (best, _BEST, "best")):
            if trial is not None and name in trial.config:
                ax.scatter([pos[repr(trial.config[name])]], [job.value(trial.metrics)], s=70,
                           marker="*" if label == "best" else "D", color=colour, zorder=4, label=label)
        unit = f" ({knob.unit})" if knob is not None and knob.unit else ""
        ax.set_xticks(range(len(order)), [str(v) for v in order], fontsize=7,
                      rotation=45 if len(order) > 4 else 0)
        ax.set_xlabel(name + unit, fontsize=8)
        ax.set_ylabel(f"{job.objective.label} ({job.objective.unit})", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"job {job.job_id}: {job.objective.label} against each important knob "
                 "(bar: median of the trials with that value)", fontsize=10)
    return fig


def pareto(job: JobData) -> Figure | None:
    """The first two objectives of every feasible trial, the non-dominated front highlighted."""
    objectives = job.goal.objectives
    if len(objectives) < 2:
        return None
    items = []
    for t in job.completed:
        try:
            items.append((t, MultiScore.from_goal(job.goal, t.metrics)))
        except (MeasurementError, ValueError, ArithmeticError):
            continue
    front = pareto_front(items)
    o1, o2 = objectives[0], objectives[1]
    fig = _figure(job, 7, 5)
    ax = fig.add_subplot()

    def xy(trial: TrialData) -> tuple[float, float]:
        return o1.value(trial.metrics), o2.value(trial.metrics)

    pts = [xy(t) for t, s in items if s.feasible and all(math.isfinite(v) for v in xy(t))]
    if pts:
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, color=_OTHER, alpha=0.6,
                   label="feasible trial")
    fpts = sorted(xy(t) for t, _ in front if all(math.isfinite(v) for v in xy(t)))
    if fpts:
        ax.plot(*zip(*fpts, strict=True), color=_BEST, marker="o", linewidth=1.5,
                label=f"non-dominated front ({len(fpts)} trials)")
    default = job.default
    if default is not None:
        ax.scatter(*xy(default), s=80, marker="D", color=_DEFAULT, zorder=4, label="default")
    better = {"maximize": "higher is better", "minimize": "lower is better"}
    ax.set_xlabel(f"{o1.label} ({o1.unit}), {better[o1.direction]}")
    ax.set_ylabel(f"{o2.label} ({o2.unit}), {better[o2.direction]}")
    extra = f" (front over all {len(objectives)} objectives)" if len(objectives) > 2 else ""
    ax.set_title(f"job {job.job_id}: Pareto front{extra}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _stats(values: list[float]) -> tuple[float, float, float]:
    return (min(values), median(values), max(values)) if values else (math.nan,) * 3


def ofat_profiles(job: JobData, rnd: Round) -> Figure | None:
    """The 40 GbE paper's figure: min/median/max per profile, loss on a log axis below."""
    profiles = rnd.profiles
    if len(profiles) < 2:
        return None
    top_metric = job.objective
    show_loss_top = top_metric.metric == "loss_pct"
    width = max(8.0, 0.32 * len(profiles) + 2)
    fig = _figure(job, width, 7.2)
    ax_top, ax_loss = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    xs = list(range(len(profiles)))
    center_value = math.nan
    for x, prof in zip(xs, profiles, strict=True):
        trial = prof.trial
        colour = _BEST if prof.is_center else _DEFAULT
        if not trial.completed:
            ax_top.scatter([x], [0], marker="x", color=_BAD)
            continue
        if show_loss_top:
            vals = [r["throughput_gbps"] for r in trial.repeats if "throughput_gbps" in r] or \
                   [trial.metrics.get("throughput_gbps", math.nan)]
        else:
            vals = job.repeat_values(trial)
        lo, mid, hi = _stats(vals)
        if prof.is_center:
            center_value = mid
        ax_top.errorbar([x], [mid], yerr=[[mid - lo], [hi - mid]], fmt="o", color=colour, capsize=3,
                        markersize=5)
        losses = [r["loss_pct"] for r in trial.repeats if "loss_pct" in r] or \
                 ([trial.metrics["loss_pct"]] if "loss_pct" in trial.metrics else [])
        if losses:
            llo, lmid, lhi = (max(v, LOSS_FLOOR) for v in _stats(losses))
            ax_loss.errorbar([x], [lmid], yerr=[[lmid - llo], [lhi - lmid]], fmt="s", color=colour,
                             capsize=3, markersize=4)
    if math.isfinite(center_value):
        ax_top.axhline(center_value, color=_BEST, linestyle=":", linewidth=1)
    if show_loss_top:
        ax_top.set_ylabel("throughput (Gbit/s)")
    else:
        ax_top.set_ylabel(f"{top_metric.label} ({top_metric.unit})")
    ax_top.grid(axis="y", alpha=0.3)
    ax_loss.set_yscale("log")
    ax_loss.set_ylabel(f"loss (%), log; 0 drawn at {LOSS_FLOOR:g}")
    ax_loss.grid(axis="y", alpha=0.3, which="both")
    ax_loss.set_xticks(xs, [p.label for p in profiles], rotation=75, ha="right", fontsize=7)
    for tick, prof in zip(ax_loss.get_xticklabels(), profiles, strict=True):
        if prof.is_center:
            tick.set_color(_BEST)
            tick.set_fontweight("bold")
    ax_top.set_title(f"job {job.job_id}, round {rnd.index + 1}: one-factor changes of the center "
                     "(min / median / max over the repeats)", fontsize=10)
    return fig


__all__ = [
    "LOSS_FLOOR",
    "UNITS",
    "convergence",
    "default_vs_best",
    "effect_knobs",
    "fmt",
    "importance_bars",
    "knob_effects",
    "ofat_profiles",
    "pareto",
]
