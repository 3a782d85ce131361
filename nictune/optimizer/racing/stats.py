"""The statistics of racing: Student t, pooled noise, confidence intervals, and the chance
that a configuration's constraints hold.

Pure numbers, no decisions: :class:`~nictune.optimizer.racing.policy.RacingPolicy` decides
with them, :mod:`~nictune.optimizer.racing.display` formats them.

Noise model: the testbed's relative noise (coefficient of variation) is assumed to be the
same for every configuration, so it is pooled over all configurations with two or more
samples (:meth:`RaceStatistics.noise`), shrunk towards ``prior_cv`` with ``prior_dof`` pseudo
degrees of freedom so that a single sample already has an honest interval. Intervals are
Student t intervals with the pooled degrees of freedom. The pooled estimate is what a job
stores as the noise level of its testbed.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nictune.errors import MeasurementError
from nictune.optimizer.objectives import Goal, MetricConstraint, Score
from nictune.optimizer.racing.display import interval_text

Samples = Sequence[Mapping[str, float]]
#: The name under which the goal's (oriented) objective appears in noise estimates.
OBJECTIVE = "objective"


# ------------------------------------------------------------------ Student t
def t_cdf(t: float, dof: float) -> float:
    """P(T <= t) for Student's t with ``dof`` degrees of freedom (SciPy's ``stdtr`` ufunc:
    :meth:`RacingPolicy.recommend <nictune.optimizer.racing.policy.RacingPolicy.recommend>`
    asks for it per configuration, and ``scipy.stats.t.cdf`` costs about 25x more per call)."""
    if dof <= 0:
        raise ValueError("degrees of freedom must be positive")
    from scipy.special import stdtr

    return float(stdtr(dof, t))


@functools.lru_cache(maxsize=512)
def t_quantile(confidence: float, dof: float) -> float:
    """The two-sided Student t critical value: P(|T| <= q) = ``confidence`` (SciPy's; cached,
    the ranking asks for the same few values thousands of times)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    from scipy.stats import t as student

    return float(student.ppf(0.5 + confidence / 2.0, dof))


# ------------------------------------------------------------------ estimates
@dataclass(frozen=True)
class Interval:
    """A mean with its two-sided confidence interval.

    Attributes:
        mean: the sample mean.
        low: lower bound of the interval.
        high: upper bound of the interval.
        n: number of samples.
        confidence: the interval's confidence level.
    """

    mean: float
    low: float
    high: float
    n: int
    confidence: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def __str__(self) -> str:
        return interval_text(self.mean, self.half_width, self.n, self.confidence)

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n,
                "confidence": self.confidence}


@dataclass(frozen=True)
class Noise:
    """The pooled relative noise of one metric.

    Attributes:
        cv: coefficient of variation (standard deviation / mean) of one sample.
        dof: degrees of freedom behind it (measured ones plus the prior's).
        measured_dof: degrees of freedom from repeats alone (0: the prior only).
    """

    cv: float
    dof: float
    measured_dof: int


