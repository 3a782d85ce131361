"""The Celery executor: measurements of a job go to the workers of the pool it names.

A job's testbed ``pool:NAME`` is served by every ``nictune worker --pool NAME`` alive;
:attr:`CeleryExecutor.slots` is their number, so the job loop hands a GA generation or a
Bayesian batch to all of them at once. Each measurement is one task whose id is the
request's key (``nictune-JOB-TRIAL-STEP``): a redelivered or duplicated task has the same
id and the same single result, which the job loop stores once.

When the pool has no live worker the request waits in the pool's queue; the executor
reports "waiting for a worker on pool NAME" through ``on_wait`` (the service shows it as
the job's state and ``waiting_for``) and carries on when a worker appears. It says so too,
naming both brokers, when the pool's workers are alive and idle but take their requests
from another broker than the service sends to, the one way a request waits for ever while
``nictune workers`` lists idle workers.

A job that stops (cancel, shutdown) withdraws its requests no worker has started: a worker
that receives one later drops it unmeasured. A measurement in flight is waited for.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nictune.errors import InvalidInputError, MeasurementError, NictuneError
from nictune.executors._base import Executor, MeasurementWithdrawn, MeasureRequest
from nictune.executors.celery_app import MEASURE_TASK, CelerySettings, make_celery_app, pool_of, queue_name
from nictune.executors.local import LocalExecutor
from nictune.executors.pools import PoolRecord, Registry, WorkerRecord
from nictune.executors.wire import result_from_dict
from nictune.measure import TrialResult
from nictune.search_spaces import SearchSpace

if TYPE_CHECKING:
    from celery import Celery

#: ``on_wait(job_id, message)``: message while the job waits for a worker, ``None`` once it no longer does.
WaitHook = Callable[[int, "str | None"], None]


class CeleryExecutor(Executor):
    """Measures on the workers of pool ``pool``.

    Args:
        pool: the pool's name.
        app: the Celery app (:func:`~nictune.executors.celery_app.make_celery_app`).
        registry: the worker registry.
        on_wait: told when the job starts and stops waiting for a worker.
        stop: set when the job should stop; a measurement no worker has started then gives
            up (its task is withdrawn, so no worker measures it later) with
            :class:`MeasurementWithdrawn`; one in flight is waited for.
        poll_s: how often the result is looked at (the pool: every second).
        broker: the broker this service sends to, password hidden
            (:meth:`CelerySettings.broker_label`); compared with the workers' own.
        stale_s: after how many seconds a request no idle worker took counts as waiting.

    Raises:
        InvalidInputError: no worker ever joined the pool, so its fingerprint is unknown.
    """

    def __init__(self, pool: str, *, app: Celery, registry: Registry, on_wait: WaitHook | None = None,
                 stop: threading.Event | None = None, poll_s: float = 0.25, broker: str = "",
                 stale_s: float = 5.0):
        record = registry.pool(pool)
        if record is None:
            raise InvalidInputError(
                f"pool {pool!r} is unknown: no worker has joined it yet (its fingerprint comes from its workers); "
                f"start one with  nictune worker --pool {pool} --testbed ...",
                field="testbed", allowed="pool:NAME of a pool a worker joined")
        self.pool = pool
        self.testbed = f"pool:{pool}"
        self.kind = record.kind
        self.simulated = record.simulated
        self.notices = ()
        self._pinned: PoolRecord = record
        self._app = app
        self._registry = registry
        self._on_wait = on_wait
        self._stop = stop or threading.Event()
        self._poll_s = poll_s
        self._broker = broker
        self._stale_s = stale_s

    def live_workers(self) -> int:
        """Workers of the pool whose heartbeat is current (0 when the registry is unreachable)."""
        return len(self._live())

    @property
    def slots(self) -> int:
        """One per live worker of the pool (at least 1, so a job waits rather than stalls)."""
        return max(1, self.live_workers())

    def fingerprint(self) -> dict[str, Any]:
        """The pool's pinned fingerprint, with its name (a pool's results stay its own)."""
        return {"pool": self.pool, **self._pinned.fingerprint}

    def default_space(self) -> str:
        return self._pinned.default_space

    def ignored_knobs(self, space: SearchSpace) -> list[str]:
        """For a pool of simulated testbeds: what their model ignores (the pinned fingerprint
        names the profile, the same model in every worker of the pool)."""
        profile = self._pinned.fingerprint.get("profile")
        if not self.simulated or not isinstance(profile, str):
            return []
        from nictune.measure.testbeds import open_testbed

        try:
            with open_testbed(profile) as bed:
                return bed.ignored_knobs(space)
        except NictuneError:  # a profile this version does not know: nothing to say
            return []

    def measure(self, request: MeasureRequest) -> TrialResult:
        from celery.result import AsyncResult

        if request.testbed != self.testbed:
            raise MeasurementError(f"request for {request.testbed} given to the executor of {self.testbed}")
        result = AsyncResult(request.key, app=self._app)
        if result.state != "SUCCESS":  # the answer of an earlier delivery is reused as is
            self._app.send_task(MEASURE_TASK, args=[request.as_dict()], task_id=request.key,
                                queue=queue_name(self.pool))
        payload = self._wait(result, request)
        if not isinstance(payload, dict):
            raise MeasurementError(f"pool {self.pool}: unexpected task result {payload!r}")
        if not payload.get("ok"):
            raise MeasurementError(f"{payload.get('worker', 'a worker')}: {payload.get('error', 'failed')}")
        return result_from_dict(payload["result"])

    def _wait(self, result: Any, request: MeasureRequest) -> Any:
        waiting: str | None = None  # what the job was told it waits for
        withdrawn = False
        last_check = 0.0
        sent = time.monotonic()
        try:
            while True:
                if result.ready():
                    break
                now = time.monotonic()
                if now - last_check >= 1.0:
                    last_check = now
                    reason = self._waiting_for(self._live(), request.key, now - sent)
                    if reason != waiting:
                        # The new reason first: a job whose reason changes (no worker, then a
                        # broker mismatch) stays waiting rather than flipping to running between.
                        if reason is not None:
                            self._tell(request.job_id, reason)
                        if waiting is not None:
                            self._tell(request.job_id, None)
                        waiting = reason
                    if self._stop.is_set():
                        # Withdraw first, then look: a worker publishes a request as its
                        # current one before it checks for a withdrawal, so either it is
                        # seen here (and the job waits for that measurement in flight) or it
                        # drops the request unmeasured.
                        if not withdrawn:
                            self._withdraw(request)
                            withdrawn = True
                        if not any(_current_key(w) == request.key for w in self._live()):
                            raise MeasurementWithdrawn(
                                f"job stopped before a worker of pool {self.pool} took this measurement")
                time.sleep(self._poll_s)
        finally:
            if waiting is not None:
                self._tell(request.job_id, None)
        if result.state != "SUCCESS":
            raise MeasurementError(f"pool {self.pool}: the task ended {result.state}: {result.result!r}")
        return result.result

    def _live(self) -> list[WorkerRecord]:
        """Live workers of the pool (none when the registry is unreachable)."""
        try:
            return self._registry.workers(self.pool)
        except NictuneError:
            return []

    def _waiting_for(self, workers: list[WorkerRecord], key: str, pending_s: float) -> str | None:
        """Why request ``key`` waits, in words for the job's ``waiting_for``; ``None`` if it does not.

        Besides an empty pool: a request no idle worker has taken for ``stale_s`` seconds,
        when every live worker of the pool takes its requests from another broker (a worker
        and a service configured differently; otherwise the job would wait in silence).
        """
        if not workers:
            return f"waiting for a worker on pool {self.pool}"
        if (self._broker and pending_s >= self._stale_s
                and all(w.state == "idle" and w.broker and w.broker != self._broker for w in workers)):
            brokers = ", ".join(sorted({w.broker for w in workers}))
            return (f"waiting for a worker on pool {self.pool}: its {len(workers)} live worker(s) take requests "
                    f"from {brokers}, but this service sends them to {self._broker}; start the workers with "
                    f"the service's broker (--broker or NICTUNE_BROKER_URL)")
        return None

    def _withdraw(self, request: MeasureRequest) -> None:
        """Make sure no worker measures a request nobody waits for any more."""
        with contextlib.suppress(NictuneError):
            self._registry.cancel(request.key)

    def _tell(self, job_id: int, message: str | None) -> None:
        if self._on_wait is not None:
            self._on_wait(job_id, message)


def _current_key(worker: WorkerRecord) -> str | None:
    current = worker.current or {}
    key = current.get("key")
    return key if isinstance(key, str) else None


class ExecutorFactory:
    """Opens a job's executor: ``pool:NAME`` through Celery, any other testbed locally.

    One per service: it holds the Celery app and the registry connection. :meth:`for_job`
    adds a job's hooks (waiting notices, stop).

    Args:
        settings: broker and result backend; ``None`` means local only.
    """

    def __init__(self, settings: CelerySettings | None = None, *, on_wait: WaitHook | None = None,
                 stop: threading.Event | None = None, _shared: tuple[Celery, Registry] | None = None):
        self.settings = settings
        self.on_wait = on_wait
        self.stop = stop
        if _shared is not None:
            self._app, self._registry = _shared
        elif settings is not None:
            self._app = make_celery_app(settings)
            self._registry = Registry(settings.backend_url(), settings.key_prefix)

    @property
    def registry(self) -> Registry | None:
        return self._registry if self.settings is not None else None

    def for_job(self, *, on_wait: WaitHook | None = None, stop: threading.Event | None = None) -> ExecutorFactory:
        """The same factory, reporting to ``on_wait`` and stopping with ``stop``."""
        shared = (self._app, self._registry) if self.settings is not None else None
        return ExecutorFactory(self.settings, on_wait=on_wait, stop=stop, _shared=shared)

    def __call__(self, testbed: str, noise: float | None = None) -> Executor:
        pool = pool_of(testbed)
        if pool is None:
            return LocalExecutor(testbed, noise=noise)
        if self.settings is None:
            raise InvalidInputError(f"testbed {testbed!r} names a pool, but this service measures locally",
                                    field="testbed", allowed="start the service with --executor celery")
        # ``noise`` is ignored for a pool: each worker opened its testbed with its own, and the
        # job loop passes back what the pinned fingerprint says (a client cannot set it: the
        # service accepts noise for sim:* testbeds only).
        return CeleryExecutor(pool, app=self._app, registry=self._registry, on_wait=self.on_wait, stop=self.stop,
                              broker=self.settings.broker_label())

    def close(self) -> None:
        if self.settings is not None:
            self._registry.close()
            self._app.close()
