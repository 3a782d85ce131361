"""The one owner of a job's state: which moves between states are allowed, and how each is made.

The job runner (:mod:`nictune.jobs.runner`) and the service's job manager
(:mod:`nictune.api.manager`) move jobs between states only through the functions here;
nothing else in nictune writes ``Job.state`` (``tests/jobs/test_lifecycle.py`` checks the
source), and only this module calls :func:`nictune.db.set_job_state`, which keeps the
timestamps and the error consistent with the state.

The state machine (:data:`TRANSITIONS`)::

    pending      -> running (start), failed, cancelled
    running      -> running (a job a crash left running starts again), waiting,
                    completed, failed, interrupted, cancelled
    waiting      -> running (a worker is back, or a job a crash left waiting starts again),
                    completed, failed, interrupted, cancelled
    interrupted  -> running (resume), failed, cancelled
    failed       -> running (resume: ``nictune optimize --resume``)
    completed, cancelled: final, nothing leaves them (:data:`FINAL`)

The service treats a failed job as ended too (:data:`ENDED`): it neither cancels nor fails it
again, and does not resume it at start; only the CLI's ``--resume`` restarts it.

Every function takes the job locked for the transaction (:func:`lock`, i.e.
``db.get_job(s, job_id, for_update=True)``): the runner and the service write the same row,
and a state read without the lock may be stale by the time it is written. An illegal move
raises :class:`~nictune.errors.JobStateError` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from nictune import db
from nictune.db import Job, JobState
from nictune.errors import JobStateError

_P, _R, _W = JobState.PENDING, JobState.RUNNING, JobState.WAITING
_I, _C, _F, _X = JobState.INTERRUPTED, JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED

#: The states a job may move to, by its state.
TRANSITIONS: Mapping[JobState, frozenset[JobState]] = {
    _P: frozenset({_R, _F, _X}),
    _R: frozenset({_R, _W, _C, _F, _I, _X}),
    _W: frozenset({_R, _C, _F, _I, _X}),
    _I: frozenset({_R, _F, _X}),
    _F: frozenset({_R}),
    _C: frozenset(),
    _X: frozenset(),
}
#: States nothing leaves.
FINAL: frozenset[JobState] = frozenset(state for state, out in TRANSITIONS.items() if not out)
#: States whose run has ended: the final ones and ``failed`` (which only a resume leaves).
ENDED: frozenset[JobState] = FINAL | {_F}
#: How a job's run can end (:func:`finish`).
OUTCOMES: frozenset[JobState] = frozenset({_C, _F, _I})


def can_move(state: str, wanted: str) -> bool:
    """Whether a job in ``state`` may move to ``wanted``.

    Raises:
        InvalidInputError: either is not a job state.
    """
    return JobState.parse(wanted) in TRANSITIONS[JobState.parse(state)]


def has_ended(job: Job) -> bool:
    """Whether the job's run has ended (:data:`ENDED`: completed, failed or cancelled)."""
    return JobState.parse(job.state) in ENDED


def lock(s: Session, job_id: int) -> Job:
    """The job, its row locked until the transaction ends (what every transition takes).

    Raises:
        NotFoundError: there is no such job.
        StorageError: the database failed.
    """
    return db.get_job(s, job_id, for_update=True)


def _move(s: Session, job: Job, wanted: JobState, error: str | None = None) -> None:
    """Move the locked ``job`` to ``wanted`` (timestamps and error by :func:`db.set_job_state
    <nictune.db.set_job_state>`), or refuse an illegal move."""
    if not can_move(job.state, wanted):
        raise JobStateError(f"job {job.id} is {job.state}; it cannot become {wanted.value}",
                            job_id=job.id, state=job.state, wanted=wanted.value)
    db.set_job_state(s, job, wanted.value, error=error)


def start(s: Session, job: Job) -> int:
    """Start the locked ``job``, or resume it: remove the trials a crash left ``running`` (a
    resume measures them again) and move it to ``running``. Its first start time stays.

    Returns:
        How many trials a crash had left running (now deleted).

    Raises:
        JobStateError: the job is completed or cancelled (nothing is written).
    """
    if JobState.parse(job.state) in FINAL:
        raise JobStateError(f"job {job.id} is already {job.state}; start a new job instead",
                            job_id=job.id, state=job.state, wanted=_R.value)
    lost = db.reset_running_trials(s, job.id)
    _move(s, job, _R)
    return lost


def set_waiting(s: Session, job: Job, waiting: bool) -> bool:
    """Switch the locked running ``job`` to ``waiting`` (its measurement waits for a worker),
    or a waiting one back to ``running``; its start time stays (the job never stopped).

    Returns:
        Whether the state changed: False when it already was the one asked for, or when the
        job is neither running nor waiting (it ended, or it has not started: nothing to switch).
    """
    state = JobState.parse(job.state)
    wanted = _W if waiting else _R
    if state not in (_R, _W) or state is wanted:
        return False
    _move(s, job, wanted)
    return True


def finish(s: Session, job: Job, state: str, error: str | None = None) -> None:
    """End the locked running (or waiting) ``job``'s run ``completed``, ``failed`` or
    ``interrupted`` (the runner's end of a job), with ``error`` (``None`` clears it).

    Raises:
        JobStateError: ``state`` is not one of the three, or the job is not running or
            waiting (e.g. it was cancelled meanwhile).
        InvalidInputError: ``state`` is not a job state.
    """
    wanted = JobState.parse(state)
    current = JobState.parse(job.state)
    if wanted not in OUTCOMES or current not in (_R, _W):
        raise JobStateError(f"job {job.id} is {job.state}; a run cannot end it {wanted.value}",
                            job_id=job.id, state=job.state, wanted=wanted.value)
    _move(s, job, wanted, error=error)


def cancel(s: Session, job: Job) -> None:
    """Cancel the locked ``job`` (pending, running, waiting or interrupted): remove the trials
    it left ``running`` and move it to ``cancelled``.

    Raises:
        JobStateError: the job has ended (:func:`has_ended`).
    """
    _refuse_ended(job, _X)
    db.reset_running_trials(s, job.id)
    _move(s, job, _X)


def fail(s: Session, job: Job, error: str) -> None:
    """Fail the locked ``job`` (pending, running, waiting or interrupted) with ``error``:
    remove the trials it left ``running`` and move it to ``failed``.

    Raises:
        JobStateError: the job has ended (:func:`has_ended`).
    """
    _refuse_ended(job, _F)
    db.reset_running_trials(s, job.id)
    _move(s, job, _F, error=error)


def _refuse_ended(job: Job, wanted: JobState) -> None:
    if has_ended(job):
        raise JobStateError(f"job {job.id} is already {job.state}; it cannot become {wanted.value}",
                            job_id=job.id, state=job.state, wanted=wanted.value)
