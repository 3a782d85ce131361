"""Server-sent events of a job: one ``trial`` event per finished trial, ``state`` changes, ``end``.

The stream reads trials from the database, so it follows jobs run by this service and
jobs run by the CLI alike; trials of this process wake it at once, others are found by
polling. Each trial event carries ``id: <trial number>``: a client that reconnects with
``Last-Event-ID`` (or ``?after=N``) gets exactly the trials it has not seen.

FastAPI frames the events (:func:`fastapi.sse.format_sse_event`) and its keep-alive comment;
the stream yields them as bytes for a :class:`fastapi.sse.EventSourceResponse`. It does not
yield :class:`fastapi.sse.ServerSentEvent` objects from a generator endpoint: FastAPI encodes
and sends those one by one on the event loop (500 trial events took about 110 ms of the loop
with ``data=``, 19 ms with ``raw_data`` encoded beforehand, one chunk per event), while here a
poll's trials are encoded in a worker thread and sent as one chunk (under 1 ms of the loop): a
few dozen streams catching up on a long job at once must not hold every other request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from fastapi.sse import KEEPALIVE_COMMENT, format_sse_event
from sqlalchemy import select
from sqlalchemy.engine import Engine as DbEngine
from sqlalchemy.orm import defer

from nictune.api.manager import CANCEL_KEY, FINAL_STATES, JobManager
from nictune.api.notifier import Notifier
from nictune.api.queries.jobs import completed_trials, load_job
from nictune.api.settings import ApiSettings
from nictune.api.views import best_of, clean_metrics, clean_score, config_dict, finite, recommendation_view
from nictune.db import Configuration, Trial, session_scope
from nictune.db.auth import token_gone
from nictune.errors import NictuneError
from nictune.optimizer import Goal, Score

#: Trials sent per database read.
BATCH = 500


@dataclass
class _Snapshot:
    state: str
    cancel_requested: bool
    trials: list[tuple[Trial, Configuration]]
    recommendation: dict[str, Any] | None = None
    waiting_for: str | None = None
    #: Whether this service was running or queueing the job just *before* it was read: a job
    #: the manager has let go of has its final state stored by then (a cancelled job is
    #: stored ``cancelled`` before the manager lets go), while asked after the read, the
    #: manager could have let go of a job read ``interrupted`` a moment before it was stored
    #: ``cancelled``.
    active: bool = False


@dataclass
class _Best:
    number: int
    score: Score
    metrics: dict[str, float | None]
    config_hash: str


def _recommended(stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """The job's recommendation for the ``end`` event: after the final race it may differ
    from the last trial event's best so far."""
    rec = recommendation_view(stored)
    return rec.model_dump() if rec is not None else None


def format_event(event: str, data: Any, event_id: int | None = None) -> bytes:
    """One SSE message: ``data`` as compact JSON, framed by FastAPI."""
    return format_sse_event(data_str=json.dumps(data, separators=(",", ":"), default=str), event=event,
                            id=str(event_id) if event_id is not None else None)


