"""What the history's best configurations across jobs are read from (``GET /v1/history/best``,
``nictune history best``): each configuration's mean metrics per testbed fingerprint, from the
per-configuration sums (:data:`~nictune.db.models.config_stats`, one row each); the noise
pooled per fingerprint and the order by the objective's lower confidence bound, computed in
SQL (``ORDER BY ... LIMIT``) from numbers the caller gives. The rule itself (a job's
recommendation rule, :meth:`RacingPolicy.aggregate_key`) is the optimizer's, and is applied
above this package, where both are visible (:mod:`nictune.jobs.best`)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Float, and_, case, cast, func, literal, null, select
from sqlalchemy.orm import Session

from nictune.db.models import (
    MAIN_METRICS,
    STAT_SUFFIXES,
    Configuration,
    Job,
    Measurement,
    Testbed,
    Trial,
    Workload,
    config_stats,
    stat_column,
)


@dataclass
class ConfigAggregate:
    """Every measurement of one configuration on one testbed fingerprint, averaged."""

    testbed_id: int
    configuration_id: int
    measurements: int
    trials: int
    last_measured_at: datetime | None
    metrics: dict[str, float]
    #: Mean of the squares of each main metric (its variance, with the mean): the noise.
    squares: dict[str, float] = field(default_factory=dict)
    #: The workload's name.
    workload: str = ""


def _context(testbed: str, workload: str) -> ColumnElement[bool]:
    """The :data:`config_stats` rows of one testbed name (every fingerprint) and workload."""
    cs = config_stats.c
    return and_(cs.testbed_id.in_(select(Testbed.id).where(Testbed.name == testbed)),
                cs.workload_id.in_(select(Workload.id).where(Workload.name == workload)))


def configuration_means(s: Session, testbed: str, workload: str, extra_metrics: Sequence[str] = (), *,
                        metrics: Sequence[str] = MAIN_METRICS, last: bool = True,
                        configurations: Iterable[int] | None = None) -> list[ConfigAggregate]:
    """Mean metrics of every configuration measured on ``testbed`` under ``workload``.

    Measurements under different fingerprints of the same testbed name (another kernel,
    another noise level) are kept apart: their figures are not comparable. The main
    metrics come from the per-configuration sums (:data:`~nictune.db.models.config_stats`,
    one row per configuration), ``extra_metrics`` from the measurements' JSON (a scan, only
    when asked for).

    ``metrics``: only these main metrics (a ranking reads what it needs of every
    configuration); ``last``: read the time of the newest measurement (else ``None``);
    ``configurations``: only these configuration ids.
    """
    cs = config_stats.c
    names = [m for m in MAIN_METRICS if m in metrics]
    sums = [func.sum(cs[stat_column(m, suffix)]) for m in names for suffix in STAT_SUFFIXES]
    stmt = (
        select(cs.testbed_id, cs.configuration_id, func.sum(cs.measurements), func.sum(cs.trials),
               func.max(cs.last_measured_at) if last else null(), *sums)
        .where(_context(testbed, workload))
        .group_by(cs.testbed_id, cs.configuration_id)
        .order_by(cs.testbed_id, cs.configuration_id)
    )
    if configurations is not None:
        stmt = stmt.where(cs.configuration_id.in_(sorted(set(configurations))))
    extras = [m for m in extra_metrics if m not in MAIN_METRICS]
    extra_means = _json_means(s, testbed, workload, extras) if extras else {}
    out = []
    for testbed_id, config_id, n, trials, newest, *rest in s.connection().execute(stmt).all():
        if not n:
            continue
        means: dict[str, float] = {}
        mean_squares: dict[str, float] = {}
        for i, name in enumerate(names):
            count, total, sumsq, nsq = rest[4 * i:4 * i + 4]
            if count:
                means[name] = float(total) / int(count)
            if nsq:
                mean_squares[name] = float(sumsq) / int(nsq)
        means.update(extra_means.get((testbed_id, config_id), {}))
        out.append(ConfigAggregate(testbed_id, config_id, int(n), int(trials), newest, means, mean_squares,
                                   workload))
    return out


def _json_means(s: Session, testbed: str, workload: str, names: Sequence[str]
                ) -> dict[tuple[int, int], dict[str, float]]:
    """Means of metrics that have no column, read out of every measurement's JSON."""
    averages = [func.avg(Measurement.metrics[m].as_float()) for m in names]
    stmt = (
        select(Measurement.testbed_id, Measurement.configuration_id, *averages)
        .join(Trial, Measurement.trial_id == Trial.id)
        .where(Measurement.testbed_id.in_(select(Testbed.id).where(Testbed.name == testbed)),
               Measurement.workload_id.in_(select(Workload.id).where(Workload.name == workload)),
               Trial.state == "completed", Trial.source == "measured", Measurement.short.is_(False))
        .group_by(Measurement.testbed_id, Measurement.configuration_id)
    )
    return {(testbed_id, config_id): {name: float(v) for name, v in zip(names, values, strict=True) if v is not None}
            for testbed_id, config_id, *values in s.execute(stmt)}


