"""Read-side queries over nictune's history (re-exported by :mod:`nictune.db.repository`)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TypedDict

from sqlalchemy import ColumnElement, Float, String, cast, extract, func, select
from sqlalchemy.orm import Session, selectinload

from nictune.db._errors import maps_storage_errors
from nictune.db.models import (
    Configuration,
    Job,
    JobState,
    Measurement,
    Testbed,
    Trial,
    TrialSource,
    TrialState,
    Workload,
)
from nictune.db.types import as_utc
from nictune.errors import InvalidInputError, UnknownNameError

MIN_HASH_PREFIX = 6
"""Shortest hash prefix :func:`resolve_configuration` accepts."""


class MeasurementTotals(TypedDict):
    """Counters over the whole database, for a metrics endpoint."""

    jobs_by_state: dict[str, int]
    trials_measured: int
    cache_hits: int
    trials_failed: int
    measurements: int
    #: Seconds of benchmark runs on real testbeds (veth, ssh): time the hosts spent.
    measurement_seconds: float
    #: Seconds the simulated testbeds' runs stood for: the model's time, none of it spent.
    simulated_seconds: float


@maps_storage_errors
def cached_samples(
    s: Session, testbed_id: int, workload_id: int, config_hash: str, *, short_s: float | None = None
) -> list[dict[str, float]]:
    """Return the metrics of every earlier measurement of this configuration, oldest first.

    Only completed trials whose numbers were measured count (from any job); failed and
    running trials, and trials that were themselves answered from the cache, are ignored.

    Args:
        s: the session.
        testbed_id: the testbed the measurements must come from.
        workload_id: the workload they must have run.
        config_hash: the configuration's cache-key hash.
        short_s: the short screening runs of this many seconds instead of the full runs
            (a different fidelity: never a fitness).

    Returns:
        One metrics dict per measurement; empty when the configuration was never measured
        there.
    """
    stmt = (
        select(Measurement.metrics)
        .join(Trial, Measurement.trial_id == Trial.id)
        .join(Configuration, Measurement.configuration_id == Configuration.id)
        .where(
            Measurement.testbed_id == testbed_id,
            Measurement.workload_id == workload_id,
            Configuration.hash == config_hash,
            Trial.state == TrialState.COMPLETED,
            Trial.source == TrialSource.MEASURED,
            Measurement.short.is_(short_s is not None),
            *([Measurement.duration_s == short_s] if short_s is not None else []),
        )
        .order_by(Measurement.started_at, Measurement.id)
    )
    return [dict(metrics) for metrics in s.scalars(stmt)]


@maps_storage_errors
def list_jobs(
    s: Session,
    *,
    testbed: str | None = None,
    workload: str | None = None,
    objective: str | None = None,
    since: datetime | None = None,
    state: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[Job]:
    """Return jobs, newest first, with their testbed and workload loaded.

    Args:
        s: the session.
        testbed: only jobs on the testbed of this name.
        workload: only jobs under the workload of this name.
        objective: only jobs whose objectives include this one.
        since: only jobs created at or after this time (naive means UTC).
        state: only jobs in this state.
        limit: at most this many jobs.
        offset: skip this many matching jobs first.

    Raises:
        InvalidInputError: unknown state, or a negative limit or offset.
        StorageError: the database failed.
    """
    if limit < 0 or offset < 0:
        raise InvalidInputError("limit and offset must not be negative", field="limit")
    stmt = select(Job).options(selectinload(Job.testbed), selectinload(Job.workload))
    if testbed is not None:
        stmt = stmt.join(Job.testbed).where(Testbed.name == testbed)
    if workload is not None:
        stmt = stmt.join(Job.workload).where(Workload.name == workload)
    if since is not None:
        stmt = stmt.where(Job.created_at >= as_utc(since))
    if state is not None:
        stmt = stmt.where(Job.state == JobState.parse(state).value)
    stmt = stmt.order_by(Job.id.desc())
    if objective is None:
        return list(s.scalars(stmt.limit(limit).offset(offset)))
    # JSON containment differs per backend; narrow with a portable LIKE on the JSON text,
    # then decide exactly in Python before paginating.
    needle = json.dumps(objective)
    stmt = stmt.where(cast(Job.objectives, String).contains(needle, autoescape=True))
    matching = [job for job in s.scalars(stmt) if objective in job.objectives]
    return matching[offset : offset + limit]


@maps_storage_errors
def context_trials(
    s: Session, testbed_name: str, workload_name: str, *, measured_only: bool = False
) -> list[Trial]:
    """Return the completed trials of every job on this testbed under this workload.

    For "best ever" questions; ranking is the caller's. Trials come with their
    configuration and job loaded, oldest first.

    Args:
        s: the session.
        testbed_name: the testbed's name.
        workload_name: the workload's name.
        measured_only: leave out trials answered from the cache (they repeat the numbers
            of a measured trial).
    """
    stmt = (
        select(Trial)
        .join(Trial.job)
        .join(Job.testbed)
        .join(Job.workload)
        .where(
            Testbed.name == testbed_name,
            Workload.name == workload_name,
            Trial.state == TrialState.COMPLETED,
        )
        .options(selectinload(Trial.configuration), selectinload(Trial.job))
        .order_by(Trial.id)
    )
    if measured_only:
        stmt = stmt.where(Trial.source == TrialSource.MEASURED)
    return list(s.scalars(stmt))


def _unknown_configuration(value: str) -> UnknownNameError:
    error = UnknownNameError("configuration", value, [])
    # The generic message would list "known configurations: (none)", which misleads.
    error.args = (f"no stored configuration has a hash equal to or starting with {value!r}",)
    return error


@maps_storage_errors
def resolve_configuration(s: Session, hash_or_prefix: str) -> Configuration:
    """Return the configuration whose hash is, or uniquely starts with, ``hash_or_prefix``.

    Raises:
        InvalidInputError: the prefix is shorter than 6 characters or matches several.
        UnknownNameError: nothing matches.
        StorageError: the database failed.
    """
    value = hash_or_prefix.strip()
    exact = s.scalars(select(Configuration).where(Configuration.hash == value)).one_or_none()
    if exact is not None:
        return exact
    allowed = f"a SHA-256 hash in hex (0-9, a-f), or its first {MIN_HASH_PREFIX} or more characters"
    if not re.fullmatch(r"[0-9a-fA-F]+", value):
        raise InvalidInputError(f"configuration hash {value!r} is not hexadecimal", field="configuration",
                                allowed=allowed)
    if len(value) < MIN_HASH_PREFIX:
        raise InvalidInputError(
            f"configuration hash prefix {value!r} is too short; give at least "
            f"{MIN_HASH_PREFIX} characters", field="configuration", allowed=allowed,
        )
    matches = list(
        s.scalars(
            select(Configuration)
            .where(Configuration.hash.startswith(value, autoescape=True))
            .order_by(Configuration.hash)
            .limit(6)
        )
    )
    if not matches:
        raise _unknown_configuration(value)
    if len(matches) > 1:
        shown = ", ".join(match.hash[:16] for match in matches[:5])
        more = " ..." if len(matches) > 5 else ""
        raise InvalidInputError(
            f"configuration hash prefix {value!r} is ambiguous; it matches {shown}{more}",
            field="configuration",
        )
    return matches[0]


@maps_storage_errors
def configuration_measurements(
    s: Session, config_hash: str
) -> list[tuple[Measurement, Trial, Job]]:
    """Return every measurement of one configuration with its trial and job, oldest first.

    Args:
        s: the session.
        config_hash: the full hash or a unique prefix of at least 6 characters.

    Raises:
        InvalidInputError: the prefix is too short or ambiguous.
        UnknownNameError: no configuration matches.
        StorageError: the database failed.
    """
    configuration = resolve_configuration(s, config_hash)
    stmt = (
        select(Measurement, Trial, Job)
        .join(Trial, Measurement.trial_id == Trial.id)
        .join(Job, Trial.job_id == Job.id)
        .where(Measurement.configuration_id == configuration.id, Measurement.short.is_(False))
        .order_by(Measurement.started_at, Measurement.id)
    )
    return [(measurement, trial, job) for measurement, trial, job in s.execute(stmt)]


def _seconds(s: Session) -> ColumnElement[float]:
    start, end = Measurement.started_at, Measurement.finished_at
    if s.get_bind().dialect.name == "sqlite":
        return (func.julianday(end) - func.julianday(start)) * 86400.0
    return cast(extract("epoch", end - start), Float)


@maps_storage_errors
def measurement_totals(s: Session) -> MeasurementTotals:
    """Count jobs by state, trials by outcome, and measurements and their duration.

    ``measurements`` and the seconds cover measured trials only (a cache hit costs no
    measurement time); seconds on simulated testbeds are counted apart (the model's time).
    """
    jobs_by_state = {member.value: 0 for member in JobState}
    for state, count in s.execute(select(Job.state, func.count()).group_by(Job.state)):
        jobs_by_state[state] = count
    trials: dict[tuple[str, str], int] = {}
    for state, source, count in s.execute(
        select(Trial.state, Trial.source, func.count()).group_by(Trial.state, Trial.source)
    ):
        trials[(state, source)] = count
    measured = (
        select(Testbed.kind, func.count(Measurement.id), func.coalesce(func.sum(_seconds(s)), 0.0))
        .join(Trial, Measurement.trial_id == Trial.id)
        .join(Testbed, Measurement.testbed_id == Testbed.id)
        .where(Trial.state == TrialState.COMPLETED, Trial.source == TrialSource.MEASURED)
        .group_by(Testbed.kind)
    )
    count, seconds = 0, {True: 0.0, False: 0.0}
    for kind, n, total in s.execute(measured):
        count += int(n)
        seconds[kind == "sim"] += float(total)
    return MeasurementTotals(
        jobs_by_state=jobs_by_state,
        trials_measured=trials.get((TrialState.COMPLETED, TrialSource.MEASURED), 0),
        cache_hits=trials.get((TrialState.COMPLETED, TrialSource.CACHE), 0),
        trials_failed=sum(n for (state, _), n in trials.items() if state == TrialState.FAILED),
        measurements=count,
        measurement_seconds=seconds[False],
        simulated_seconds=seconds[True],
    )
