"""Optimization engines (ask/tell) and the objectives they optimise.

Importing this package registers every engine in :data:`ENGINES`.
"""

from __future__ import annotations

from nictune.optimizer._base import ENGINES, Engine, Param, make_engine, register_engine
from nictune.optimizer.bayes import BayesEngine
from nictune.optimizer.ga import GeneticEngine
from nictune.optimizer.nsga2 import Nsga2Engine
from nictune.optimizer.objectives import (
    METRIC_ALIASES,
    OBJECTIVES,
    Goal,
    MetricConstraint,
    Objective,
    Score,
    get_objective,
)
from nictune.optimizer.ofat import OfatEngine
from nictune.optimizer.pareto import MultiScore, pareto_front
from nictune.optimizer.racing import RacingPolicy
from nictune.optimizer.random_search import RandomEngine

__all__ = [
    "ENGINES",
    "METRIC_ALIASES",
    "OBJECTIVES",
    "BayesEngine",
    "Engine",
    "GeneticEngine",
    "Goal",
    "MetricConstraint",
    "MultiScore",
    "Nsga2Engine",
    "Objective",
    "OfatEngine",
    "Param",
    "RacingPolicy",
    "RandomEngine",
    "Score",
    "get_objective",
    "make_engine",
    "pareto_front",
    "register_engine",
]
