"""The history's best configurations across jobs, shared by ``GET /v1/history/best`` and the
CLI's ``nictune history best``: each configuration's mean metrics per testbed fingerprint
(from the per-configuration sums, one row each), the noise pooled per fingerprint, and the ranking a job uses for its
recommendation (:meth:`RacingPolicy.aggregate_key`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, null, select
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
from nictune.errors import NictuneError
from nictune.optimizer.objectives import Score
from nictune.optimizer.racing import OBJECTIVE, Interval, Noise, RacingPolicy


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
        .where(cs.testbed_id.in_(select(Testbed.id).where(Testbed.name == testbed)),
               cs.workload_id.in_(select(Workload.id).where(Workload.name == workload)))
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


def rank(policy: RacingPolicy, candidates: list[ConfigAggregate],
         noise: Mapping[int, Noise]) -> list[tuple[Noise, ConfigAggregate]]:
    """Candidates best first (:meth:`RacingPolicy.aggregate_key`: feasible on their means
    first, by the objective's lower confidence bound), each with its fingerprint's noise;
    those missing a metric the goal needs are left out."""
    prior = policy.stats.noise({})[OBJECTIVE]
    scored = []
    for candidate in candidates:
        nz = noise.get(candidate.testbed_id, prior)
        try:
            key = policy.aggregate_key(candidate.metrics, candidate.measurements, {OBJECTIVE: nz})
        except (NictuneError, ValueError):
            continue
        if not any(math.isnan(k) for k in key):
            scored.append((key, nz, candidate))
    scored.sort(key=lambda t: t[0], reverse=True)
    return [(nz, candidate) for _, nz, candidate in scored]


def ranking(s: Session, policy: RacingPolicy, testbed: str, workload: str) -> list[tuple[Noise, ConfigAggregate]]:
    """:func:`rank` of every configuration measured on ``testbed`` under ``workload``, read with
    only the metrics the goal needs (and no times): what deciding the order takes. Its
    candidates carry those metrics alone; :func:`complete` reads the rest for the ones shown."""
    goal = policy.goal
    needed = {goal.objective.metric, *([goal.objective.per] if goal.objective.per else []),
              *(c.metric for c in goal.constraints)}
    extra = sorted(m for m in needed if m not in MAIN_METRICS)
    means = configuration_means(s, testbed, workload, extra, metrics=sorted(needed & set(MAIN_METRICS)), last=False)
    return rank(policy, means, noise_by_fingerprint(policy, means))


def complete(s: Session, policy: RacingPolicy, chosen: Sequence[tuple[Noise, ConfigAggregate]], testbed: str,
             workload: str) -> list[tuple[Noise, ConfigAggregate]]:
    """``chosen`` (a prefix of :func:`ranking` under ``policy``) with every main metric, the
    metrics its constraints name and the time of its newest measurement, in the same order."""
    if not chosen:
        return []
    extra = sorted({c.metric for c in policy.goal.constraints})
    full = configuration_means(s, testbed, workload, extra, configurations=[c.configuration_id for _, c in chosen])
    by_key = {(c.testbed_id, c.configuration_id): c for c in full}
    return [(nz, by_key[(c.testbed_id, c.configuration_id)]) for nz, c in chosen]


@dataclass
class RankedConfiguration:
    """One configuration of the ranking as both front ends show it."""

    candidate: ConfigAggregate
    noise: Noise
    config: Configuration
    score: Score
    #: The objective's mean and interval, in the objective's own sign.
    interval: Interval
    jobs: list[int]


def ranked_rows(s: Session, policy: RacingPolicy, chosen: Sequence[tuple[Noise, ConfigAggregate]]
                ) -> list[RankedConfiguration]:
    """What ``GET /v1/history/best`` and ``nictune history best`` show of ``chosen`` (a
    prefix of :func:`rank`): each configuration, its score, interval and jobs."""
    pairs = [(c.testbed_id, c.configuration_id) for _, c in chosen]
    configs = configurations(s, [c for _, c in pairs])
    jobs = jobs_of(s, pairs, chosen[0][1].workload) if chosen else {}  # one ranking, one workload
    rows = []
    for nz, cand in chosen:
        score = policy.goal.score(cand.metrics)
        rows.append(RankedConfiguration(
            candidate=cand, noise=nz, config=configs[cand.configuration_id], score=score,
            interval=policy.stats.shown(policy.stats.mean_interval(score.value, cand.measurements, nz)),
            jobs=jobs.get((cand.testbed_id, cand.configuration_id), [])))
    return rows


def noise_by_fingerprint(policy: RacingPolicy, candidates: list[ConfigAggregate]) -> dict[int, Noise]:
    """The pooled relative noise of the objective on each testbed fingerprint (id), from the
    variance of its configurations measured more than once (the prior alone for an
    objective that is not one of the main metrics' columns, e.g. CPU per Gbit/s)."""
    objective = policy.goal.objective
    if objective.per is not None or objective.metric not in MAIN_METRICS:
        return {}
    column = objective.metric
    weighted: dict[int, float] = {}
    dofs: dict[int, int] = {}
    for c in candidates:
        mean, square = c.metrics.get(column), c.squares.get(column)
        if c.measurements < 2 or mean is None or square is None or not 0 < mean * mean < math.inf:
            continue
        n = c.measurements
        var = max(0.0, square - mean * mean) * n / (n - 1)
        weighted[c.testbed_id] = weighted.get(c.testbed_id, 0.0) + var / (mean * mean) * (n - 1)
        dofs[c.testbed_id] = dofs.get(c.testbed_id, 0) + n - 1
    return {testbed_id: policy.stats.pooled_noise(weighted[testbed_id], dofs[testbed_id]) for testbed_id in weighted}
