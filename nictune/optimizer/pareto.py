"""Pareto dominance, non-dominated sorting and front extraction (pure functions).

Every objective vector here is "bigger is better" (as :meth:`Goal.values` returns them:
minimised objectives are negated). Constraints follow Deb's constrained domination: a
feasible point dominates every infeasible one, and of two infeasible points the one with
the smaller violation dominates.

:class:`MultiScore` is a :class:`~nictune.optimizer.objectives.Score` that also carries the
vector of every objective, so a multi-objective engine (``nsga2``) learns all of them
through the ordinary ``tell(config, score)``; single-objective engines just see a Score.

Sorting into fronts and crowding distances are DEAP's (through
:mod:`nictune.optimizer.deap_adapter`, the one module that imports DEAP).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from nictune.optimizer.deap_adapter import crowding_distances, nondominated_fronts
from nictune.optimizer.objectives import Goal, Score

Vector = tuple[float, ...]
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class MultiScore(Score):
    """A score with the values of every objective of the goal (``values[0] == value``).

    It ranks, compares and hashes like the plain :class:`Score` it extends (``values`` is
    left out), so engines that know nothing of it keep their tie rules.

    Attributes:
        values: each objective turned into "maximise", in the goal's order.
    """

    values: Vector = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if any(math.isnan(v) for v in self.values):
            raise ValueError("objective values cannot be NaN")

    @classmethod
    def from_goal(cls, goal: Goal, metrics_mean: Mapping[str, float]) -> MultiScore:
        """The score of a trial's mean metrics under ``goal``, with every objective's value."""
        base = goal.score(metrics_mean)
        return cls(base.feasible, base.value, base.violation, goal.values(metrics_mean))


def vector_of(score: Score) -> Vector:
    """The objective vector of ``score`` (a one-element vector for a plain :class:`Score`)."""
    if isinstance(score, MultiScore) and score.values:
        return tuple(score.values)
    return (score.value,)


def dominates(a: Vector, b: Vector) -> bool:
    """``a`` is at least as good as ``b`` in every objective and better in one (maximising)."""
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths: {len(a)} and {len(b)}")
    better = False
    for x, y in zip(a, b, strict=True):
        if x < y:
            return False
        if x > y:
            better = True
    return better


def constrained_dominates(a: Score, b: Score) -> bool:
    """Deb's constrained domination between two scores (see the module docstring)."""
    if a.feasible != b.feasible:
        return a.feasible
    if not a.feasible:
        return a.violation < b.violation
    return dominates(vector_of(a), vector_of(b))


def non_dominated_sort(vectors: Sequence[Vector]) -> list[list[int]]:
    """Indices of ``vectors`` by front: front 0 is non-dominated, front 1 is non-dominated
    once front 0 is removed, and so on. Inside a front, indices keep their input order.
    Equal vectors share a front. (DEAP's fast non-dominated sort.)
    """
    return nondominated_fronts(vectors)


def pareto_front(items: Sequence[tuple[T, Score]]) -> list[tuple[T, Score]]:
    """The non-dominated feasible items (in input order); ``[]`` when none is feasible.

    Failed trials (``-inf`` values) never belong to a front. Of several items with the same
    objective vector, all are kept.
    """
    feasible = [(item, s) for item, s in items
                if s.feasible and all(math.isfinite(v) for v in vector_of(s))]
    if not feasible:
        return []
    first = nondominated_fronts([vector_of(s) for _, s in feasible], first_front_only=True)[0]
    return [feasible[i] for i in first]


#: Front members whose objective is within this fraction of the front's best on it count as
#: tied on it (run-to-run noise is a few percent): the next objective decides between them.
TIE_FRACTION = 0.01


def recommend_from_front(front: Sequence[tuple[T, Score]], tie: float = TIE_FRACTION) -> T | None:
    """The recommended member of a Pareto front: the best on the first objective, of those
    within ``tie`` of it the best on the second, and so on; the last objective decides
    outright (earlier members first on an exact tie). Being a front member, it is never
    dominated by another measured configuration. ``None`` for an empty front.
    """
    if not front:
        return None
    candidates = list(front)
    width = len(vector_of(candidates[0][1]))
    for k in range(width):
        best = max(vector_of(s)[k] for _, s in candidates)
        if k == width - 1:
            return next(item for item, s in candidates if vector_of(s)[k] == best)
        margin = tie * abs(best)
        candidates = [(item, s) for item, s in candidates if vector_of(s)[k] >= best - margin]
    return candidates[0][0]  # pragma: no cover - the loop returns on the last objective


def crowding_distance(vectors: Sequence[Vector]) -> list[float]:
    """NSGA-II crowding distance of each vector inside one front (boundary points: ``inf``;
    DEAP's, summed over the objectives)."""
    return crowding_distances(vectors)


def hypervolume_2d(vectors: Sequence[Vector], reference: Vector) -> float:
    """Area dominated by two-objective ``vectors`` (maximising) and bounded by ``reference``.

    Points that do not dominate the reference point add nothing.
    """
    pts = sorted({(x, y) for x, y in vectors if x > reference[0] and y > reference[1]},
                 key=lambda p: (-p[0], -p[1]))
    area, best_y = 0.0, reference[1]
    for x, y in pts:
        if y > best_y:
            area += (x - reference[0]) * (y - best_y)
            best_y = y
    return area
