"""What an optimization job maximises: scores, objectives, metric constraints and goals.

A testbed reports metrics (:data:`nictune.metrics.METRICS`); a :class:`Goal` turns the
mean metrics of a trial into a :class:`Score`, the only thing engines ever see. Scores are
always "bigger is better": a minimised objective is negated before it becomes a score.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from nictune.errors import InvalidInputError, MeasurementError, UnknownNameError
from nictune.metrics import METRICS

Direction = Literal["maximize", "minimize"]

#: Violations of a broken strict constraint (``x < 5`` with ``x == 5``) are at least this.
MIN_VIOLATION = 1e-9


@functools.total_ordering
@dataclass(frozen=True)
class Score:
    """The result of one trial as an engine sees it. Bigger is better.

    Every feasible score ranks above every infeasible one; feasible scores rank by
    ``value``, infeasible ones by smaller ``violation`` (then by ``value``).

    Attributes:
        feasible: every metric constraint of the goal holds.
        value: the objective turned into "maximise" (a minimised metric is negated).
        violation: sum of the normalised constraint violations; 0 when feasible.
    """

    feasible: bool
    value: float
    violation: float = 0.0

    def __post_init__(self) -> None:
        if math.isnan(self.value) or math.isnan(self.violation):
            raise ValueError("a score cannot be NaN")
        if self.violation < 0:
            raise ValueError(f"violation must be >= 0, got {self.violation}")
        if self.feasible and self.violation != 0:
            raise ValueError("a feasible score has no violation")

    @classmethod
    def failed(cls) -> Score:
        """The score of a trial that produced no usable measurement: below everything else."""
        return cls(feasible=False, value=-math.inf, violation=math.inf)

    def _key(self) -> tuple[bool, float, float]:
        if self.feasible:
            return (True, self.value, 0.0)
        return (False, -self.violation, self.value)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Score):
            return NotImplemented
        return self._key() < other._key()

    def as_dict(self) -> dict[str, Any]:
        """Plain data (``value``/``violation`` may be infinite)."""
        return {"feasible": self.feasible, "value": self.value, "violation": self.violation}


def _metric(metrics: Mapping[str, float], name: str) -> float:
    try:
        return float(metrics[name])
    except KeyError:
        raise MeasurementError(f"metric {name!r} is missing from the measurement") from None


@dataclass(frozen=True)
class Objective:
    """A named quantity to maximise or minimise, computed from a trial's metrics.

    Attributes:
        name: how users name it (``throughput``, ``cpu`` ...).
        metric: the metric it reads.
        direction: ``maximize`` or ``minimize``.
        label: human-readable name.
        unit: unit of :meth:`value`.
        per: when set, the objective is ``metric / per`` (receiver CPU per Gbit/s).
    """

    name: str
    metric: str
    direction: Direction
    label: str
    unit: str
    per: str | None = None

    def value(self, metrics: Mapping[str, float]) -> float:
        """The objective in natural units, for display (``inf`` when ``per`` is 0).

        Raises:
            MeasurementError: a metric it needs is missing.
        """
        top = _metric(metrics, self.metric)
        if self.per is None:
            return top
        bottom = _metric(metrics, self.per)
        if bottom <= 0:
            # Nothing delivered: any CPU spent on it is infinitely expensive.
            return math.inf
        return top / bottom

    def oriented(self, metrics: Mapping[str, float]) -> float:
        """The objective turned into "maximise" (negated when minimised); NaN becomes -inf."""
        v = self.value(metrics)
        if math.isnan(v):
            return -math.inf
        return v if self.direction == "maximize" else -v

    def describe(self) -> dict[str, Any]:
        """Plain data for the API and reports."""
        return {"name": self.name, "metric": self.metric, "per": self.per,
                "direction": self.direction, "label": self.label, "unit": self.unit}


#: The objectives users can name, by name.
OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("throughput", "throughput_gbps", "maximize", "throughput", "Gbit/s"),
        Objective("packet-rate", "packet_rate_mpps", "maximize", "packet rate", "Mpps"),
        Objective("interrupts", "interrupts_per_gb", "minimize", "interrupts per GB",
                  "interrupts/GB"),
        Objective("cpu", "cpu_rx_pct", "minimize", "receiver CPU per Gbit/s",
                  "% of a core per Gbit/s", per="throughput_gbps"),
        Objective("loss", "loss_pct", "minimize", "loss", "%"),
        Objective("latency", "latency_p99_us", "minimize", "p99 round-trip latency", "µs"),
        Objective("latency-p50", "latency_p50_us", "minimize", "median round-trip latency", "µs"),
    )
}


def get_objective(name: str) -> Objective:
    """The objective called ``name``.

    Raises:
        InvalidInputError: (an :class:`~nictune.errors.UnknownNameError`) with field
            ``objective`` and the allowed names.
    """
    try:
        return OBJECTIVES[name]
    except (KeyError, TypeError):
        raise UnknownNameError("objective", str(name), list(OBJECTIVES)) from None


#: Short metric names accepted in constraints, besides every name in METRICS.
METRIC_ALIASES: dict[str, str] = {
    "loss": "loss_pct",
    "throughput": "throughput_gbps",
    "cpu": "cpu_rx_pct",
    "interrupts": "interrupts_per_gb",
    "packet_rate": "packet_rate_mpps",
    "latency": "latency_p99_us",
}
_OPS = ("<=", ">=", "<", ">")
_CONSTRAINT = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op><=|>=|<|>)\s*"
    r"(?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)


def _constraint_allowed() -> str:
    names = [*METRIC_ALIASES, *METRICS]
    return f"METRIC OP NUMBER with OP one of {' '.join(_OPS)}; METRIC one of {', '.join(names)}"


@dataclass(frozen=True)
class MetricConstraint:
    """A bound on one measured metric, such as ``loss_pct <= 0.1``.

    Attributes:
        metric: the metric name (aliases resolved).
        op: ``<=``, ``>=``, ``<`` or ``>``.
        threshold: the bound.
    """

    metric: str
    op: str
    threshold: float
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str) -> MetricConstraint:
        """Parse ``METRIC OP NUMBER`` (``loss<=0.1``, ``throughput >= 35``).

        Raises:
            InvalidInputError: with field ``constraint`` and the allowed form and metrics.
        """
        shown = repr(text[:80]) if isinstance(text, str) else repr(text)
        match = _CONSTRAINT.match(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidInputError(
                f"constraint {shown}: expected METRIC OP NUMBER such as 'loss<=0.1'",
                field="constraint", allowed=_constraint_allowed(),
            )
        name = match["metric"]
        metric = METRIC_ALIASES.get(name, name)
        if metric not in METRICS:
            raise InvalidInputError(
                f"constraint {shown}: unknown metric {name!r}",
                field="constraint", allowed=_constraint_allowed(),
            )
        threshold = float(match["number"])
        if not math.isfinite(threshold):
            raise InvalidInputError(
                f"constraint {shown}: the bound must be a finite number",
                field="constraint", allowed=_constraint_allowed(),
            )
        return cls(metric, match["op"], threshold, text.strip())

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.threshold:g}"

    def satisfied(self, metrics: Mapping[str, float]) -> bool:
        """Whether the measured metric respects the bound (NaN never does).

        Raises:
            MeasurementError: the metric is missing.
        """
        x = _metric(metrics, self.metric)
        t = self.threshold
        return {"<=": x <= t, ">=": x >= t, "<": x < t, ">": x > t}[self.op]

    def violation(self, metrics: Mapping[str, float]) -> float:
        """How far the metric is beyond the bound, relative to the bound (0 when satisfied).

        The excess is divided by ``|threshold|`` (by 1 when the threshold is 0) so that
        constraints on metrics of different units can be summed.
        """
        if self.satisfied(metrics):
            return 0.0
        x = _metric(metrics, self.metric)
        if math.isnan(x):
            return math.inf
        excess = x - self.threshold if self.op in ("<=", "<") else self.threshold - x
        scale = abs(self.threshold) or 1.0
        return max(excess / scale, MIN_VIOLATION)


@dataclass
class Goal:
    """Objectives (the first one drives :meth:`score`) and the constraints a trial must meet.

    Attributes:
        objectives: at least one objective; the others are exposed by :meth:`values`.
        constraints: bounds on metrics; a trial breaking one is infeasible.
    """

    objectives: list[Objective]
    constraints: list[MetricConstraint] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.objectives:
            raise InvalidInputError("a goal needs at least one objective", field="objective",
                                    allowed=", ".join(OBJECTIVES))

    @classmethod
    def from_names(cls, objectives: str | Sequence[str],
                   constraints: Sequence[str] = ()) -> Goal:
        """A goal from user input: objective names and constraint strings.

        Raises:
            InvalidInputError: an unknown objective or a malformed constraint.
        """
        names = [objectives] if isinstance(objectives, str) else list(objectives)
        return cls([get_objective(n) for n in names],
                   [MetricConstraint.parse(c) for c in constraints])

    def metrics(self) -> set[str]:
        """Every metric the goal reads (objectives, their ``per`` and constraints)."""
        names = {o.metric for o in self.objectives} | {o.per for o in self.objectives if o.per}
        return names | {c.metric for c in self.constraints}

    @property
    def objective(self) -> Objective:
        """The objective that :meth:`score` uses."""
        return self.objectives[0]

    def score(self, metrics_mean: Mapping[str, float]) -> Score:
        """The score of a trial from its mean metrics.

        Raises:
            MeasurementError: a metric the goal needs is missing.
        """
        violation = math.fsum(c.violation(metrics_mean) for c in self.constraints)
        feasible = all(c.satisfied(metrics_mean) for c in self.constraints)
        return Score(feasible, self.objectives[0].oriented(metrics_mean),
                     0.0 if feasible else violation)

    def values(self, metrics: Mapping[str, float]) -> tuple[float, ...]:
        """Every objective turned into "maximise", in order (for Pareto fronts)."""
        return tuple(o.oriented(metrics) for o in self.objectives)

    @staticmethod
    def mean_metrics(samples: Sequence[Mapping[str, float]]) -> dict[str, float]:
        """Mean of each metric over the repeats that report it (sorted by metric name)."""
        names = sorted({name for s in samples for name in s})
        return {n: statistics.fmean(float(s[n]) for s in samples if n in s) for n in names}

    @staticmethod
    def spread(samples: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """``{metric: {"min", "max", "stdev"}}`` over the repeats (stdev 0 for one repeat)."""
        out: dict[str, dict[str, float]] = {}
        for name in sorted({name for s in samples for name in s}):
            xs = [float(s[name]) for s in samples if name in s]
            out[name] = {"min": min(xs), "max": max(xs),
                         "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0}
        return out

    def describe(self) -> dict[str, Any]:
        """Plain data for the API and reports."""
        return {"objectives": [o.describe() for o in self.objectives],
                "constraints": [str(c) for c in self.constraints]}
