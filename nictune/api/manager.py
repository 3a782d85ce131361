"""The job runner inside the service: one lane per testbed, jobs resumed at start.

Jobs run through :class:`nictune.jobs.JobRunner`, the loop the CLI uses. Each testbed
has a lane (a FIFO and one worker thread), so jobs on different testbeds run
concurrently while jobs on the same testbed wait for each other: a testbed is measured
by one trial at a time.

With the Celery executor (``settings.executor == "celery"``) a job on ``pool:NAME`` has
its measurements done by that pool's workers, as many at a time as the pool has live
workers. While the pool has none the job's state is ``waiting`` (and
:meth:`JobManager.waiting_for` says for what); it turns ``running`` again when a worker
appears.

Jobs the service accepted carry ``stats["origin"] = "api"``. At start the service
resumes those it left unfinished (pending, running after a crash, or interrupted by a
stop); the runner replays their stored trials, so no completed trial is lost or
measured again, and it removes the trial a crash left ``running``. Jobs started by the
CLI are never taken over.

Every trial of a job it runs is logged (``nictune.jobs``, INFO) as the line ``optimize`` prints
in a pipe, and so is every notice of the job (final race, warm start, settings restored).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.engine import Engine as DbEngine

from nictune import db
from nictune.api.notifier import Notifier
from nictune.api.settings import ApiSettings
from nictune.errors import JobError, NictuneError
from nictune.executors.celery_executor import ExecutorFactory
from nictune.jobs import JobRunner, JobSpec, TrialEvent, create_job, lifecycle
from nictune.jobs.trial_log import LineContext, log_notice, log_trial

log = logging.getLogger("nictune.api.jobs")

ORIGIN_KEY = "origin"
CANCEL_KEY = "cancel_requested"
#: The states of a job whose run has ended (:data:`nictune.jobs.lifecycle.ENDED`).
FINAL_STATES = frozenset(state.value for state in lifecycle.ENDED)
#: A job in one of these states counts against its token's ``max_pending_jobs``.
PENDING_STATES = ("pending", "running", "waiting")
_RESUMABLE = ("pending", "running", "waiting", "interrupted")

#: Called by the job's thread after each new trial (not one replayed on resume), with the
#: trial and the job's stop event: what waits should wait on that event, so a cancel or a
#: shutdown stays prompt. Tests pace simulated jobs with one (``stop.wait(0.05)``).
TrialHook = Callable[[TrialEvent, threading.Event], None]


class TooManyPendingJobs(NictuneError):
    """A token has as many jobs waiting or running as the service allows it.

    Attributes:
        token: the token's name.
        pending: its jobs pending, running or waiting.
        limit: the service's ``max_pending_jobs``.
    """

    def __init__(self, token: str, pending: int, limit: int):
        super().__init__(f"token {token!r} has {pending} jobs pending or running; this service allows {limit} "
                         "per token: wait for one to end, or cancel one")
        self.token, self.pending, self.limit = token, pending, limit


@dataclass
class _Lane:
    """The jobs waiting for one testbed, and the thread that runs them one at a time."""

    testbed: str
    queue: deque[int] = field(default_factory=deque)
    current: int | None = None
    thread: threading.Thread | None = None


class JobManager:
    """Runs the service's jobs in the background.

    Args:
        dbe: the database engine.
        settings: the service settings (``max_pending_jobs``, ``shutdown_grace_s`` ...).
        notifier: told about every trial and state change.
        trial_hook: called after every new trial of every job (:data:`TrialHook`).
    """

    def __init__(self, dbe: DbEngine, settings: ApiSettings, notifier: Notifier, *,
                 trial_hook: TrialHook | None = None):
        self.dbe = dbe
        self.settings = settings
        self.notifier = notifier
        self.trial_hook = trial_hook
        self._cond = threading.Condition()
        self._lanes: dict[str, _Lane] = {}
        self._stops: dict[int, threading.Event] = {}
        self._cancelled: set[int] = set()
        self._waiting: dict[int, str] = {}
        self._wait_counts: dict[int, int] = {}
        self._closing = False
        # Serialises the pending-jobs count of one submission with the next one's, so that
        # two requests at once cannot both take the last slot of a token.
        self._submit_lock = threading.Lock()
        self._reserved: dict[str, int] = {}
        self.executors = ExecutorFactory(settings.celery_settings() if settings.executor == "celery" else None)

    # ------------------------------------------------------------------ public
    def submit(self, spec: JobSpec, submitted_by: str | None = None) -> int:
        """Validate and store ``spec`` as a job, queue it on its testbed's lane; return its id.

        Args:
            submitted_by: the name of the token that submits it: recorded with the job, and
                held to ``settings.max_pending_jobs`` jobs pending or running at once.

        Raises:
            TooManyPendingJobs: the token is at its limit (nothing is stored).
            InvalidInputError: the spec is invalid (nothing is stored).
            StorageError: the database failed.
        """
        if submitted_by is not None:
            with self._submit_lock:
                pending = self.pending_jobs(submitted_by) + self._reserved.get(submitted_by, 0)
                if pending >= self.settings.max_pending_jobs:
                    raise TooManyPendingJobs(submitted_by, pending, self.settings.max_pending_jobs)
                self._reserved[submitted_by] = self._reserved.get(submitted_by, 0) + 1
        try:
            job_id = create_job(self.dbe, spec, executor_factory=self.executors)
            with db.session_scope(self.dbe) as s:
                job = db.get_job(s, job_id, for_update=True)
                job.stats[ORIGIN_KEY] = "api"
                job.submitted_by = submitted_by
        finally:
            if submitted_by is not None:
                with self._submit_lock:
                    self._reserved[submitted_by] -= 1
        self._enqueue(job_id, spec.testbed)
        return job_id

    def pending_jobs(self, token: str) -> int:
        """How many jobs the token called ``token`` submitted are pending, running or waiting."""
        with db.session_scope(self.dbe) as s:
            return int(s.scalar(select(func.count()).select_from(db.Job).where(
                db.Job.submitted_by == token, db.Job.state.in_(PENDING_STATES))) or 0)

    def resume_unfinished(self) -> list[int]:
        """Queue every unfinished job of the service, oldest first; return their ids."""
        resumed: list[int] = []
        with db.session_scope(self.dbe) as s:
            jobs = s.scalars(select(db.Job).where(db.Job.state.in_(_RESUMABLE)).order_by(db.Job.id)).all()
            pending = [(job.id, job.testbed.name, bool(job.stats.get(CANCEL_KEY)))
                       for job in jobs if job.stats.get(ORIGIN_KEY) == "api"]
        for job_id, testbed, cancel in pending:
            if cancel:
                self._mark_cancelled(job_id)
                continue
            self._enqueue(job_id, testbed)
            resumed.append(job_id)
        if resumed:
            log.info("resuming jobs %s", ", ".join(map(str, resumed)))
        return resumed

    def cancel(self, job_id: int, cancelled_by: str | None = None) -> bool:
        """Cancel a job of this service that has not ended.

        A queued job is cancelled at once. A running job stops after the trial in flight
        (its settings restored) and then ends ``cancelled``.

        Args:
            cancelled_by: the name of the token that cancels it, recorded with the job.

        Returns:
            True when the job is still stopping, False when it is already cancelled.

        Raises:
            JobError: the job has ended, or runs in another process.
        """
        with self._cond:
            stop = self._stops.get(job_id)
            if stop is not None:
                self._cancelled.add(job_id)
                stop.set()
            else:
                for lane in self._lanes.values():
                    if job_id in lane.queue:
                        lane.queue.remove(job_id)
        if stop is not None:
            with db.session_scope(self.dbe) as s:
                job = db.get_job(s, job_id, for_update=True)
                job.stats[CANCEL_KEY] = True
                job.cancelled_by = cancelled_by
            self.notifier.notify(job_id)
            return True
        with db.session_scope(self.dbe) as s:
            job = db.get_job(s, job_id)
            if job.state in FINAL_STATES:
                raise JobError(f"job {job_id} is already {job.state}")
            if job.state == "running" and job.stats.get(ORIGIN_KEY) != "api":
                raise JobError(f"job {job_id} runs in another process (started from the CLI); stop it there")
        self._mark_cancelled(job_id, cancelled_by)
        return False

    def queue_position(self, job_id: int) -> int | None:
        """1 for the next job of its testbed, 2 for the one after ...; None unless queued."""
        with self._cond:
            for lane in self._lanes.values():
                if job_id in lane.queue:
                    return lane.queue.index(job_id) + 1
        return None

    def is_active(self, job_id: int) -> bool:
        """Whether the job is queued or running in this service."""
        with self._cond:
            return job_id in self._stops or any(job_id in lane.queue for lane in self._lanes.values())

    def waiting_for(self, job_id: int) -> str | None:
        """What a ``waiting`` job waits for ("a worker on pool lab"), else ``None``."""
        with self._cond:
            return self._waiting.get(job_id)

    def workers(self) -> dict[str, object]:
        """The executor and, for Celery, the live workers and pinned pools.

        Raises:
            NictuneError: the worker registry cannot be read.
        """
        registry = self.executors.registry
        if registry is None:
            return {"executor": "local", "workers": [], "pools": []}
        return {"executor": "celery", **registry.overview()}

    def cancel_requested(self, job_id: int) -> bool:
        """Whether a cancel of this running job was accepted and it has not ended yet."""
        with self._cond:
            return job_id in self._cancelled

    def counts(self) -> dict[str, int]:
        """Jobs queued and running in this process (for /metrics)."""
        with self._cond:
            return {"queued": sum(len(lane.queue) for lane in self._lanes.values()), "running": len(self._stops)}

    def shutdown(self) -> None:
        """Stop every lane: running jobs end ``interrupted`` after their trial in flight.

        They resume at the next start. Waits up to ``shutdown_grace_s`` for the trials.
        """
        with self._cond:
            self._closing = True
            for stop in self._stops.values():
                stop.set()
            threads = [lane.thread for lane in self._lanes.values() if lane.thread is not None]
            self._cond.notify_all()
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self.executors.close()

    # ---------------------------------------------------------------- internal
    def _enqueue(self, job_id: int, testbed: str) -> None:
        with self._cond:
            if self._closing:
                return  # stays pending; the next start resumes it
            lane = self._lanes.get(testbed)
            if lane is None:
                lane = self._lanes[testbed] = _Lane(testbed)
            lane.queue.append(job_id)
            if lane.thread is None:
                lane.thread = threading.Thread(target=self._work, args=(lane,), daemon=True,
                                               name=f"nictune-lane-{testbed}")
                lane.thread.start()
            self._cond.notify_all()
        self.notifier.notify(job_id)

    def _work(self, lane: _Lane) -> None:
        while True:
            with self._cond:
                while not lane.queue and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                job_id = lane.queue.popleft()
                lane.current = job_id
                stop = self._stops[job_id] = threading.Event()
            try:
                self._run(job_id, stop)
            except Exception:  # a lane must survive anything one job does
                log.exception("job %s: unexpected error in its lane", job_id)
            finally:
                with self._cond:
                    lane.current = None
                    self._stops.pop(job_id, None)
                    self._cancelled.discard(job_id)
                self.notifier.notify(job_id)

    def _run(self, job_id: int, stop: threading.Event) -> None:
        with db.session_scope(self.dbe) as s:
            job = s.get(db.Job, job_id)
            if job is None or job.state in FINAL_STATES:
                return
            cancel = bool(job.stats.get(CANCEL_KEY))
        if cancel:
            self._mark_cancelled(job_id)
            return
        factory = self.executors.for_job(on_wait=self._on_wait, stop=stop)
        try:
            lines = LineContext.of_job(self.dbe, job_id)
            runner = JobRunner(self.dbe, on_trial=lambda event: self._on_trial(event, stop, lines), stop=stop,
                               executor_factory=factory, on_notice=lambda text: log_notice(job_id, text))
            outcome = runner.run(job_id)
        except NictuneError as exc:
            log.warning("job %s failed: %s", job_id, exc)
            self._fail_if_unfinished(job_id, str(exc))
            return
        except Exception as exc:
            log.exception("job %s failed", job_id)
            self._fail_if_unfinished(job_id, f"internal error: {exc}")
            return
        finally:
            with self._cond:
                self._waiting.pop(job_id, None)
                self._wait_counts.pop(job_id, None)
        with self._cond:
            cancelled = job_id in self._cancelled
        if outcome.state == "interrupted" and cancelled:
            self._mark_cancelled(job_id)
        log.info("job %s ended %s after %d trials", job_id, "cancelled" if cancelled else outcome.state,
                 outcome.trials)

    def _on_wait(self, job_id: int, message: str | None) -> None:
        """A measurement of the job started (``message``) or stopped (``None``) waiting for a worker.

        Several measurements of a batch may wait at once: the job is ``waiting`` while any does.
        """
        with self._cond:
            before = self._waiting.get(job_id)
            count = self._wait_counts.get(job_id, 0) + (1 if message is not None else -1)
            self._wait_counts[job_id] = max(count, 0)
            if message is not None:
                self._waiting[job_id] = message
            elif count <= 0:
                self._waiting.pop(job_id, None)
            reason = self._waiting.get(job_id)
            reason_changed = reason != before
            wanted = "waiting" if count > 0 else "running"
            stop = self._stops.get(job_id)
            if wanted == "running" and stop is not None and stop.is_set():
                return  # it stopped waiting because it is stopping: not "running again"
        # Only the state: the runner owns ``stats`` and writes it concurrently.
        with db.session_scope(self.dbe) as s:
            job = lifecycle.lock(s, job_id)
            if not lifecycle.set_waiting(s, job, wanted == "waiting"):  # already so, or not running
                if job.state == wanted == "waiting" and reason_changed:  # still waiting, for something else now
                    log.info("job %s: %s", job_id, reason)
                    self.notifier.notify(job_id)
                return
        log.info("job %s: %s", job_id, message or "a worker is back: running")
        self.notifier.notify(job_id)

    def _on_trial(self, event: TrialEvent, stop: threading.Event, lines: LineContext) -> None:
        self.notifier.notify(event.job_id)
        log_trial(event, lines)
        if self.trial_hook is not None and event.source != "replayed":
            self.trial_hook(event, stop)

    def _mark_cancelled(self, job_id: int, cancelled_by: str | None = None) -> None:
        with db.session_scope(self.dbe) as s:
            job = lifecycle.lock(s, job_id)
            if not lifecycle.has_ended(job):
                lifecycle.cancel(s, job)
                job.stats[CANCEL_KEY] = True
                if cancelled_by is not None:
                    job.cancelled_by = cancelled_by
        self.notifier.notify(job_id)

    def _fail_if_unfinished(self, job_id: int, error: str) -> None:
        with db.session_scope(self.dbe) as s:
            job = lifecycle.lock(s, job_id)
            if not lifecycle.has_ended(job):
                lifecycle.fail(s, job, error)
