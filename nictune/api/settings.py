"""Settings of the REST service: one pydantic-settings class, read from the environment.

Every field of its own can be set as ``NICTUNE_API_<FIELD>`` (``NICTUNE_API_PORT=9000``) or
passed to :class:`ApiSettings` directly (``nictune serve`` does that with its options). It
builds on :class:`~nictune.settings.CommonSettings`, whose fields keep their names
(``NICTUNE_DB``, ``NICTUNE_LOCK_DIR``, ``NICTUNE_STATE_DIR``): the database defaults to the
CLI's (``$NICTUNE_DB`` or the per-user file), so a job started from either is visible from
both.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from nictune.db import default_url
from nictune.settings import CommonSettings

if TYPE_CHECKING:
    from nictune.executors.celery_app import CelerySettings


class ApiSettings(CommonSettings):
    """How the service listens, where it keeps its history and how it runs jobs.

    It also has the fields every process reads (``db``, ``lock_dir``, ``state_dir``:
    :class:`~nictune.settings.CommonSettings`), under their own names (``NICTUNE_DB`` ...).

    Attributes:
        host: address to bind; loopback unless the operator says otherwise.
        port: TCP port.
        db_url: SQLAlchemy URL of the history; ``None`` means the CLI's default database
            (``db``, i.e. ``$NICTUNE_DB``, or the per-user file).
        testbeds: non-simulated testbeds clients may submit jobs to (``veth``, pair YAML
            files). Simulated testbeds are always allowed; nothing else is, so a client can
            never make the service open a file or a host it names.
        inline_spaces_on_hosts: accept inline space definitions for non-simulated testbeds.
            Off by default: a built-in space's knobs were reviewed, a client's were not
            (their targets are still checked against the appliers' rules before any host
            command).
        max_budget: largest ``budget`` a client may ask for.
        max_pending_jobs: jobs one token may have pending or running at once (429 above).
        max_streams_per_token: event streams one token may have open at once (429 above).
        max_streams: event streams the service keeps open at once, all tokens together.
        max_requests_per_token: requests of one token in progress at once, event streams
            aside (429 above).
        max_requests: requests in progress at once, all tokens together, event streams
            aside (429 above).
        request_threads: worker threads that serve requests (database reads, JSON); a
            flood waits for one of them instead of each request adding a thread that
            competes for the CPU (and Python's interpreter lock) with every other.
            ``None``: one per CPU, between 2 and 8 (the handlers hold the interpreter lock while
            they compute: more threads than CPUs only take turns at it).
        token_recheck_s: how often an open event stream checks that its token still works
            (it ends when the token is revoked or expires).
        token_cache_s: how long a request trusts a token found valid without asking the
            database again: a revoked token is refused at most this long after ``nictune
            token revoke`` (expiry is checked on every request). 0: ask every time.
        resume_jobs: resume the service's unfinished jobs at start.
        events_poll_s: how often an event stream looks for trials written by another
            process (trials of this process wake it at once).
        events_keepalive_s: idle time after which an event stream sends a comment line.
        events_max_s: close an event stream after this long (clients reconnect with
            ``Last-Event-ID``); ``None`` keeps it open until the job ends.
        max_body_bytes: largest request body accepted.
        metrics_public: serve ``GET /metrics`` without a token (what a Prometheus scrape
            config expects); the figures are counts and seconds, no job content. Off by default.
        shutdown_grace_s: how long a stopping service waits for trials in flight.
        executor: ``local`` (measure in this process, one lane per testbed) or ``celery``
            (jobs on ``pool:NAME`` go to that pool's ``nictune worker`` processes; other
            testbeds are still measured locally).
        broker_url: Celery broker for ``celery``; default ``$NICTUNE_BROKER_URL`` or the
            local Redis.
        result_backend: Redis for results and the worker registry; default
            ``$NICTUNE_RESULT_BACKEND`` or the broker.
    """

    model_config = SettingsConfigDict(env_prefix="NICTUNE_API_")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    db_url: str | None = None
    testbeds: list[str] = Field(default_factory=list)
    inline_spaces_on_hosts: bool = False
    max_budget: int = Field(default=10_000, ge=1)
    max_pending_jobs: int = Field(default=10, ge=1)
    max_streams_per_token: int = Field(default=8, ge=1)
    max_streams: int = Field(default=32, ge=1)
    max_requests_per_token: int = Field(default=8, ge=1)
    max_requests: int = Field(default=64, ge=1)
    request_threads: int | None = Field(default=None, ge=2, le=200)
    token_recheck_s: float = Field(default=5.0, gt=0.0)
    token_cache_s: float = Field(default=1.0, ge=0.0)
    resume_jobs: bool = True
    events_poll_s: float = Field(default=1.0, gt=0.0)
    events_keepalive_s: float = Field(default=15.0, gt=0.0)
    events_max_s: float | None = Field(default=None, gt=0.0)
    max_body_bytes: int = Field(default=1_000_000, ge=1024)
    metrics_public: bool = False
    shutdown_grace_s: float = Field(default=30.0, ge=0.0)
    executor: Literal["local", "celery"] = "local"
    broker_url: str | None = None
    result_backend: str | None = None

    def celery_settings(self) -> CelerySettings:
        """Broker and result backend of the Celery executor (``NICTUNE_*`` plus this service's overrides)."""
        from nictune.executors.celery_app import CelerySettings

        overrides = {k: v for k, v in (("broker_url", self.broker_url), ("result_backend", self.result_backend))
                     if v is not None}
        return CelerySettings(**overrides).check()  # type: ignore[arg-type]

    def threads(self) -> int:
        """The request threads: ``request_threads``, or one per CPU between 2 and 8."""
        return self.request_threads or max(2, min(8, (os.cpu_count() or 1)))

    def database_url(self) -> str:
        """The database to use: ``db_url`` or the CLI's default (``db``, else the per-user file)."""
        return self.db_url or default_url(self)
