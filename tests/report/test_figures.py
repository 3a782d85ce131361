"""The report's figures, inspected as matplotlib Figures (no image parsing): axis scales and
labels, the recommendation and the default marked, no all-zero panel, Pareto objectives."""

from __future__ import annotations

import copy
import math

import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection

from nictune import metrics
from nictune.optimizer import Goal
from nictune.report import JobData, load_job
from nictune.report.axes import LOG_SPAN, axis_scale, objective_heading
from nictune.report.figures import convergence, default_vs_best, pareto, zero_metrics
from tests.report.conftest import Jobs


@pytest.fixture(scope="module")
def ga(jobs: Jobs) -> JobData:
    return load_job(jobs.engine, jobs.ga)


@pytest.fixture(scope="module")
def multi(jobs: Jobs) -> JobData:
    return load_job(jobs.engine, jobs.multi)


def labels(ax: Axes) -> list[str]:
    return ax.get_legend_handles_labels()[1]


def legend_texts(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None
    return [t.get_text() for t in legend.get_texts()]


def labelled(ax: Axes, prefix: str) -> list[PathCollection]:
    """The scatter artists of ``ax`` whose label starts with ``prefix``."""
    return [c for c in ax.collections if isinstance(c, PathCollection) and str(c.get_label()).startswith(prefix)]


def spread_out(job: JobData, metric: str, factor: float) -> JobData:
    """A copy of ``job`` whose worst trial has ``metric`` multiplied by ``factor``."""
    out = copy.deepcopy(job)
    worst = max(out.completed, key=lambda t: t.metrics[metric])
    worst.metrics[metric] *= factor
    return out


@pytest.mark.parametrize(("values", "scale"), [
    ([1.0, 50.0], "linear"),
    ([1.0, LOG_SPAN], "linear"),  # exactly 100x: not more than
    ([1.0, 101.0], "log"),
    ([3078.0, 715_000.0], "log"),  # the front: one trial at 715k interrupts/GB
    ([0.0, 1.0, 1000.0], "linear"),  # a zero cannot sit on a log axis
    ([-5.0, 1000.0], "linear"),
    ([2.0, math.nan, math.inf, 3.0], "linear"),
    ([5.0], "linear"),
])
def test_axis_scale_is_log_only_for_positive_data_spanning_more_than_100x(values: list[float], scale: str) -> None:
    assert axis_scale(values) == scale


def test_convergence_labels_the_objective_and_marks_the_recommendation_and_the_default(ga: JobData) -> None:
    fig = convergence(ga)
    assert fig is not None and len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_ylabel().startswith("throughput (Gbit/s), higher is better")
    assert ax.get_xlabel() == "trial number"
    best = ga.best
    assert best is not None
    star = labelled(ax, f"recommended (trial {best.number})")
    assert len(star) == 1 and star[0].get_offsets()[0][0] == best.number
    assert star[0].get_offsets()[0][1] == pytest.approx(ga.value(best.metrics))
    assert any(label.startswith("default (") for label in legend_texts(ax))
    # No constraint: a trial is a trial, not a "feasible trial".
    assert not any("feasible" in t or "constraint" in t for t in legend_texts(ax))
    values = [ga.value(t.metrics) for t in ga.completed]
    assert ax.get_yscale() == axis_scale(values)
    assert "throughput" in (fig.get_suptitle() or "")


def test_convergence_of_a_pareto_job_has_a_panel_per_objective(multi: JobData) -> None:
    fig = convergence(multi)
    assert fig is not None
    assert "one panel per objective" in fig.get_suptitle()
    assert [ax.get_ylabel().split(", log")[0] for ax in fig.axes] == \
        [objective_heading(o, better=True) for o in multi.goal.objectives]
    assert fig.axes[1].get_ylabel().startswith("receiver CPU per Gbit/s (% of a core per Gbit/s)")
    best = multi.best
    assert best is not None
    for ax, o in zip(fig.axes, multi.goal.objectives, strict=True):
        star = labelled(ax, "recommended")
        assert len(star) == 1 and star[0].get_offsets()[0][1] == pytest.approx(multi.value(best.metrics, o))


def test_convergence_turns_log_when_an_objective_spans_more_than_100x(multi: JobData) -> None:
    wide = spread_out(multi, "cpu_rx_pct", 1000.0)
    fig = convergence(wide)
    assert fig is not None
    assert fig.axes[1].get_yscale() == "log" and fig.axes[1].get_ylabel().endswith(", log scale")
    assert fig.axes[0].get_yscale() == "linear"  # throughput did not change


def test_pareto_plots_the_jobs_objectives_with_the_recommendation_marked(multi: JobData) -> None:
    fig = pareto(multi)
    assert fig is not None
    ax = fig.axes[0]
    o1, o2 = multi.goal.objectives
    assert ax.get_xlabel().split(", log")[0] == objective_heading(o1, better=True)
    assert ax.get_ylabel().split(", log")[0] == objective_heading(o2, better=True)
    assert "throughput" in ax.get_title() and "receiver CPU per Gbit/s" in ax.get_title()
    best = multi.best
    assert best is not None
    star = labelled(ax, f"recommended (trial {best.number})")
    assert len(star) == 1
    # The objective (CPU per Gbit/s), not the raw metric (CPU %).
    x, y = star[0].get_offsets()[0]
    assert (x, y) == pytest.approx((best.metrics["throughput_gbps"],
                                    best.metrics["cpu_rx_pct"] / best.metrics["throughput_gbps"]))
    texts = legend_texts(ax)
    assert any(t.startswith("Pareto front (") for t in texts)
    assert not any("feasible" in t for t in texts)
    assert ax.get_xscale() == axis_scale([multi.value(t.metrics, o1) for t in multi.completed])
    assert ax.get_yscale() == axis_scale([multi.value(t.metrics, o2) for t in multi.completed])


def test_pareto_turns_log_when_an_objective_spans_more_than_100x(multi: JobData) -> None:
    fig = pareto(spread_out(multi, "cpu_rx_pct", 1000.0))
    assert fig is not None
    assert fig.axes[0].get_yscale() == "log" and fig.axes[0].get_xscale() == "linear"


def test_pareto_legend_speaks_of_constraints_only_when_the_job_has_them(multi: JobData) -> None:
    constrained = copy.deepcopy(multi)
    constrained.goal = Goal.from_names(["throughput", "cpu"], ["throughput >= 20"])
    for t in constrained.completed:
        t.feasible = constrained.goal.score(t.metrics).feasible
    assert any(not t.feasible for t in constrained.completed)
    fig = pareto(constrained)
    assert fig is not None
    texts = legend_texts(fig.axes[0])
    assert "trial breaking a constraint" in texts and "trial meeting the constraints" in texts


def test_default_vs_best_titles_panels_with_headings_and_leaves_out_all_zero_metrics(ga: JobData) -> None:
    fig = default_vs_best(ga)
    assert fig is not None
    zeros = zero_metrics(ga)
    titles = [ax.get_title().replace("  (objective)", "") for ax in fig.axes]
    headings = {metrics.heading(m): m for m in metrics.DEFINITIONS}
    assert titles and all(t in headings for t in titles), titles
    shown = [headings[t] for t in titles]
    assert not set(shown) & set(zeros)
    best, default = ga.best, ga.baseline
    assert best is not None
    for ax, name in zip(fig.axes, shown, strict=True):
        assert ax.get_ylabel().split(", log")[0] == metrics.unit(name)
        bars = [c for c in ax.containers if str(c.get_label()).startswith("recommended")]
        assert len(bars) == 1
        # Not an all-zero panel: one of the two differs from 0.
        values = [t.metrics.get(name, 0) for t in (best, default) if t is not None]
        assert any(v != 0 for v in values), name
    assert "throughput (Gbit/s)  (objective)" in [ax.get_title() for ax in fig.axes]
    # Every metric both measured is either drawn or named as zero.
    both = set(best.metrics) | (set(default.metrics) if default is not None else set())
    assert set(shown) | set(zeros) == both
    # The drop counters carry their unit (e.g. ring drops (frames/run)).
    assert all(metrics.unit(m) for m in shown if m.endswith("_drops"))


def test_default_vs_best_scale_follows_the_one_rule(ga: JobData) -> None:
    wide = copy.deepcopy(ga)
    best = wide.best
    assert best is not None
    best.metrics["interrupts_per_s"] *= 1000
    best.spread["interrupts_per_s"] = {}
    best.repeats = [{**r, "interrupts_per_s": r["interrupts_per_s"] * 1000} for r in best.repeats]
    fig = default_vs_best(wide)
    assert fig is not None
    panel = next(ax for ax in fig.axes if ax.get_title().startswith(metrics.heading("interrupts_per_s")))
    assert panel.get_yscale() == "log"
    tput = next(ax for ax in fig.axes if ax.get_title().startswith(metrics.heading("throughput_gbps")))
    assert tput.get_yscale() == "linear"