def jobs_of(s: Session, pairs: Iterable[tuple[int, int]], workload: str) -> dict[tuple[int, int], list[int]]:
    """Jobs under ``workload`` that measured each (testbed id, configuration id) pair, ascending."""
    wanted = list(pairs)
    if not wanted:
        return {}
    found: dict[tuple[int, int], set[int]] = {pair: set() for pair in wanted}
    stmt = (select(Job.testbed_id, Trial.configuration_id, Trial.job_id)
            .join(Job, Trial.job_id == Job.id)
            .where(Trial.configuration_id.in_({c for _, c in wanted}), Trial.state == "completed",
                   Trial.source == "measured",
                   Job.workload_id.in_(select(Workload.id).where(Workload.name == workload)))
            .distinct())
    for testbed_id, config_id, job_id in s.execute(stmt):
        if (testbed_id, config_id) in found:
            found[(testbed_id, config_id)].add(job_id)
    return {pair: sorted(jobs) for pair, jobs in found.items()}


def configurations(s: Session, ids: Iterable[int]) -> dict[int, Configuration]:
    """Configuration rows by id."""
    wanted = list(set(ids))
    if not wanted:
        return {}
    return {c.id: c for c in s.scalars(select(Configuration).where(Configuration.id.in_(wanted)))}




#: The magnitudes of a mean that count in the pooled noise: its square neither underflows nor
#: overflows a double (PostgreSQL raises an error on either). A configuration whose objective
#: mean is outside them (a loss of 1e-200 %) is left out of the noise, in SQL and in Python.
NOISE_MEANS = (1e-150, 1e150)


def pooled_relative_variance(s: Session, testbed: str, workload: str, metric: str) -> dict[int, tuple[float, int]]:
    """Per testbed fingerprint (id): the sum over its configurations measured more than once of
    the relative variance of ``metric`` (a main metric) times its degrees of freedom, and the
    sum of those degrees of freedom, computed in SQL from the per-configuration sums.

    Each configuration's variance is its mean square less its squared mean, times n / (n - 1);
    one whose mean is outside :data:`NOISE_MEANS` or has no square counted is left out."""
    cs = config_stats.c
    per = (select(cs.testbed_id, func.sum(cs.measurements).label("n"),
                  func.sum(cs[stat_column(metric, "n")]).label("count"),
                  func.sum(cs[stat_column(metric, "sum")]).label("total"),
                  func.sum(cs[stat_column(metric, "sumsq")]).label("sumsq"),
                  func.sum(cs[stat_column(metric, "nsq")]).label("nsq"))
           .where(_context(testbed, workload))
           .group_by(cs.testbed_id, cs.configuration_id)
           .subquery())
    n = per.c.n
    mean = _mean(per.c.total, per.c.count)
    square = _mean(per.c.sumsq, per.c.nsq)
    excess = square - mean * mean
    var = case((excess > 0, excess), else_=literal(0.0, Float)) * n / cast(n - 1, Float)
    low, high = NOISE_MEANS
    stmt = (select(per.c.testbed_id, func.sum(var / (mean * mean) * (n - 1)), func.sum(n - 1))
            .where(n >= 2, per.c.nsq > 0, func.abs(mean) >= low, func.abs(mean) <= high)
            .group_by(per.c.testbed_id))
    return {int(testbed_id): (float(weighted), int(dof)) for testbed_id, weighted, dof in s.execute(stmt)}


def _mean(total: ColumnElement[Any], count: ColumnElement[Any]) -> ColumnElement[Any]:
    # As Python computes it: float(total) / int(count); NULL for no values (no division error).
    # Both sides typed Float: SQLAlchemy would cast an integer divisor to NUMERIC.
    return cast(total, Float) / cast(func.nullif(count, 0), Float)


