"""Optimization engines (ask/tell) and the objectives they optimise.

:data:`ENGINES` names every engine; an engine's module (and NumPy or DEAP with it) is imported
the first time the engine is used (``make_engine``, ``ENGINES[name]``, or one of the engine
classes below), so reading results needs none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nictune.optimizer._base import BUILTIN_ENGINES, ENGINES, Engine, Param, make_engine, register_engine
from nictune.optimizer.objectives import (
    METRIC_ALIASES,
    OBJECTIVES,
    Goal,
    MetricConstraint,
    Objective,
    Score,
    get_objective,
)
from nictune.optimizer.racing import RacingPolicy

if TYPE_CHECKING:
    from nictune.optimizer.bayes import BayesEngine
    from nictune.optimizer.ga import GeneticEngine
    from nictune.optimizer.nsga2 import Nsga2Engine
    from nictune.optimizer.ofat import OfatEngine
    from nictune.optimizer.pareto import MultiScore, pareto_front
    from nictune.optimizer.random_search import RandomEngine

#: Names this package gives on first use, and the module each comes from.
_LAZY = {"BayesEngine": "nictune.optimizer.bayes", "GeneticEngine": "nictune.optimizer.ga",
         "Nsga2Engine": "nictune.optimizer.nsga2", "OfatEngine": "nictune.optimizer.ofat",
         "RandomEngine": "nictune.optimizer.random_search", "MultiScore": "nictune.optimizer.pareto",
         "pareto_front": "nictune.optimizer.pareto"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BUILTIN_ENGINES",
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
