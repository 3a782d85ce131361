"""Scores, objectives, metric constraints and goals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nictune.errors import InvalidInputError, MeasurementError
from nictune.measure._base import METRICS
from nictune.optimizer import OBJECTIVES, Goal, MetricConstraint, Score, get_objective

METRICS_OK = {
    "throughput_gbps": 20.0,
    "packet_rate_mpps": 1.5,
    "loss_pct": 0.0,
    "retransmits": 3.0,
    "interrupts_per_s": 50_000.0,
    "interrupts_per_gb": 20_000.0,
    "cpu_rx_pct": 80.0,
    "cpu_tx_pct": 60.0,
}


# --------------------------------------------------------------------------- Score
def test_every_feasible_score_ranks_above_every_infeasible_one() -> None:
    feasible = Score(True, -1e9)
    infeasible = Score(False, 1e9, violation=1e-6)
    assert feasible > infeasible
    assert max([infeasible, feasible]) is feasible


def test_infeasible_scores_rank_by_smaller_violation() -> None:
    a, b = Score(False, 1.0, violation=0.5), Score(False, 100.0, violation=2.0)
    assert a > b
    assert sorted([b, a, Score.failed()]) == [Score.failed(), b, a]


def test_feasible_scores_rank_by_value() -> None:
    assert Score(True, 2.0) > Score(True, 1.0)
    assert Score(True, 2.0) == Score(True, 2.0)
    assert Score(True, 1.0) <= Score(True, 1.0)


def test_score_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        Score(True, math.nan)
    with pytest.raises(ValueError):
        Score(True, 1.0, violation=0.5)
    with pytest.raises(ValueError):
        Score(False, 1.0, violation=-1.0)


scores = st.builds(
    lambda feasible, value, violation: Score(feasible, value, 0.0 if feasible else violation),
    st.booleans(),
    st.floats(allow_nan=False),
    st.floats(min_value=0.0, allow_nan=False),
)


@given(a=scores, b=scores)
def test_score_order_is_total_and_consistent_with_equality(a: Score, b: Score) -> None:
    assert sum([a < b, a == b, a > b]) == 1
    if a.feasible and not b.feasible:
        assert a > b
    if not a.feasible and not b.feasible and a.violation < b.violation:
        assert a > b


# ----------------------------------------------------------------------- Objective
def test_objective_names_and_directions() -> None:
    assert list(OBJECTIVES) == ["throughput", "packet-rate", "interrupts", "cpu", "loss", "latency",
                                "latency-p50"]
    assert get_objective("throughput").direction == "maximize"
    assert get_objective("latency").metric == "latency_p99_us"
    assert get_objective("latency-p50").metric == "latency_p50_us"
    for name in ("interrupts", "cpu", "loss", "latency", "latency-p50"):
        assert get_objective(name).direction == "minimize"


def test_maximised_objective_keeps_sign_minimised_one_is_negated() -> None:
    tp, irq = get_objective("throughput"), get_objective("interrupts")
    assert tp.value(METRICS_OK) == 20.0 and tp.oriented(METRICS_OK) == 20.0
    assert irq.value(METRICS_OK) == 20_000.0 and irq.oriented(METRICS_OK) == -20_000.0
    fewer = dict(METRICS_OK, interrupts_per_gb=5_000.0)
    goal = Goal([irq])
    assert goal.score(fewer) > goal.score(METRICS_OK)


def test_cpu_objective_is_receiver_cpu_per_gbps() -> None:
    cpu = get_objective("cpu")
    assert cpu.value(METRICS_OK) == pytest.approx(80.0 / 20.0)
    assert cpu.oriented(METRICS_OK) == pytest.approx(-4.0)
    # Same CPU, twice the throughput: half the cost, a better score.
    faster = dict(METRICS_OK, throughput_gbps=40.0)
    assert Goal([cpu]).score(faster) > Goal([cpu]).score(METRICS_OK)
    stalled = dict(METRICS_OK, throughput_gbps=0.0)
    assert cpu.value(stalled) == math.inf
    assert Goal([cpu]).score(stalled).value == -math.inf


def test_unknown_objective_names_field_and_allowed() -> None:
    with pytest.raises(InvalidInputError) as info:
        get_objective("speed")
    assert info.value.field == "objective"
    assert info.value.allowed is not None
    for name in OBJECTIVES:
        assert name in info.value.allowed


def test_missing_metric_is_a_measurement_error() -> None:
    with pytest.raises(MeasurementError):
        get_objective("throughput").value({"loss_pct": 0.0})


# ---------------------------------------------------------------- MetricConstraint
@pytest.mark.parametrize(
    ("text", "metric", "op", "threshold"),
    [
        ("loss<=0.1", "loss_pct", "<=", 0.1),
        ("  throughput >= 35 ", "throughput_gbps", ">=", 35.0),
        ("cpu<150", "cpu_rx_pct", "<", 150.0),
        ("interrupts>1e3", "interrupts_per_gb", ">", 1000.0),
        ("packet_rate>=.5", "packet_rate_mpps", ">=", 0.5),
        ("retransmits<=-0", "retransmits", "<=", 0.0),
    ],
)
def test_constraint_parse(text: str, metric: str, op: str, threshold: float) -> None:
    c = MetricConstraint.parse(text)
    assert (c.metric, c.op, c.threshold) == (metric, op, threshold)


def test_every_metric_name_is_accepted() -> None:
    for name in METRICS:
        assert MetricConstraint.parse(f"{name}<=1").metric == name


@pytest.mark.parametrize(
    "text",
    ["loss<=abc", "foo<3", "loss<=0.1; rm -rf /", "", "loss==1", "loss<=inf", "loss<=nan",
     "loss<=1e999", "loss <= 0.1 0.2", "<=0.1", "loss"],
)
def test_constraint_parse_errors_name_field_and_allowed(text: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        MetricConstraint.parse(text)
    assert info.value.field == "constraint"
    allowed = info.value.allowed or ""
    assert "<=" in allowed and "loss_pct" in allowed and "loss" in allowed


def test_constraint_satisfied_and_relative_violation() -> None:
    loss = MetricConstraint.parse("loss<=0.1")
    assert loss.satisfied({"loss_pct": 0.1}) and loss.violation({"loss_pct": 0.1}) == 0.0
    assert not loss.satisfied({"loss_pct": 0.3})
    assert loss.violation({"loss_pct": 0.3}) == pytest.approx(2.0)
    tp = MetricConstraint.parse("throughput>=30")
    assert tp.violation({"throughput_gbps": 15.0}) == pytest.approx(0.5)
    strict = MetricConstraint.parse("loss<0.1")
    assert not strict.satisfied({"loss_pct": 0.1})
    assert strict.violation({"loss_pct": 0.1}) > 0
    zero = MetricConstraint.parse("retransmits<=0")
    assert zero.violation({"retransmits": 4.0}) == pytest.approx(4.0)
    assert loss.violation({"loss_pct": math.nan}) == math.inf


# --------------------------------------------------------------------------- Goal
def test_goal_score_feasible_and_infeasible() -> None:
    goal = Goal.from_names("throughput", ["loss<=0.1", "cpu<=100"])
    ok = goal.score(METRICS_OK)
    assert ok == Score(True, 20.0, 0.0)
    lossy = goal.score(dict(METRICS_OK, loss_pct=0.2, cpu_rx_pct=150.0))
    assert not lossy.feasible
    assert lossy.violation == pytest.approx(1.0 + 0.5)
    slow_but_clean = goal.score(dict(METRICS_OK, throughput_gbps=1.0))
    assert slow_but_clean > lossy


def test_goal_values_for_several_objectives() -> None:
    goal = Goal.from_names(["throughput", "cpu", "loss"])
    assert goal.values(METRICS_OK) == pytest.approx((20.0, -4.0, -0.0))
    assert goal.score(METRICS_OK).value == 20.0


def test_goal_needs_an_objective() -> None:
    with pytest.raises(InvalidInputError):
        Goal([])


def test_mean_and_spread_over_repeats() -> None:
    samples = [{"throughput_gbps": 10.0, "loss_pct": 0.0},
               {"throughput_gbps": 20.0, "loss_pct": 0.2},
               {"throughput_gbps": 30.0, "loss_pct": 0.1}]
    mean = Goal.mean_metrics(samples)
    assert mean == pytest.approx({"loss_pct": 0.1, "throughput_gbps": 20.0})
    spread = Goal.spread(samples)
    assert spread["throughput_gbps"] == pytest.approx({"min": 10.0, "max": 30.0, "stdev": 10.0})
    assert Goal.spread(samples[:1])["loss_pct"]["stdev"] == 0.0
