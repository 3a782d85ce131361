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

from sqlalchemy import Engine

from nictune.db import current_revision, make_engine
from nictune.errors import StorageError

#: Connections the read engine keeps (and may add) for concurrent requests.
READ_POOL = {"pool_size": 10, "max_overflow": 20}


def read_engine(url: str) -> Engine:
    """An engine for read-only work on ``url`` (the schema must already be migrated)."""
    return make_engine(url, read_only=True, **READ_POOL)


class DatabaseProbe:
    """``/healthz``'s check of the database, off the request threads.

    The check (reading the schema revision) runs on a thread of its own, not in the pool
    that serves requests: while a flood of requests keeps every request thread busy, the
    health check still answers. A successful check is reused for ``ttl`` seconds; after that
    the next request starts a new check and, while the last success is younger than
    ``stale``, answers with it at once instead of waiting (a health check that waits for a
    busy machine's thread scheduler reports the scheduler, not the database). Older than
    that, or after a failed check, a request waits for the check (at most ``timeout``).

    Args:
        engine: the database to check.
        ttl: seconds a successful check is reused without a new one.
        stale: seconds a successful check is still answered while a new one runs.
        timeout: seconds after which an unanswered check counts as a failure.
    """

    def __init__(self, engine: Engine, ttl: float = 1.0, stale: float = 5.0, timeout: float = 5.0):
        self.engine = engine
        self.ttl = ttl
        self.stale = stale
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nictune-health")
        self._checked_at = -math.inf
        self._revision: str | None = None
        self._pending: asyncio.Future[str | None] | None = None

    def _check(self) -> asyncio.Future[str | None]:
        """The check in flight, or a new one; a success is remembered when it ends."""
        if self._pending is None or self._pending.done():
            pending = asyncio.wrap_future(self._pool.submit(current_revision, self.engine))

            def remember(done: asyncio.Future[str | None]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self._revision, self._checked_at = done.result(), time.monotonic()
                else:
                    self._checked_at = -math.inf  # a failure: the next request waits for a check

            pending.add_done_callback(remember)
            self._pending = pending
        return self._pending

    async def revision(self) -> str | None:
        """The database's schema revision (see the class docstring for how fresh).

        Raises:
            StorageError: the database failed or did not answer within ``timeout`` seconds.
        """
        age = time.monotonic() - self._checked_at
        if age <= self.ttl:
            return self._revision
        pending = self._check()
        if age <= self.stale:
            return self._revision
        try:
            return await asyncio.wait_for(asyncio.shield(pending), self.timeout)
        except TimeoutError:
            raise StorageError(f"the database did not answer within {self.timeout:g} s") from None

    def close(self) -> None:
        """Stop the probe's thread (a check in flight finishes on its own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
