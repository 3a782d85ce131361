"""Adaptive repeats (racing): spend measurements only where they can change the answer.

The package's modules: :mod:`~nictune.optimizer.racing.policy` decides (which configurations
race, when the race stops, which configuration to recommend).
"""

from nictune.optimizer.racing.policy import (
    OBJECTIVE,
    Decision,
    Interval,
    Noise,
    RacingPolicy,
    Samples,
    t_cdf,
    t_quantile,
)

__all__ = ["OBJECTIVE", "Decision", "Interval", "Noise", "RacingPolicy", "Samples", "t_cdf", "t_quantile"]