@dataclass(frozen=True)
class RaceStatistics:
    """The estimates racing decides on, for one goal under one noise prior.

    Every method is pure; ``trials`` maps a configuration's key (e.g. its hash) to its
    samples (one metrics dict per measurement).

    Attributes:
        goal: the job's objectives and constraints (the first objective is raced).
        confidence: level of the intervals.
        prior_cv: relative noise assumed before repeats tell otherwise.
        prior_dof: weight of ``prior_cv``, in degrees of freedom.
    """

    goal: Goal
    confidence: float = 0.9
    prior_cv: float = 0.05
    prior_dof: float = 2.0

    # ----------------------------------------------------------------- noise
    def series(self, samples: Samples) -> dict[str, list[float]]:
        """Per-sample objective values and constraint metrics of one configuration."""
        out: dict[str, list[float]] = {OBJECTIVE: []}
        for s in samples:
            try:
                out[OBJECTIVE].append(self.goal.objective.oriented(s))
            except MeasurementError:  # a sample without the metric: no information
                continue
        for c in self.goal.constraints:
            out[c.metric] = [float(s[c.metric]) for s in samples if c.metric in s]
        return out

    def noise(self, trials: Mapping[str, Samples]) -> dict[str, Noise]:
        """Pooled relative noise of the objective and of every constrained metric."""
        sums: dict[str, float] = {}
        dofs: dict[str, int] = {}
        for samples in trials.values():
            if len(samples) < 2:
                continue
            for name, xs in self.series(samples).items():
                finite = [x for x in xs if math.isfinite(x)]
                if len(finite) < 2:
                    continue
                mean = statistics.fmean(finite)
                if not mean * mean > 0:  # 0, or so small that its square underflows
                    continue
                rel = statistics.variance(finite) / (mean * mean)
                sums[name] = sums.get(name, 0.0) + rel * (len(finite) - 1)
                dofs[name] = dofs.get(name, 0) + len(finite) - 1
        return {name: self.pooled_noise(sums.get(name, 0.0), dofs.get(name, 0))
                for name in [OBJECTIVE, *(c.metric for c in self.goal.constraints)]}

    def pooled_noise(self, weighted: float, dof: int) -> Noise:
        """The noise from ``weighted``, the sum over configurations of (relative variance x
        its degrees of freedom), and ``dof``, their sum, shrunk towards the prior."""
        total = self.prior_dof + dof
        var = (self.prior_dof * self.prior_cv**2 + weighted) / total
        return Noise(math.sqrt(var), total, dof)

    # -------------------------------------------------------------- intervals
    def interval(self, xs: Sequence[float], noise: Noise) -> Interval:
        """Mean of ``xs`` with its t interval under the pooled relative ``noise``."""
        finite = [x for x in xs if math.isfinite(x)]
        if not finite:
            return Interval(-math.inf, -math.inf, -math.inf, 0, self.confidence)
        return self.mean_interval(statistics.fmean(finite), len(finite), noise)

    def mean_interval(self, mean: float, n: int, noise: Noise) -> Interval:
        """The t interval of a mean of ``n`` samples under the pooled relative ``noise``."""
        if not math.isfinite(mean) or n < 1:
            return Interval(mean, mean, mean, max(n, 0), self.confidence)
        half = self.half_width(mean, n, noise)
        return Interval(mean, mean - half, mean + half, n, self.confidence)

    def half_width(self, mean: float, n: int, noise: Noise) -> float:
        """Half the width of the t interval of a (finite) mean of ``n >= 1`` samples."""
        return t_quantile(self.confidence, noise.dof) * noise.cv * abs(mean) / math.sqrt(n)

    def objective_interval(self, samples: Samples, noise: Mapping[str, Noise]) -> Interval:
        """The interval of the (oriented, bigger is better) objective of one configuration."""
        return self.interval(self.series(samples)[OBJECTIVE], noise[OBJECTIVE])

    def difference(self, mine: Samples, theirs: Samples, noise: Mapping[str, Noise],
                   confidence: float) -> tuple[float, float]:
        """Interval of (``mine``'s mean - ``theirs``' mean) of the objective at ``confidence``."""
        a = self.objective_interval(mine, noise)
        b = self.objective_interval(theirs, noise)
        if not (math.isfinite(a.mean) and math.isfinite(b.mean)):
            return (-math.inf, -math.inf) if not math.isfinite(a.mean) else (math.inf, math.inf)
        cv = noise[OBJECTIVE].cv
        se = math.sqrt((cv * a.mean) ** 2 / a.n + (cv * b.mean) ** 2 / b.n)
        q = t_quantile(confidence, noise[OBJECTIVE].dof)
        diff = a.mean - b.mean
        return diff - q * se, diff + q * se

    def shown(self, iv: Interval) -> Interval:
        """An interval of the oriented objective (bigger is better) in the objective's own sign."""
        sign = 1.0 if self.goal.objective.direction == "maximize" else -1.0
        low, high = sorted((sign * iv.low, sign * iv.high))
        return Interval(sign * iv.mean, low, high, iv.n, iv.confidence)

    # ------------------------------------------------------- scores, constraints
    @functools.cached_property
    def _used(self) -> tuple[str, ...]:
        """The metrics the goal's score reads (the rest need no mean)."""
        o = self.goal.objective
        names = [o.metric, *([o.per] if o.per else []), *(c.metric for c in self.goal.constraints)]
        return tuple(dict.fromkeys(names))

    def score(self, samples: Samples) -> Score:
        """The score of the configuration's mean metrics (what the engine is told)."""
        if not samples:
            return Score.failed()
        means = {}
        for name in self._used:  # the mean of only what the score reads: recommend() is hot
            xs = [float(s[name]) for s in samples if name in s]
            if xs:
                means[name] = math.fsum(xs) / len(xs)
        return self.goal.score(means)

    def feasibility(self, samples: Samples, noise: Mapping[str, Noise]) -> Literal["yes", "no", "maybe"]:
        """Whether every constraint holds: surely (``yes``), surely not (``no``) or ``maybe``."""
        verdict: Literal["yes", "no", "maybe"] = "yes"
        series = self.series(samples)
        for c in self.goal.constraints:
            iv = self.interval(series[c.metric], noise[c.metric])
            if not math.isfinite(iv.mean):
                return "no"
            low_ok, high_ok = _holds(c, iv.low), _holds(c, iv.high)
            if not low_ok and not high_ok:
                return "no"
            if not (low_ok and high_ok):
                verdict = "maybe"
        return verdict

    def feasible_probability(self, samples: Samples, noise: Mapping[str, Noise]) -> float:
        """The probability that every constraint holds for the configuration's true mean: the
        product over constraints of the Student t probability that the mean lies on the
        constraint's side of its bound, under the pooled relative noise (1 or 0 for a metric
        measured without spread, e.g. no loss in any run)."""
        if not self.goal.constraints:
            return 1.0
        p = 1.0
        series = self.series(samples)
        for c in self.goal.constraints:
            xs = [x for x in series[c.metric] if math.isfinite(x)]
            if not xs:
                return 0.0
            mean = statistics.fmean(xs)
            se = noise[c.metric].cv * abs(mean) / math.sqrt(len(xs))
            if se <= 0.0:
                p *= 1.0 if _holds(c, mean) else 0.0
                continue
            margin = (c.threshold - mean) if c.op in ("<=", "<") else (mean - c.threshold)
            p *= t_cdf(margin / se, noise[c.metric].dof)
        return p


def _holds(c: MetricConstraint, x: float) -> bool:
    return c.satisfied({c.metric: x})
