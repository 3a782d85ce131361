"""Pareto dominance, non-dominated sorting, crowding distance and MultiScore."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nictune.optimizer import Goal, MultiScore, Score
from nictune.optimizer.pareto import (
    TIE_FRACTION,
    constrained_dominates,
    crowding_distance,
    dominates,
    hypervolume_2d,
    non_dominated_sort,
    pareto_front,
    recommend_from_front,
    vector_of,
)


def test_dominates_needs_one_strictly_better_and_none_worse() -> None:
    assert dominates((2.0, 2.0), (1.0, 2.0))
    assert not dominates((2.0, 2.0), (2.0, 2.0))
    assert not dominates((3.0, 1.0), (1.0, 3.0))
    assert not dominates((1.0, 3.0), (3.0, 1.0))
    with pytest.raises(ValueError):
        dominates((1.0,), (1.0, 2.0))


def test_non_dominated_sort_builds_fronts_in_order() -> None:
    vectors = [(1.0, 5.0), (2.0, 2.0), (5.0, 1.0), (1.0, 1.0), (0.0, 0.0), (4.0, 4.0), (4.0, 4.0)]
    fronts = non_dominated_sort(vectors)
    assert fronts == [[0, 2, 5, 6], [1], [3], [4]]
    assert sorted(i for f in fronts for i in f) == list(range(len(vectors)))
    assert non_dominated_sort([]) == []
    with pytest.raises(ValueError):
        non_dominated_sort([(1.0, 2.0), (1.0,)])
    with pytest.raises(ValueError):  # NaN compares with nothing: no order to sort by
        non_dominated_sort([(1.0, math.nan), (2.0, 0.0)])


def test_crowding_distance_boundaries_are_infinite() -> None:
    d = crowding_distance([(0.0, 4.0), (1.0, 3.0), (3.0, 1.0), (4.0, 0.0)])
    assert math.isinf(d[0]) and math.isinf(d[3])
    # Point 1 has neighbours at x 0 and 3, y 4 and 1: (3/4) + (3/4).
    assert d[1] == pytest.approx(1.5)
    assert d[2] == pytest.approx((4 - 1) / 4 + (3 - 0) / 4)
    assert crowding_distance([]) == []
    assert crowding_distance([(1.0, 2.0)]) == [math.inf]


def test_pareto_front_keeps_feasible_non_dominated_items_only() -> None:
    items = [
        ("a", MultiScore(True, 10.0, 0.0, (10.0, -5.0))),
        ("b", MultiScore(True, 8.0, 0.0, (8.0, -1.0))),
        ("c", MultiScore(True, 7.0, 0.0, (7.0, -2.0))),   # dominated by b
        ("d", MultiScore(False, 50.0, 1.0, (50.0, 0.0))),  # infeasible: never on the front
        ("e", Score.failed()),
    ]
    front = [name for name, _ in pareto_front(items)]
    assert front == ["a", "b"]
    assert pareto_front([("x", Score(False, 1.0, 2.0))]) == []


def test_constrained_domination_follows_debs_rule() -> None:
    feasible = MultiScore(True, 1.0, 0.0, (1.0, 1.0))
    small = Score(False, 100.0, 0.5)
    large = Score(False, 100.0, 2.0)
    assert constrained_dominates(feasible, small)
    assert constrained_dominates(small, large)
    assert not constrained_dominates(large, small)
    assert not constrained_dominates(small, feasible)


def test_multiscore_ranks_like_its_score_and_carries_every_objective() -> None:
    goal = Goal.from_names(["throughput", "interrupts"], ["loss<=0.1"])
    metrics = {"throughput_gbps": 30.0, "interrupts_per_gb": 2000.0, "loss_pct": 0.0}
    score = MultiScore.from_goal(goal, metrics)
    assert score.values == (30.0, -2000.0)
    assert vector_of(score) == (30.0, -2000.0)
    assert vector_of(Score(True, 3.0)) == (3.0,)
    assert score == MultiScore(True, 30.0, 0.0, (30.0, -1.0))  # ranks by the first objective
    assert score > MultiScore(True, 29.0, 0.0, (29.0, 0.0))
    with pytest.raises(ValueError):
        MultiScore(True, 1.0, 0.0, (1.0, math.nan))


def test_hypervolume_2d() -> None:
    assert hypervolume_2d([(2.0, 1.0), (1.0, 2.0)], (0.0, 0.0)) == pytest.approx(3.0)
    assert hypervolume_2d([(2.0, 1.0), (1.0, 2.0), (1.0, 1.0)], (0.0, 0.0)) == pytest.approx(3.0)
    assert hypervolume_2d([(-1.0, 5.0)], (0.0, 0.0)) == 0.0


# ------------------------------------------------------------- the recommendation of a front
_value = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=2, max_value=3).flatmap(
    lambda k: st.lists(st.tuples(*[_value] * k), min_size=1, max_size=40)))
@pytest.mark.slow
def test_the_recommendation_is_a_front_member_no_measured_point_dominates(vectors: list[tuple[float, ...]]) -> None:
    items = [(i, MultiScore(True, v[0], 0.0, v)) for i, v in enumerate(vectors)]
    front = pareto_front(items)
    chosen = recommend_from_front(front)
    assert chosen is not None and chosen in {i for i, _ in front}
    assert not any(dominates(v, vectors[chosen]) for v in vectors)
    # The stated rule: within 1 % of the best first objective, then the best second, ...
    best_first = max(v[0] for v in vectors)
    assert vectors[chosen][0] >= best_first - TIE_FRACTION * abs(best_first)


def test_a_tie_on_the_first_objective_goes_to_the_better_second() -> None:
    """The job that recommended 39.60 Gbit/s at 7,067 interrupts/GB when its own front had 39.60 at 3,129."""
    items = [("a", MultiScore(True, 39.601, 0.0, (39.601, -7067.0))),
             ("b", MultiScore(True, 39.598, 0.0, (39.598, -3129.0))),
             ("c", MultiScore(True, 20.0, 0.0, (20.0, -900.0)))]
    assert recommend_from_front(pareto_front(items)) == "b"
    assert recommend_from_front([]) is None
