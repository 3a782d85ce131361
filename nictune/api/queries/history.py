"""Queries behind the history endpoints: per-configuration means in a context, measurements."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import case, distinct, func, null, select
from sqlalchemy.orm import Session

from nictune.db import MAIN_METRICS, Configuration, Job, Measurement, Testbed, Trial, Workload


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


def testbed_names(s: Session) -> list[str]:
    """Names of the testbeds the history knows."""
    return sorted(set(s.scalars(select(Testbed.name))))


def _square(column: Any) -> Any:
    """``column * column`` that neither underflows nor overflows (PostgreSQL raises on both):
    0 below 1e-100, NULL (left out of the mean) above 1e100."""
    magnitude = func.abs(column)
    return case((magnitude < 1e-100, 0.0), (magnitude > 1e100, null()), else_=column * column)


def configuration_means(s: Session, testbed: str, workload: str, extra_metrics: Sequence[str] = ()
                        ) -> list[ConfigAggregate]:
    """Mean metrics of every configuration measured on ``testbed`` under ``workload``.

    Measurements under different fingerprints of the same testbed name (another kernel,
    another noise level) are kept apart: their figures are not comparable. The main
    metrics are averaged from their columns, ``extra_metrics`` from the JSON.
    """
    names = [*MAIN_METRICS, *(m for m in extra_metrics if m not in MAIN_METRICS)]
    averages = [func.avg(getattr(Measurement, m)) if m in MAIN_METRICS
                else func.avg(Measurement.metrics[m].as_float()) for m in names]
    squares = [func.avg(_square(getattr(Measurement, m))) for m in MAIN_METRICS]
    stmt = (
        select(Measurement.testbed_id, Measurement.configuration_id, func.count(Measurement.id),
               func.count(distinct(Measurement.trial_id)), func.max(Measurement.finished_at), *averages,
               *squares)
        .join(Trial, Measurement.trial_id == Trial.id)
        .where(Measurement.testbed_id.in_(select(Testbed.id).where(Testbed.name == testbed)),
               Measurement.workload_id.in_(select(Workload.id).where(Workload.name == workload)),
               Trial.state == "completed", Trial.source == "measured")
        .group_by(Measurement.testbed_id, Measurement.configuration_id)
    )
    out = []
    for testbed_id, config_id, n, trials, last, *rest in s.execute(stmt):
        means, sq = rest[:len(names)], rest[len(names):]
        metrics = {name: float(v) for name, v in zip(names, means, strict=True) if v is not None}
        mean_squares = {name: float(v) for name, v in zip(MAIN_METRICS, sq, strict=True) if v is not None}
        out.append(ConfigAggregate(testbed_id, config_id, int(n), int(trials), last, metrics, mean_squares))
    return out


def jobs_of(s: Session, pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], list[int]]:
    """Jobs that measured each (testbed id, configuration id) pair, ascending."""
    wanted = list(pairs)
    found: dict[tuple[int, int], set[int]] = {pair: set() for pair in wanted}
    if not wanted:
        return {}
    stmt = (select(Job.testbed_id, Trial.configuration_id, Trial.job_id)
            .join(Job, Trial.job_id == Job.id)
            .where(Trial.configuration_id.in_({c for _, c in wanted}), Trial.state == "completed",
                   Trial.source == "measured")
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


def testbeds(s: Session, ids: Iterable[int]) -> dict[int, Testbed]:
    """Testbed rows by id."""
    wanted = list(set(ids))
    if not wanted:
        return {}
    return {t.id: t for t in s.scalars(select(Testbed).where(Testbed.id.in_(wanted)))}


def stored_testbeds(s: Session) -> list[tuple[Testbed, int]]:
    """Every stored testbed with its number of jobs."""
    jobs = dict(s.execute(select(Job.testbed_id, func.count()).group_by(Job.testbed_id)).all())
    return [(t, int(jobs.get(t.id, 0))) for t in s.scalars(select(Testbed).order_by(Testbed.id))]


def measurement_rows(s: Session, configuration_id: int) -> list[tuple[Measurement, Trial, Any, Any, Any]]:
    """Every measurement of one configuration with its trial, testbed name/kind and workload name."""
    stmt = (select(Measurement, Trial, Testbed.name, Testbed.kind, Workload.name)
            .join(Trial, Measurement.trial_id == Trial.id)
            .join(Testbed, Measurement.testbed_id == Testbed.id)
            .join(Workload, Measurement.workload_id == Workload.id)
            .where(Measurement.configuration_id == configuration_id)
            .order_by(Measurement.started_at, Measurement.id))
    return [(m, t, tb, kind, wl) for m, t, tb, kind, wl in s.execute(stmt)]
