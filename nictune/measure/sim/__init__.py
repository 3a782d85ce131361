"""The simulated testbed: a calibrated model of a host pair's receive path (a model, not hardware)."""

from nictune.measure.sim.model import Result, evaluate
from nictune.measure.sim.profiles import MODEL_VERSION, PROFILES, SimProfile
from nictune.measure.sim.testbed import DEFAULT_NOISE, SimTestbed

__all__ = ["DEFAULT_NOISE", "MODEL_VERSION", "PROFILES", "Result", "SimProfile", "SimTestbed", "evaluate"]
