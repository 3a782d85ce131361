"""The Celery application shared by the service (which sends measurements) and the workers.

One queue per testbed pool (``nictune.pool.NAME``): a worker consumes only its pool's
queue, so a measurement goes to a testbed of the pool the job named. Tasks and results
are JSON (never pickle). The settings (:class:`CelerySettings`, what a worker process reads,
built on :class:`~nictune.settings.CommonSettings`) come from the environment
(``NICTUNE_BROKER_URL``, ``NICTUNE_RESULT_BACKEND`` ...) or are passed by ``nictune serve`` /
``nictune worker``.

Delivery guarantees: a worker acknowledges a task only after the trial returned (its
restore done: ``task_acks_late``), prefetches nothing (``worker_prefetch_multiplier=1``)
and rejects, for redelivery, a task whose worker process was lost
(``task_reject_on_worker_lost``). With Redis as the broker a message a dead worker did
not acknowledge becomes visible again after ``visibility_timeout`` seconds; with RabbitMQ
at once, when the dead worker's connection closes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import Field

from nictune.errors import InvalidInputError
from nictune.settings import CommonSettings

if TYPE_CHECKING:
    from celery import Celery

#: The task a worker runs for one :class:`~nictune.executors.MeasureRequest`.
MEASURE_TASK = "nictune.measure"
#: A job's testbed names a pool as ``pool:NAME``.
POOL_PREFIX = "pool:"
POOL_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,47}$")


def hide_password(url: str) -> str:
    """``url`` with any password replaced by ``**`` (for messages and the registry)."""
    from kombu.utils.url import maybe_sanitize_url

    return str(maybe_sanitize_url(url))


class CelerySettings(CommonSettings):
    """Where the broker and the result backend are, and how redelivery behaves: the settings
    of a worker process (and of the service's Celery executor), ``NICTUNE_<FIELD>``.

    It also has the fields every process reads (``db``, ``lock_dir``, ``state_dir``:
    :class:`~nictune.settings.CommonSettings`).

    Attributes:
        broker_url: ``redis://HOST:6379/0`` (default) or ``amqp://USER:PASS@HOST:5672//``.
        result_backend: where results and the worker registry live; Redis. Default: the
            broker URL when that is Redis.
        key_prefix: prepended to every Redis key nictune and Celery write (several
            installations, or test sessions, can share one Redis).
        visibility_timeout_s: (Redis broker) seconds after which a task that was delivered
            but not acknowledged is delivered again. Must exceed a worker's time limit, or
            a slow trial would be measured twice.
        restore_interval_s: how often a worker looks for such tasks.
        heartbeat_s: how often a worker refreshes its registry entry; it is considered
            gone after three missed beats.
    """

    broker_url: str = "redis://127.0.0.1:6379/0"
    result_backend: str | None = None
    key_prefix: str = "nictune:"
    visibility_timeout_s: float = Field(default=1800.0, gt=0)
    restore_interval_s: float = Field(default=10.0, gt=0)
    heartbeat_s: float = Field(default=2.0, gt=0)

    def broker_label(self) -> str:
        """The broker URL with any password hidden, for messages and the worker registry."""
        return hide_password(self.broker_url)

    def backend_url(self) -> str:
        """The result backend (and registry) URL.

        Raises:
            InvalidInputError: no Redis URL for it.
        """
        url = self.result_backend or self.broker_url
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise InvalidInputError(
                f"the result backend must be Redis (it also holds the worker registry), got {hide_password(url)!r}",
                field="result_backend", allowed="redis://HOST:PORT/DB (set NICTUNE_RESULT_BACKEND)")
        return url

    def check(self) -> CelerySettings:
        """Validate the URLs; returns self.

        Raises:
            InvalidInputError: naming the setting at fault.
        """
        if not self.broker_url.startswith(("redis://", "rediss://", "amqp://", "amqps://", "pyamqp://")):
            raise InvalidInputError(f"unsupported broker URL {self.broker_label()!r}", field="broker_url",
                                    allowed="redis://HOST:PORT/DB or amqp://USER:PASS@HOST:PORT/VHOST")
        self.backend_url()
        return self


def check_pool_name(name: str) -> str:
    """A pool name: ``^[a-z0-9][a-z0-9_.-]{0,47}$``.

    Raises:
        InvalidInputError: it is not.
    """
    if not isinstance(name, str) or not POOL_NAME_RE.match(name):
        raise InvalidInputError(f"pool name {name!r} is not allowed", field="pool",
                                allowed=POOL_NAME_RE.pattern)
    return name


def pool_of(testbed: str) -> str | None:
    """``NAME`` for a testbed named ``pool:NAME``, else ``None``."""
    if not testbed.startswith(POOL_PREFIX):
        return None
    return check_pool_name(testbed[len(POOL_PREFIX):])


def queue_name(pool: str) -> str:
    """The queue of a pool's workers."""
    return f"nictune.pool.{check_pool_name(pool)}"


def make_celery_app(settings: CelerySettings) -> Celery:
    """A Celery app configured for nictune (tasks are registered by the worker side)."""
    from celery import Celery

    settings.check()
    app = Celery("nictune", broker=settings.broker_url, backend=settings.backend_url(), set_as_current=False)
    broker_options: dict[str, Any] = {}
    if settings.broker_url.startswith(("redis://", "rediss://")):
        broker_options = {
            "visibility_timeout": settings.visibility_timeout_s,
            "unacked_restore_interval": settings.restore_interval_s,
            # Scan on every sweep: unacked_restore_interval alone sets the pace.
            "unacked_restore_throttle": 1,
            "global_keyprefix": settings.key_prefix,
        }
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        task_track_started=True,
        worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
        broker_transport_options=broker_options,
        result_backend_transport_options={"global_keyprefix": settings.key_prefix},
        result_expires=7 * 24 * 3600,
        result_extended=True,
        task_default_queue="nictune.default",
    )
    return app
