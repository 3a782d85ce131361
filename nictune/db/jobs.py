"""Writing and reading jobs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload

from nictune.db import stats
from nictune.db._errors import maps_storage_errors
from nictune.db.landmarks import clear_landmarks, store_landmarks
from nictune.db.models import Job, JobState, Measurement, Testbed, Trial, Workload
from nictune.db.types import utcnow
from nictune.errors import InvalidInputError, NotFoundError

_FINISHED_STATES = frozenset(
    {JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.INTERRUPTED}
)


def _str_list(values: Iterable[str], what: str) -> list[str]:
    if isinstance(values, str):
        raise InvalidInputError(f"{what} must be a list of strings, not one string", field=what)
    items = list(values)
    if not all(isinstance(item, str) for item in items):
        raise InvalidInputError(f"{what} must be a list of strings", field=what)
    return items


def _positive(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{what} must be a positive integer, got {value!r}", field=what)
    return value


@maps_storage_errors
def create_job(
    s: Session,
    *,
    space_name: str,
    space_definition: Mapping[str, Any],
    testbed: Testbed,
    workload: Workload,
    objectives: Sequence[str],
    constraints: Sequence[str],
    engine: str,
    engine_params: Mapping[str, Any],
    budget: int,
    repeats: int,
    seed: int,
) -> Job:
    """Create a pending job; its id is assigned (flushed) before this returns.

    Args:
        s: the session.
        space_name: name of the search space.
        space_definition: the whole space, so the job can be resumed after the file changed.
        testbed: from :func:`get_or_create_testbed`.
        workload: from :func:`get_or_create_workload`.
        objectives: objective names, at least one.
        constraints: constraint expressions.
        engine: engine name.
        engine_params: engine parameters.
        budget: number of trials to run, >= 1.
        repeats: measurements per trial, >= 1.
        seed: random seed.

    Returns:
        The new job in state ``pending``.

    Raises:
        InvalidInputError: an argument is malformed.
        StorageError: the database failed.
    """
    objective_list = _str_list(objectives, "objectives")
    if not objective_list:
        raise InvalidInputError("a job needs at least one objective", field="objectives")
    if not engine:
        raise InvalidInputError("a job needs an engine name", field="engine")
    job = Job(
        state=JobState.PENDING.value,
        space_name=space_name,
        space_definition=dict(space_definition),
        testbed=testbed,
        workload=workload,
        objectives=objective_list,
        constraints=_str_list(constraints, "constraints"),
        engine=engine,
        engine_params=dict(engine_params),
        budget=_positive(budget, "budget"),
        repeats=_positive(repeats, "repeats"),
        seed=int(seed),
        stats={},
    )
    s.add(job)
    s.flush()
    return job


@maps_storage_errors
def get_job(s: Session, job_id: int, *, for_update: bool = False) -> Job:
    """Return the job with this id, its testbed and workload loaded.

    Args:
        for_update: lock the job's row until the transaction ends (``SELECT ... FOR
            UPDATE``), for a read-modify-write of its ``stats``: the job runner and the
            service both write them, and without the lock PostgreSQL lets one commit between
            the other's read and write, which then loses it (SQLite serialises writers at
            ``BEGIN IMMEDIATE`` anyway).

    Raises:
        NotFoundError: there is no such job.
        StorageError: the database failed.
    """
    # Testbed and workload come along, so they stay readable after the session closes.
    job = s.get(Job, job_id, options=[selectinload(Job.testbed), selectinload(Job.workload)],
                with_for_update=for_update or None, populate_existing=for_update)
    if job is None:
        raise NotFoundError(f"there is no job with id {job_id}; list jobs with: nictune history",
                            field="job_id", allowed="the id of an existing job")
    return job


@maps_storage_errors
def set_job_state(s: Session, job: Job, state: str, error: str | None = None) -> None:
    """Move a job to ``state`` and keep its timestamps and error consistent.

    The storage half of a state change: which changes are allowed is
    :mod:`nictune.jobs.lifecycle`'s, and in nictune only it calls this (the tests set up
    jobs in any state with it). ``tests/jobs/test_lifecycle.py`` checks that nothing else
    calls it or writes ``Job.state``.

    ``running`` sets ``started_at`` the first time (a resumed job keeps its first start)
    and clears ``finished_at`` and ``error``. ``completed``, ``failed``, ``cancelled``
    and ``interrupted`` set ``finished_at`` and store the landmarks of the job's trial
    pages (:mod:`nictune.db.landmarks`); leaving them for another state drops them. ``error`` is stored
    as given (``None`` clears it).

    Raises:
        InvalidInputError: ``state`` is not a job state.
        StorageError: the database failed.
    """
    new_state = JobState.parse(state)
    was_finished = job.state in _FINISHED_STATES
    now = utcnow()
    job.state = new_state.value
    if new_state is JobState.RUNNING:
        job.started_at = job.started_at or now
        job.finished_at = None
        job.error = error
    elif new_state in _FINISHED_STATES:
        job.finished_at = now
        job.error = error
    else:
        job.finished_at = None
        job.error = error
    s.flush()
    # A finished job's trials never change: its pages' landmarks are kept from now on, and
    # dropped when it runs again.
    if new_state in _FINISHED_STATES:
        store_landmarks(s, job.id)
    elif was_finished:
        clear_landmarks(s, job.id)


@maps_storage_errors
def delete_job(s: Session, job_id: int) -> None:
    """Delete a job with its trials and measurements, and recompute the statistics of the
    configurations it measured (:mod:`nictune.db.stats`) in the same transaction.

    Raises:
        NotFoundError: there is no such job.
        StorageError: the database failed.
    """
    job = get_job(s, job_id)
    s.flush()
    trials = select(Trial.id).where(Trial.job_id == job.id)
    touched = set(s.scalars(select(Measurement.configuration_id).where(Measurement.trial_id.in_(trials))
                            .distinct()))
    s.execute(delete(Measurement).where(Measurement.trial_id.in_(trials)))
    s.execute(delete(Trial).where(Trial.job_id == job.id))
    s.execute(delete(Job).where(Job.id == job.id))
    s.expunge(job)
    stats.recompute(s, touched)
