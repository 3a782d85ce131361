"""The measurement worker: a Celery worker bound to one testbed (``nictune worker``).

Order at start: open the testbed (which replays an apply journal a crash left, so the
pair's settings are restored) -> join the pool (pin or check its fingerprint) -> publish a
heartbeat -> only then consume the pool's queue. One trial at a time (solo pool, the trial
runs in the main thread so its SIGINT/SIGTERM guard works), nothing prefetched, the task
acknowledged after the trial returned (its restore done).

Per-trial time limit: SIGALRM raises :class:`TrialTimeLimit` inside the trial, which
restores the settings and fails the measurement; an alarm that arrives while the trial
is restoring waits until the restore is over.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import FrameType
from typing import TYPE_CHECKING, Any

from nictune.errors import InvalidInputError, NictuneError
from nictune.executors._base import MeasureRequest
from nictune.executors.celery_app import MEASURE_TASK, POOL_PREFIX, CelerySettings, check_pool_name, queue_name
from nictune.executors.local import LocalExecutor
from nictune.executors.pools import Registry, WorkerRecord, now_iso
from nictune.executors.wire import result_to_dict
from nictune.measure.trial.journal import pid_alive

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger("nictune.worker")

#: A worker refuses a time limit closer than this to the broker's visibility timeout: the
#: broker would hand a trial that is still running to a second worker.
VISIBILITY_MARGIN_S = 5.0


class TrialTimeLimit(BaseException):
    """Raised in a trial that ran past the worker's time limit (a BaseException, so the
    trial's own ``except Exception`` does not swallow it; its restore still runs)."""


def _restoring(frame: FrameType | None) -> bool:
    from nictune.measure.trial.transaction import Trial

    while frame is not None:
        if frame.f_code is Trial._restore.__code__:
            return True
        frame = frame.f_back
    return False


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`TrialTimeLimit` in the main thread after ``seconds`` (not during a restore)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if _restoring(frame):
            signal.setitimer(signal.ITIMER_REAL, 0.5)  # let the restore finish first
            return
        raise TrialTimeLimit(f"the trial ran past the worker's time limit of {seconds:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def worker_id(pool: str, testbed: str, host: str | None = None) -> str:
    """The worker's registry id and Celery node name: ``nictune-POOL-TESTBED@HOST``."""
    bed = re.sub(r"[^A-Za-z0-9]+", "-", testbed.rsplit("/", 1)[-1]).strip("-") or "testbed"
    return f"nictune-{pool}-{bed}@{host or socket.gethostname()}"


@dataclass
class WorkerConfig:
    """How ``nictune worker`` was started."""

    testbed: str
    pool: str
    time_limit_s: float
    settings: CelerySettings
    loglevel: str = "WARNING"

    def check(self) -> WorkerConfig:
        """Validate before anything is opened.

        Raises:
            InvalidInputError: naming the option at fault.
        """
        check_pool_name(self.pool)
        self.settings.check()
        if self.time_limit_s <= 0:
            raise InvalidInputError(f"time limit must be positive, got {self.time_limit_s}",
                                    field="time_limit", allowed="seconds > 0")
        redis_broker = self.settings.broker_url.startswith(("redis://", "rediss://"))
        if redis_broker and self.time_limit_s + VISIBILITY_MARGIN_S > self.settings.visibility_timeout_s:
            raise InvalidInputError(
                f"time limit {self.time_limit_s:g} s is too close to the broker's visibility timeout "
                f"{self.settings.visibility_timeout_s:g} s: a running trial would be handed to another worker",
                field="time_limit", allowed=f"at most {self.settings.visibility_timeout_s - VISIBILITY_MARGIN_S:g} s "
                "(or raise NICTUNE_VISIBILITY_TIMEOUT_S)")
        return self


class WorkerState:
    """The worker's record, kept current by the task and published by the heartbeat thread."""

    def __init__(self, registry: Registry, record: WorkerRecord, heartbeat_s: float):
        self.registry = registry
        self.record = record
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="nictune-heartbeat")

    def update(self, **changes: Any) -> None:
        """Change the record and publish it at once."""
        with self._lock:
            self.record = replace(self.record, **changes)
        self.publish()

    def publish(self) -> None:
        with self._lock:
            record = replace(self.record)
        try:
            self.registry.publish(record, ttl_s=3 * self.heartbeat_s)
        except NictuneError as exc:  # the broker may come back; the next beat retries
            log.warning("%s", exc)

    def start(self) -> None:
        self.publish()
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self.publish()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            self.registry.remove(self.record.worker_id)
        except NictuneError as exc:
            log.warning("%s", exc)


