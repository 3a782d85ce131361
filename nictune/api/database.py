"""The service's two database engines, one for writes, one for reads; and the health check's probe.

nictune's engines start every SQLite transaction with ``BEGIN IMMEDIATE`` (the write
lock), which keeps the job loop's read-modify-write transactions safe but would make
every GET wait for every other request and for the trial being written. Reads get an
engine of their own whose SQLite transactions begin ``DEFERRED``: in WAL mode they read
a consistent snapshot without any lock. On PostgreSQL the two engines differ only in
their pools.
"""

from __future__ import annotations

import asyncio
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import Engine, event

from nictune.db import current_revision, make_engine
from nictune.db import session as db_session
from nictune.errors import StorageError

#: Connections the read engine keeps (and may add) for concurrent requests.
READ_POOL = {"pool_size": 10, "max_overflow": 20}


def _begin_deferred(connection: Any) -> None:
    connection.exec_driver_sql("BEGIN")


def read_engine(url: str) -> Engine:
    """An engine for read-only work on ``url`` (the schema must already be migrated)."""
    engine = make_engine(url, **READ_POOL)
    if engine.dialect.name == "sqlite":
        # A private hook of nictune.db: a make_engine(read_only=True) there would be cleaner.
        event.remove(engine, "begin", db_session._on_sqlite_begin)
        event.listen(engine, "begin", _begin_deferred)
    return engine


class DatabaseProbe:
    """``/healthz``'s check of the database, off the request threads.

    The check (reading the schema revision) runs on a thread of its own, not in the pool
    that serves requests: while a flood of requests keeps every request thread busy, the
    health check still answers. One check serves every ``/healthz`` request for ``ttl``
    seconds, and concurrent requests share the check in flight.

    Args:
        engine: the database to check.
        ttl: seconds a result is reused.
        timeout: seconds after which an unanswered check counts as a failure.
    """

    def __init__(self, engine: Engine, ttl: float = 1.0, timeout: float = 5.0):
        self.engine = engine
        self.ttl = ttl
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nictune-health")
        self._checked_at = -math.inf
        self._revision: str | None = None
        self._pending: asyncio.Future[str | None] | None = None

    async def revision(self) -> str | None:
        """The database's schema revision, checked at most ``ttl`` seconds ago.

        Raises:
            StorageError: the database did not answer (within ``timeout`` seconds).
        """
        if time.monotonic() - self._checked_at <= self.ttl:
            return self._revision
        if self._pending is None or self._pending.done():
            self._pending = asyncio.wrap_future(self._pool.submit(current_revision, self.engine))
        pending = self._pending
        try:
            revision = await asyncio.wait_for(asyncio.shield(pending), self.timeout)
        except TimeoutError:
            raise StorageError(f"the database did not answer within {self.timeout:g} s") from None
        if pending is self._pending:
            self._revision, self._checked_at = revision, time.monotonic()
        return revision

    def close(self) -> None:
        """Stop the probe's thread (a check in flight finishes on its own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
