"""How racing's results read: an interval as text, a configuration's summary, the stored noise.

Formatting only, no statistics: the numbers come from
:class:`~nictune.optimizer.racing.stats.RaceStatistics` (through the policy). This module is the
bottom of the package (``stats`` imports it for :meth:`Interval.__str__
<nictune.optimizer.racing.stats.Interval.__str__>`), so it knows the intervals and noise
estimates it formats only by the attributes it reads (:class:`ShownInterval`,
:class:`NoiseEstimate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from nictune.formatting import format_interval
from nictune.optimizer.objectives import Objective, Score


class ShownInterval(Protocol):
    """An interval as :func:`summary` reads it (:class:`~nictune.optimizer.racing.stats.Interval`)."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data: mean, low, high, n, confidence."""
        ...


class NoiseEstimate(Protocol):
    """A pooled noise estimate as :func:`noise_report` reads it
    (:class:`~nictune.optimizer.racing.stats.Noise`)."""

    @property
    def cv(self) -> float: ...

    @property
    def dof(self) -> float: ...

    @property
    def measured_dof(self) -> int: ...


def interval_text(mean: float, half_width: float, n: int, confidence: float) -> str:
    """A mean with its interval, the number of samples and the level: ``39.48 ± 1.3 (n=3, 90% CI)``."""
    return f"{format_interval(mean, half_width)} (n={n}, {confidence:.0%} CI)"


def summary(objective: Objective, metrics: dict[str, float], shown: ShownInterval,
            feasible: str, score: Score) -> dict[str, Any]:
    """Plain data for the output: mean metrics, the objective's interval, feasibility.

    Args:
        objective: the goal's (first) objective.
        metrics: the configuration's mean metrics.
        shown: the objective's interval in the objective's own sign.
        feasible: whether the constraints hold: ``yes``, ``no`` or ``maybe``.
        score: the score of the mean metrics.
    """
    return {
        "metrics": metrics,
        "objective": objective.name,
        "interval": shown.as_dict(),
        "text": f"{objective.label}: {shown} {objective.unit}".rstrip(),
        "feasible": feasible,
        "score": score.as_dict(),
    }


def noise_report(noise: Mapping[str, NoiseEstimate]) -> dict[str, dict[str, float]]:
    """The pooled noise estimates as stored with the job (``cv``, ``dof``, ``measured_dof``)."""
    return {name: {"cv": nz.cv, "dof": nz.dof, "measured_dof": float(nz.measured_dof)}
            for name, nz in noise.items()}