@dataclass(frozen=True)
class Bound:
    """A bound on a main metric's mean: a goal's constraint in the database's terms."""

    metric: str
    op: str
    threshold: float


@dataclass(frozen=True)
class LowerBoundOrder:
    """How :func:`ranked_means` orders configurations, in plain numbers.

    ``v`` is the mean of ``metric`` times ``sign`` (bigger is better), ``n`` the configuration's
    measurements. Those whose means meet every bound come first, by ``v - h * |v| / sqrt(n)``
    (``h``: its fingerprint's ``half_widths`` entry, else ``default_half_width``), then by ``v``;
    the others after them by their summed violation, smallest first (a bound's violation is the
    mean's excess over ``|threshold|``, or over 1 for a threshold of 0, and at least
    ``min_violation``), then by ``v``. Ties go by testbed id, then configuration id.
    """

    metric: str
    sign: float
    bounds: tuple[Bound, ...] = ()
    half_widths: Mapping[int, float] = field(default_factory=dict)
    default_half_width: float = 0.0
    min_violation: float = 0.0


def ranked_means(s: Session, testbed: str, workload: str, order: LowerBoundOrder, limit: int
                 ) -> list[ConfigAggregate]:
    """The first ``limit`` configurations measured on ``testbed`` under ``workload`` in
    ``order``, sorted by the database (``ORDER BY ... LIMIT``), each with the means of the
    metrics the order reads (and no times). A configuration without a figure of one of them is
    left out."""
    cs = config_stats.c
    names = list(dict.fromkeys([order.metric, *(b.metric for b in order.bounds)]))
    sums = [func.sum(cs[stat_column(m, suffix)]).label(f"{m}_{suffix}") for m in names for suffix in ("n", "sum")]
    per = (select(cs.testbed_id, cs.configuration_id, func.sum(cs.measurements).label("n"),
                  func.sum(cs.trials).label("trials"), *sums)
           .where(_context(testbed, workload))
           .group_by(cs.testbed_id, cs.configuration_id)
           .subquery())
    means = {m: _mean(per.c[f"{m}_sum"], per.c[f"{m}_n"]) for m in names}
    v = means[order.metric] if order.sign > 0 else -means[order.metric]
    satisfied = [_satisfied(means[b.metric], b) for b in order.bounds]
    terms: list[ColumnElement[float]] = []
    for bound, ok in zip(order.bounds, satisfied, strict=True):
        excess = (means[bound.metric] - bound.threshold if bound.op in ("<=", "<")
                  else bound.threshold - means[bound.metric]) / (abs(bound.threshold) or 1.0)
        terms.append(case((ok, literal(0.0, Float)), (excess > order.min_violation, excess),
                          else_=literal(order.min_violation, Float)))
    half = (case(dict(order.half_widths), value=per.c.testbed_id, else_=literal(order.default_half_width, Float))
            if order.half_widths else literal(order.default_half_width, Float))
    lower = v - half * func.abs(v) / func.sqrt(cast(per.c.n, Float), type_=Float)
    if terms:  # feasible first, by the lower bound; the others by their summed violation
        feasible = and_(*satisfied)
        violation = functools.reduce(operator.add, terms)
        keys = [case((feasible, 1), else_=0).desc(), case((feasible, lower), else_=-violation).desc()]
    else:
        keys = [lower.desc()]
    stmt = (select(per.c.testbed_id, per.c.configuration_id, per.c.n, per.c.trials,
                   *(per.c[f"{m}_{suffix}"] for m in names for suffix in ("n", "sum")))
            .where(per.c.n > 0, *(per.c[f"{m}_n"] > 0 for m in names))
            .order_by(*keys, v.desc(), per.c.testbed_id, per.c.configuration_id)
            .limit(limit))
    out = []
    for testbed_id, config_id, n, trials, *rest in s.execute(stmt):
        metrics = {m: float(rest[2 * i + 1]) / int(rest[2 * i]) for i, m in enumerate(names)}
        out.append(ConfigAggregate(testbed_id, config_id, int(n), int(trials), None, metrics, {}, workload))
    return out


def _satisfied(mean: ColumnElement[float], bound: Bound) -> ColumnElement[bool]:
    t = literal(bound.threshold, Float)
    return {"<=": mean <= t, ">=": mean >= t, "<": mean < t, ">": mean > t}[bound.op]
