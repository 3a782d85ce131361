"""Optimization engines (ask/tell) and the objectives they optimise.

Importing this package registers every engine in :data:`ENGINES`.
"""

from __future__ import annotations

from nictune.optimizer._base import ENGINES, Engine, Param, make_engine, register_engine
from nictune.optimizer.ga import GeneticEngine
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
from nictune.optimizer.random_search import RandomEngine

__all__ = [
    "ENGINES",
    "METRIC_ALIASES",
    "OBJECTIVES",
    "Engine",
    "GeneticEngine",
    "Goal",
    "MetricConstraint",
    "Objective",
    "OfatEngine",
    "Param",
    "RandomEngine",
    "Score",
    "get_objective",
    "make_engine",
    "register_engine",
]
