"""The service's two database engines: one for writes, one for reads.

nictune's engines start every SQLite transaction with ``BEGIN IMMEDIATE`` (the write
lock), which keeps the job loop's read-modify-write transactions safe but would make
every GET wait for every other request and for the trial being written. Reads get an
engine of their own whose SQLite transactions begin ``DEFERRED``: in WAL mode they read
a consistent snapshot without any lock. On PostgreSQL the two engines differ only in
their pools.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event

from nictune.db import make_engine
from nictune.db import session as db_session

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
