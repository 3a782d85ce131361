"""The model of a host pair's receive path (a model, not hardware); the testbed that measures
it with noise is :class:`nictune.measure.testbeds.SimTestbed`."""

from nictune.measure.sim.model import Result, evaluate
from nictune.measure.sim.profiles import MODEL_VERSION, PROFILES, SimProfile

__all__ = ["MODEL_VERSION", "PROFILES", "Result", "SimProfile", "evaluate"]
