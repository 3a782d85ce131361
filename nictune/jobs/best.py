"""The history's best configurations across jobs (``GET /v1/history/best``, ``nictune history
best``): every configuration measured in a context ranked by the rule a job uses for its
recommendation (:meth:`RacingPolicy.aggregate_key`: feasible on its mean first, by the
objective's lower confidence bound), with the noise pooled per testbed fingerprint.

The database sorts (:func:`nictune.db.best.ranked_means`, ``ORDER BY ... LIMIT``) when the
goal reads main metrics only and names at most two constraints: the rule is handed to it in
plain numbers, and it returns the first configurations alone. Other goals (CPU per Gbit/s, a
metric without a column, three constraints or more, whose summed violations SQL would add in
another order than :func:`math.fsum`) rank every configuration's means here."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.exc import DataError
from sqlalchemy.orm import Session

from nictune.db import MAIN_METRICS, Configuration
from nictune.db.best import (
    NOISE_MEANS,
    Bound,
    ConfigAggregate,
    LowerBoundOrder,
    configuration_means,
    configurations,
    jobs_of,
    pooled_relative_variance,
    ranked_means,
)
from nictune.errors import NictuneError
from nictune.optimizer.objectives import MIN_VIOLATION, Score
from nictune.optimizer.racing import OBJECTIVE, Interval, Noise, RacingPolicy

#: The most constraints the database sums the violations of (two terms add as math.fsum does).
SQL_CONSTRAINTS = 2


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


def ranking(s: Session, policy: RacingPolicy, testbed: str, workload: str, limit: int | None = None
            ) -> list[tuple[Noise, ConfigAggregate]]:
    """The first ``limit`` (``None``: every) configurations measured on ``testbed`` under
    ``workload`` in :func:`rank`'s order, each with its fingerprint's noise and the means of the
    metrics the goal needs alone (no times): what deciding the order takes. :func:`complete`
    reads the rest for the ones shown."""
    order = sql_order(policy)
    if order is not None and limit is not None:
        ranked = sql_ranking(s, policy, order, testbed, workload, limit)
        if ranked is not None:
            return ranked
    goal = policy.goal
    needed = {goal.objective.metric, *([goal.objective.per] if goal.objective.per else []),
              *(c.metric for c in goal.constraints)}
    extra = sorted(m for m in needed if m not in MAIN_METRICS)
    means = configuration_means(s, testbed, workload, extra, metrics=sorted(needed & set(MAIN_METRICS)), last=False)
    return rank(policy, means, noise_by_fingerprint(policy, means))[:limit]


def sql_order(policy: RacingPolicy) -> LowerBoundOrder | None:
    """The goal's ranking rule for the database (without the noise), or ``None`` when it
    reads something the per-configuration sums do not hold or adds three violations or more."""
    goal = policy.goal
    objective = goal.objective
    if (objective.per is not None or objective.metric not in MAIN_METRICS
            or len(goal.constraints) > SQL_CONSTRAINTS
            or any(c.metric not in MAIN_METRICS for c in goal.constraints)):
        return None
    return LowerBoundOrder(metric=objective.metric, sign=1.0 if objective.direction == "maximize" else -1.0,
                           bounds=tuple(Bound(c.metric, c.op, c.threshold) for c in goal.constraints),
                           min_violation=MIN_VIOLATION)


def sql_ranking(s: Session, policy: RacingPolicy, order: LowerBoundOrder, testbed: str, workload: str,
                limit: int) -> list[tuple[Noise, ConfigAggregate]] | None:
    """:func:`ranking` sorted by the database; ``None`` when PostgreSQL's arithmetic overflowed
    on figures far outside any measurement's range (Python ranks them then)."""
    def run() -> list[tuple[Noise, ConfigAggregate]]:
        variances = pooled_relative_variance(s, testbed, workload, order.metric)
        noise = {testbed_id: policy.stats.pooled_noise(weighted, dof)
                 for testbed_id, (weighted, dof) in variances.items()}
        prior = policy.stats.noise({})[OBJECTIVE]
        # t x cv of each fingerprint: the half width of a mean of one measurement, per unit.
        sized = dataclasses.replace(
            order, half_widths={testbed_id: policy.stats.half_width(1.0, 1, nz) for testbed_id, nz in noise.items()},
            default_half_width=policy.stats.half_width(1.0, 1, prior))
        return [(noise.get(c.testbed_id, prior), c) for c in ranked_means(s, testbed, workload, sized, limit)]

    if s.get_bind().dialect.name != "postgresql":
        return run()  # SQLite's arithmetic gives inf or 0 where PostgreSQL raises
    try:
        with s.begin_nested():
            return run()
    except DataError:
        return None


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
    objective that is not one of the main metrics' columns, e.g. CPU per Gbit/s): what
    :func:`~nictune.db.best.pooled_relative_variance` computes in SQL, in Python."""
    objective = policy.goal.objective
    if objective.per is not None or objective.metric not in MAIN_METRICS:
        return {}
    column = objective.metric
    low, high = NOISE_MEANS
    weighted: dict[int, float] = {}
    dofs: dict[int, int] = {}
    for c in candidates:
        mean, square = c.metrics.get(column), c.squares.get(column)
        if c.measurements < 2 or mean is None or square is None or not low <= abs(mean) <= high:
            continue
        n = c.measurements
        var = max(0.0, square - mean * mean) * n / (n - 1)
        weighted[c.testbed_id] = weighted.get(c.testbed_id, 0.0) + var / (mean * mean) * (n - 1)
        dofs[c.testbed_id] = dofs.get(c.testbed_id, 0) + n - 1
    return {testbed_id: policy.stats.pooled_noise(weighted[testbed_id], dofs[testbed_id]) for testbed_id in weighted}
