"""The acquisition's arithmetic: normal scores (the Gaussian copula), expected improvement, and
the expected gain in the objective's own units (the ``ei_stop`` rule of the ``bayes`` engine).
"""

from __future__ import annotations

import math

import numpy as np


def normal_scores(y: np.ndarray) -> np.ndarray:
    """Rank-based normal scores of ``y`` (ties share their average rank)."""
    from scipy.stats import norm, rankdata

    return np.asarray(norm.ppf((rankdata(y) - 0.5) / len(y)), dtype=float)


def norm_cdf(z: np.ndarray) -> np.ndarray:
    """The standard normal CDF, elementwise."""
    from scipy.special import ndtr

    return np.asarray(ndtr(z), dtype=float)


def norm_pdf(z: np.ndarray) -> np.ndarray:
    """The standard normal density, elementwise."""
    return np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def expected_improvement(mu: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """EI of a maximisation at predictions ``mu`` +- ``sd`` over ``best``."""
    z = (mu - best) / sd
    return (mu - best) * norm_cdf(z) + sd * norm_pdf(z)


#: The grid that integrates over a normal prediction (standard scores, +-8 sd): dense, because
#: the improvement has a kink at the incumbent (a Gauss-Hermite rule is off by 10 % in the tail).
_GRID_Z = np.linspace(-8.0, 8.0, 3201)
_GRID_W = np.exp(-0.5 * _GRID_Z**2)
_GRID_W = _GRID_W / _GRID_W.sum()


def value_map(scores: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The copula's map from normal scores back to the objective's values: the knots
    ``(score, mean value)`` of the told configurations, and the slopes used beyond the lowest
    and the highest (from the extreme knot to the one a quarter of the way in, so one odd
    value at the top does not set it)."""
    knots = np.unique(scores)
    means = np.array([values[scores == k].mean() for k in knots])
    if len(knots) < 2:
        return knots, means, 0.0, 0.0
    q = max(1, (len(knots) - 1) // 4)
    low = (means[q] - means[0]) / (knots[q] - knots[0])
    high = (means[-1] - means[-1 - q]) / (knots[-1] - knots[-1 - q])
    return knots, means, float(low), float(high)


def to_value(y: np.ndarray, vmap: tuple[np.ndarray, np.ndarray, float, float]) -> np.ndarray:
    """Normal scores ``y`` back in the objective's units, through :func:`value_map`'s map."""
    knots, means, low, high = vmap
    out = np.interp(y, knots, means)
    out = np.where(y < knots[0], means[0] + low * (y - knots[0]), out)
    return np.where(y > knots[-1], means[-1] + high * (y - knots[-1]), out)


def expected_gain(mu: float, sd: float, best: float,
                  vmap: tuple[np.ndarray, np.ndarray, float, float]) -> tuple[float, float]:
    """Expected improvement in the objective's units of a prediction ``mu`` +- ``sd`` (normal
    scores) over the incumbent ``best`` (a normal score), and the incumbent's value."""
    incumbent = float(to_value(np.array([best]), vmap)[0])
    gains = np.maximum(to_value(mu + sd * _GRID_Z, vmap) - incumbent, 0.0)
    return float(gains @ _GRID_W), incumbent