def register_measure_task(app: Celery, executor: LocalExecutor, state: WorkerState, cfg: WorkerConfig) -> None:
    """Define the ``nictune.measure`` task of this worker."""
    from celery.exceptions import Ignore, Reject

    expected = f"{POOL_PREFIX}{cfg.pool}"

    @app.task(name=MEASURE_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)
    def measure(self: Any, raw: dict[str, Any]) -> dict[str, Any]:
        from celery.worker import state as celery_state

        key = self.request.id
        if self.AsyncResult(key).state == "SUCCESS":
            raise Ignore()  # a duplicate of a request already answered: keep the stored answer
        redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
        me = state.record.worker_id
        try:
            request = MeasureRequest.from_dict(raw)
        except TypeError as exc:
            return {"ok": False, "error": f"malformed request: {exc}", "worker": me}
        if request.testbed != expected:
            return {"ok": False, "error": f"request for {request.testbed} reached {me}, which serves {expected}",
                    "worker": me}
        state.update(state="busy", current={"key": key, "job_id": request.job_id, "trial_id": request.trial_id,
                                            "step": request.step, "since": now_iso()})
        try:
            if state.registry.withdrawn(key):
                # Its job no longer waits for it. Checked only after the request is published
                # as this worker's current one: a job that withdraws a request, then finds no
                # worker with it as current, knows that none will measure it
                # (CeleryExecutor._wait).
                log.warning("%s: request %s was withdrawn by its job; dropped unmeasured", me, key)
                raise Ignore()
            # Trials of other workers on this testbed or on the machine-wide settings this one
            # changes wait inside executor.measure (nictune.measure.trial.locks).
            with time_limit(cfg.time_limit_s):
                result = executor.measure(request)
        except TrialTimeLimit as exc:
            return {"ok": False, "error": f"{exc}; settings restored", "worker": me}
        except NictuneError as exc:
            # Celery's own test: the flags hold an exit code, and a warm stop's is 0.
            if any(flag is not None and flag is not False
                   for flag in (celery_state.should_stop, celery_state.should_terminate)):
                # The worker is being stopped (SIGTERM during the trial, settings restored):
                # give the request back so another worker of the pool measures it.
                log.warning("%s: stopping; request %s goes back to the queue", me, key)
                raise Reject(str(exc), requeue=True) from exc
            return {"ok": False, "error": str(exc), "worker": me}
        finally:
            state.update(state="idle", current=None)
        state.update(measured=state.record.measured + 1)
        body = result_to_dict(result)
        note = f"measured by {me} on {executor.testbed}"
        body["notes"].append(note + (" (redelivered: an earlier delivery did not finish)" if redelivered else ""))
        return {"ok": True, "result": body, "worker": me, "testbed": executor.testbed,
                "redelivered": redelivered}


def _quiet_root_warning() -> None:
    """Celery warns a worker running as root ("absolutely not recommended"). A measurement
    worker is root on purpose: it changes NIC and kernel settings of its pair. It accepts JSON
    only, so Celery's refusal for root (pickle) does not apply; the warning told the operator
    nothing they could act on."""
    import warnings

    from celery.exceptions import SecurityWarning

    warnings.filterwarnings("ignore", message="You're running the worker with superuser privileges",
                            category=SecurityWarning)


def run_worker(cfg: WorkerConfig) -> int:
    """Open the testbed, join the pool, then consume the pool's queue until stopped.

    Returns:
        the Celery worker's exit code.

    Raises:
        InvalidInputError: bad options or a pool pinned to another fingerprint.
        NictuneError: the testbed or the registry could not be opened.
    """
    from celery import signals

    from nictune.executors.celery_app import make_celery_app

    cfg.check()
    app = make_celery_app(cfg.settings)
    # Opening replays the journal a crash left: the pair is restored before any new trial.
    executor = LocalExecutor(cfg.testbed)
    state: WorkerState | None = None
    try:
        for notice in executor.notices:
            log.warning("%s", notice)
        node = worker_id(cfg.pool, executor.testbed)
        broker = cfg.settings.broker_label()
        record = WorkerRecord(worker_id=node, hostname=socket.gethostname(), pid=os.getpid(),
                              testbed=executor.testbed, pool=cfg.pool, kind=executor.kind,
                              fingerprint=executor.fingerprint(), broker=broker, started_at=now_iso(),
                              notices=list(executor.notices))
        registry = Registry(cfg.settings.backend_url(), cfg.settings.key_prefix)
        twin = next((w for w in registry.workers(cfg.pool) if w.worker_id == node), None)
        if twin is not None and not pid_alive(twin.pid):  # the node name includes this host
            twin = None  # this worker's own predecessor, killed: its record has not expired yet
        if twin is not None:
            # Same node name: their registry records (and Celery's) would overwrite each other.
            raise InvalidInputError(
                f"worker {node} is already running (pid {twin.pid} on {twin.hostname}, broker {twin.broker or '?'}): "
                f"one worker per testbed and pool; stop it first (nictune workers lists them)",
                field="testbed", allowed="a testbed no live worker of this pool measures on")
        registry.join(record, simulated=executor.simulated, default_space=executor.default_space())
        state = WorkerState(registry, record, cfg.settings.heartbeat_s)
        state.start()
        register_measure_task(app, executor, state, cfg)
        ready_state = state

        def on_ready(**_: Any) -> None:
            ready_state.update(state="idle")
            # The operator's sign of life (Celery itself is quiet at the default log level). To
            # the process's own stderr: Celery redirects sys.stderr to a logger by now, and the
            # line came out as "WARNING celery.redirected: ...".
            print(f"nictune worker {node}: ready, measuring on {executor.testbed} for pool:{cfg.pool} "
                  f"(broker {broker}); Ctrl-C stops it",
                  file=sys.__stderr__ or sys.stderr, flush=True)

        def on_stopping(**_: Any) -> None:
            ready_state.update(state="stopping")

        signals.worker_ready.connect(on_ready, weak=False)
        signals.worker_shutting_down.connect(on_stopping, weak=False)
        _quiet_root_warning()
        worker = app.Worker(hostname=node, queues=[queue_name(cfg.pool)], pool="solo", concurrency=1,
                            prefetch_multiplier=1, loglevel=cfg.loglevel, without_gossip=True,
                            without_mingle=True, without_heartbeat=True, quiet=True, optimization="fair")
        worker.start()
        return int(worker.exitcode or 0)
    finally:
        if state is not None:
            state.stop()
        executor.close()