class JobEventStream:
    """The events of one job from trial ``after + 1`` on.

    Args:
        dbe: the database engine.
        manager: the job runner of this process (to tell a stop from an end).
        notifier: wakes the stream when this process writes a trial.
        settings: poll interval, keep-alive and maximum duration.
        job_id: the job.
        after: the last trial number the client has seen (-1 for none).
        token_id: the token the stream was opened with: checked again every
            ``settings.token_recheck_s``; the stream ends (an ``error`` event) once it is
            revoked or expired. ``None``: never checked.
        limiter: the threads the stream's database reads may use, shared by every stream
            (``None``: the request threads). A few dozen streams catching up on a long job
            at once then queue behind each other, not in front of every other request.
    """

    def __init__(self, dbe: DbEngine, manager: JobManager, notifier: Notifier, settings: ApiSettings,
                 job_id: int, after: int, token_id: int | None = None,
                 limiter: anyio.CapacityLimiter | None = None):
        self.token_id = token_id
        self.limiter = limiter
        self.dbe = dbe
        self.manager = manager
        self.notifier = notifier
        self.settings = settings
        self.job_id = job_id
        self.last = after
        self.best: _Best | None = None
        self.goal: Goal | None = None
        self.budget = 0
        self.simulated = False

    def _start(self) -> None:
        with session_scope(self.dbe) as s:
            job = load_job(s, self.job_id)
            if job is None:
                return
            self.budget = job.budget
            self.simulated = job.testbed.kind == "sim"
            try:
                self.goal = Goal.from_names(list(job.objectives), list(job.constraints))
            except NictuneError:
                self.goal = None
            if self.last >= 0:
                seen = [t for t in completed_trials(s, self.job_id) if t.number <= self.last]
                found = best_of(self.goal, seen)
                if found is not None:
                    trial, score = found
                    row = s.get(Configuration, trial.configuration_id)
                    self.best = _Best(trial.number, score, clean_metrics(trial.summary.get("metrics")),
                                      row.hash if row is not None else "")

    def _poll(self) -> _Snapshot | None:
        active = self.manager.is_active(self.job_id)
        with session_scope(self.dbe) as s:
            job = load_job(s, self.job_id)
            if job is None:
                return None
            stmt = (select(Trial, Configuration).join(Configuration, Trial.configuration_id == Configuration.id)
                    .where(Trial.job_id == self.job_id, Trial.number > self.last, Trial.state != "running")
                    .options(defer(Trial.snapshot), defer(Trial.notes))  # not sent: not decoded
                    .order_by(Trial.number).limit(BATCH))
            trials = [(t, c) for t, c in s.execute(stmt)]
            waiting_for = self.manager.waiting_for(self.job_id) if job.state == "waiting" else None
            return _Snapshot(job.state, bool(job.stats.get(CANCEL_KEY)), trials, job.stats.get("recommendation"),
                             waiting_for, active)

    def _poll_events(self) -> tuple[_Snapshot, bytes] | None:
        """:meth:`_poll` and the new trials' events, one chunk (in a worker thread: building
        and encoding hundreds of events on the event loop would hold every other request)."""
        snap = self._poll()
        if snap is None:
            return None
        messages = []
        for trial, config in snap.trials:
            messages.append(format_event("trial", self._trial_data(trial, config), trial.number))
            self.last = trial.number
        return snap, b"".join(messages)

    def _trial_data(self, trial: Trial, config: Configuration) -> dict[str, Any]:
        summary = dict(trial.summary or {})
        metrics = summary.get("metrics") or {}
        if self.goal is not None and trial.state == "completed" and metrics:
            try:
                score = self.goal.score(metrics)
            except (NictuneError, ValueError, TypeError):
                score = None
            if score is not None and score.feasible and (self.best is None or score > self.best.score):
                self.best = _Best(trial.number, score, clean_metrics(metrics), config.hash)
        best = None if self.best is None else {
            "number": self.best.number, "config_hash": self.best.config_hash, "metrics": self.best.metrics,
            "score": clean_score(self.best.score)}
        return {
            "job_id": self.job_id, "number": trial.number, "budget": self.budget, "state": trial.state,
            "source": trial.source, "config_hash": config.hash, "config": config_dict(config),
            "metrics": clean_metrics(metrics), "score": clean_score(summary.get("score")),
            "seconds": finite(summary.get("seconds")), "error": trial.error,
            "finished_at": trial.finished_at.isoformat() if trial.finished_at else None,
            "progress": {"done": trial.number + 1, "budget": self.budget}, "best": best,
            "simulated": self.simulated,
        }

    def _token_gone(self) -> str | None:
        if self.token_id is None:
            return None
        with session_scope(self.dbe) as s:
            return token_gone(s, self.token_id)

    def _ended(self, snap: _Snapshot) -> bool:
        if snap.state in FINAL_STATES:
            return True
        if snap.state == "interrupted":
            # A job this service will resume (or is cancelling) has not ended.
            return not (snap.active or snap.cancel_requested)
        return False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """Yield SSE messages until the job ends (or ``events_max_s`` passes); a comment line
        (FastAPI's keep-alive) after ``events_keepalive_s`` without one."""
        wake = self.notifier.subscribe(self.job_id)
        began = last_sent = time.monotonic()
        recheck_at = began + self.settings.token_recheck_s
        last_state: tuple[str, str | None] | None = None
        try:
            await anyio.to_thread.run_sync(self._start, limiter=self.limiter)
            while True:
                if time.monotonic() >= recheck_at:
                    gone = await anyio.to_thread.run_sync(self._token_gone, limiter=self.limiter)
                    if gone is not None:
                        yield format_event("error", {"job_id": self.job_id, "error": "unauthorized",
                                                     "message": f"the stream's token was {gone}; the stream ends"})
                        return
                    recheck_at = time.monotonic() + self.settings.token_recheck_s
                wake.clear()
                found = await anyio.to_thread.run_sync(self._poll_events, limiter=self.limiter)
                if found is None:
                    yield format_event("end", {"job_id": self.job_id, "state": "deleted"})
                    return
                snap, messages = found
                if messages:
                    yield messages
                    last_sent = time.monotonic()
                if len(snap.trials) == BATCH:
                    continue
                if (snap.state, snap.waiting_for) != last_state:
                    last_state = (snap.state, snap.waiting_for)
                    yield format_event("state", {"job_id": self.job_id, "state": snap.state,
                                                 "cancel_requested": snap.cancel_requested,
                                                 "waiting_for": snap.waiting_for})
                    last_sent = time.monotonic()
                if self._ended(snap):
                    yield format_event("end", {"job_id": self.job_id, "state": snap.state, "last": self.last,
                                               "best": _recommended(snap.recommendation)})
                    return
                if self.notifier.closed:
                    return  # the server is stopping; the client reconnects with Last-Event-ID
                if self.settings.events_max_s is not None and time.monotonic() - began > self.settings.events_max_s:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=self.settings.events_poll_s)
                if time.monotonic() - last_sent > self.settings.events_keepalive_s:
                    yield KEEPALIVE_COMMENT
                    last_sent = time.monotonic()
        finally:
            self.notifier.unsubscribe(self.job_id, wake)
