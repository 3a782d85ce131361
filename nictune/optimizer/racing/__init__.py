"""Adaptive repeats (racing): spend measurements only where they can change the answer.

Three modules, each importing only the ones after it:

- :mod:`~nictune.optimizer.racing.policy`: the decisions (which configurations race, when the
  race stops, which configuration to recommend), :class:`RacingPolicy`;
- :mod:`~nictune.optimizer.racing.stats`: the statistics it decides on (Student t, pooled
  noise, confidence intervals, the chance that constraints hold), :class:`RaceStatistics`;
- :mod:`~nictune.optimizer.racing.display`: how the results read (an interval as text, a
  configuration's summary, the noise stored with a job).
"""

from nictune.optimizer.racing.policy import Decision, RacingPolicy
from nictune.optimizer.racing.stats import (
    OBJECTIVE,
    Interval,
    Noise,
    RaceStatistics,
    Samples,
    t_cdf,
    t_quantile,
)

__all__ = ["OBJECTIVE", "Decision", "Interval", "Noise", "RaceStatistics", "RacingPolicy", "Samples", "t_cdf",
           "t_quantile"]
