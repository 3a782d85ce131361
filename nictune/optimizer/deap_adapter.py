"""The one module that imports DEAP.

``deap.creator.create`` writes classes into the ``deap.creator`` module's globals, so they
are created here once (guarded, no re-creation warning on re-import). DEAP's selection
operators draw from the global :mod:`random` module; engines must draw only from their own
seeded generator, so :func:`select_tournament` runs DEAP's ``selTournament`` with the
engine's generator in place of the module's ``random`` (under a lock, restored after).
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deap import base, creator, tools
from deap.tools import selection as _selection

from nictune.optimizer.objectives import Score
from nictune.search_spaces import Configuration, Value

_FITNESS = "NictuneFitness"
_INDIVIDUAL = "NictuneIndividual"

if not hasattr(creator, _FITNESS):
    # Two weights: feasibility first, then the value (or minus the violation).
    creator.create(_FITNESS, base.Fitness, weights=(1.0, 1.0))
if not hasattr(creator, _INDIVIDUAL):
    creator.create(_INDIVIDUAL, dict, fitness=getattr(creator, _FITNESS))

_SELECTION_LOCK = threading.Lock()

#: An individual: a dict knob -> value with a DEAP ``fitness`` attribute.
Individual = Any


@dataclass
class Member:
    """An individual of a population: its genome and the configuration it stands for."""

    genome: dict[str, Value]
    config: Configuration


def make_individual(genome: Mapping[str, Value]) -> Individual:
    """A DEAP individual holding a copy of ``genome`` (no fitness yet)."""
    return getattr(creator, _INDIVIDUAL)(genome)


def fitness_values(score: Score) -> tuple[float, float]:
    """The DEAP fitness of a score; tuple order equals :class:`Score` order."""
    if score.feasible:
        return (1.0, score.value)
    return (0.0, -score.violation)


def set_score(individual: Individual, score: Score) -> None:
    """Give ``individual`` the fitness of ``score``."""
    individual.fitness.values = fitness_values(score)


def select_tournament(
    individuals: Sequence[Individual], k: int, tournsize: int, rng: random.Random
) -> list[Individual]:
    """``k`` winners of ``tournsize``-tournaments (DEAP ``selTournament``), drawn with ``rng``."""
    with _SELECTION_LOCK:
        saved = _selection.random
        _selection.random = rng
        try:
            chosen: list[Individual] = tools.selTournament(list(individuals), k, tournsize)
        finally:
            _selection.random = saved
    return chosen


def select_best(individuals: Sequence[Individual], k: int) -> list[Individual]:
    """The ``k`` fittest individuals (DEAP ``selBest``; stable on ties)."""
    best: list[Individual] = tools.selBest(list(individuals), k)
    return best


# ---------------------------------------------------------------- NSGA-II (multi-objective)
def _mo_classes(n_objectives: int) -> tuple[Any, Any]:
    """The fitness and individual classes for ``n_objectives`` maximised objectives."""
    fitness, individual = f"NictuneMOFitness{n_objectives}", f"NictuneMOIndividual{n_objectives}"
    with _SELECTION_LOCK:
        if not hasattr(creator, fitness):
            creator.create(fitness, base.Fitness, weights=(1.0,) * n_objectives)
        if not hasattr(creator, individual):
            creator.create(individual, dict, fitness=getattr(creator, fitness))
    return getattr(creator, fitness), getattr(creator, individual)


def make_mo_individual(genome: Mapping[str, Value], values: Sequence[float]) -> Individual:
    """A DEAP individual for NSGA-II with ``values`` (all maximised) as its fitness."""
    _, cls = _mo_classes(len(values))
    ind = cls(genome)
    ind.fitness.values = tuple(float(v) for v in values)
    return ind


def select_nsga2(individuals: Sequence[Individual], k: int) -> list[Individual]:
    """The ``k`` survivors of NSGA-II's environmental selection (DEAP ``selNSGA2``):
    non-dominated fronts in order, the last one cut by crowding distance. Deterministic."""
    chosen: list[Individual] = tools.selNSGA2(list(individuals), k)
    return chosen


def select_tournament_dcd(individuals: Sequence[Individual], k: int, rng: random.Random) -> list[Individual]:
    """``k`` parents by binary tournaments on dominance, then crowding distance (DEAP
    ``selTournamentDCD``; the individuals must have been through :func:`select_nsga2`),
    drawn with ``rng``. ``k`` is rounded up to a multiple of 4 and capped at the population."""
    from deap.tools import emo as _emo

    pool = list(individuals)
    size = len(pool) - len(pool) % 4
    if size < 4:
        return [rng.choice(pool) for _ in range(k)] if pool else []
    want = min(size, k + (-k) % 4)
    with _SELECTION_LOCK:
        saved = _emo.random
        _emo.random = rng
        try:
            chosen: list[Individual] = tools.selTournamentDCD(pool[:size], want)
        finally:
            _emo.random = saved
    return chosen[:k]


# ---------------------------------------------------------------- fronts of plain vectors
class _Point:
    """A bare DEAP individual for sorting objective vectors: its fitness and input position."""

    __slots__ = ("fitness", "index")

    def __init__(self, fitness: Any, index: int) -> None:
        self.fitness = fitness
        self.index = index


def _points(vectors: Sequence[Sequence[float]]) -> list[_Point]:
    width = len(vectors[0])
    if any(len(v) != width for v in vectors):
        raise ValueError(f"vectors of different lengths: {sorted({len(v) for v in vectors})}")
    if any(math.isnan(x) for v in vectors for x in v):
        raise ValueError("objective values cannot be NaN")
    fitness_cls, _ = _mo_classes(width)
    points = []
    for i, v in enumerate(vectors):
        fitness = fitness_cls()
        fitness.values = tuple(float(x) for x in v)
        points.append(_Point(fitness, i))
    return points


def nondominated_fronts(vectors: Sequence[Sequence[float]], first_front_only: bool = False) -> list[list[int]]:
    """Indices of ``vectors`` (every objective maximised) by non-dominated front, each front
    in input order (DEAP ``sortNondominated``: equal vectors share a front)."""
    if not vectors:
        return []
    points = _points(vectors)
    fronts = tools.sortNondominated(points, len(points), first_front_only=first_front_only)
    return [sorted(p.index for p in front) for front in fronts]


def crowding_distances(vectors: Sequence[Sequence[float]]) -> list[float]:
    """NSGA-II crowding distance of each vector inside one front, the sum over objectives of
    the neighbours' normalised gap (DEAP ``assignCrowdingDist``, which divides that sum by the
    number of objectives; undone here); boundary points get ``inf``."""
    if not vectors:
        return []
    points = _points(vectors)
    tools.emo.assignCrowdingDist(points)
    width = len(vectors[0])
    return [float(p.fitness.crowding_dist) * width for p in points]
