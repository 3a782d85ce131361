"""Racing's three modules: the statistics stand alone, the display only formats, and the
policy decides with the statistics it is given (issue 32)."""

from __future__ import annotations

import grimp
import pytest

from nictune.optimizer import Goal, RacingPolicy
from nictune.optimizer.racing import Interval, Noise, RaceStatistics, display

LOSS_GOAL = Goal.from_names(["throughput"], ["loss<=0.1"])
TRIALS = {
    "a": [{"throughput_gbps": 10.0, "loss_pct": 0.05}, {"throughput_gbps": 10.4, "loss_pct": 0.07}],
    "b": [{"throughput_gbps": 9.0, "loss_pct": 0.0}],
    "c": [{"throughput_gbps": 12.0, "loss_pct": 0.5}, {"throughput_gbps": 11.6, "loss_pct": 0.4}],
}


def test_the_modules_import_downwards_only() -> None:
    """policy -> stats -> display: the display knows no statistics, the statistics no policy."""
    graph = grimp.build_graph("nictune", cache_dir=None)
    inside = {name for name in graph.find_children("nictune.optimizer.racing")}
    imported = {m: graph.find_modules_directly_imported_by(m) & inside for m in inside}
    assert imported["nictune.optimizer.racing.display"] == set()
    assert imported["nictune.optimizer.racing.stats"] == {"nictune.optimizer.racing.display"}
    assert imported["nictune.optimizer.racing.policy"] == {"nictune.optimizer.racing.stats",
                                                           "nictune.optimizer.racing.display"}


def test_the_statistics_stand_alone_and_are_the_policys() -> None:
    policy = RacingPolicy(LOSS_GOAL, confidence=0.8, prior_cv=0.03, prior_dof=3.0)
    stats = RaceStatistics(LOSS_GOAL, confidence=0.8, prior_cv=0.03, prior_dof=3.0)
    assert policy.stats == stats  # the policy decides on these statistics, at its level and prior
    noise = stats.noise(TRIALS)
    assert noise["objective"].measured_dof == 2
    assert stats.feasibility(TRIALS["c"], noise) == "no"
    low, high = stats.difference(TRIALS["a"], TRIALS["b"], noise, 0.8)
    assert low < 10.2 - 9.0 < high


def test_a_different_prior_changes_the_statistics() -> None:
    """The policy's statistics follow its own fields (not the defaults)."""
    wide = RacingPolicy(LOSS_GOAL, prior_cv=0.2).stats.mean_interval(10.0, 1, Noise(0.2, 2.0, 0))
    narrow = RacingPolicy(LOSS_GOAL, prior_cv=0.01).stats.mean_interval(10.0, 1, Noise(0.01, 2.0, 0))
    assert wide.half_width > narrow.half_width > 0


def test_the_display_formats_what_it_is_given() -> None:
    assert display.interval_text(39.4812, 1.345, 3, 0.9) == "39.48 ± 1.3 (n=3, 90% CI)"
    assert str(Interval(39.4812, 38.1362, 40.8262, 3, 0.9)) == "39.48 ± 1.3 (n=3, 90% CI)"
    assert display.noise_report({"objective": Noise(0.03, 4.0, 2)}) == {
        "objective": {"cv": 0.03, "dof": 4.0, "measured_dof": 2.0}}


def test_the_summary_is_the_displays_text_of_the_statistics() -> None:
    policy = RacingPolicy(LOSS_GOAL)
    out = policy.summary(TRIALS, "a")
    shown = policy.stats.shown(policy.stats.objective_interval(TRIALS["a"], policy.stats.noise(TRIALS)))
    assert out["text"] == f"throughput: {shown} Gbit/s"
    assert list(out) == ["metrics", "objective", "interval", "text", "feasible", "score"]
    assert out["interval"] == shown.as_dict() and out["metrics"]["throughput_gbps"] == pytest.approx(10.2)
