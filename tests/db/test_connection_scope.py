"""connection_scope: reads in one snapshot by default; without one, each statement on its own
(no transaction held, on SQLite no BEGIN sent), and the pooled connection is transactional
again for the next user. SQLite engines begin IMMEDIATE, read engines DEFERRED. A pooled
PostgreSQL connection is pinged when it has idled."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from nictune.api.database import read_engine
from nictune.db import connection_scope, make_engine
from nictune.db import session as session_module


def _driver_status(engine: Engine, snapshot: bool) -> str:
    with connection_scope(engine, snapshot=snapshot) as c:
        c.execute(text("SELECT 1"))
        if c.dialect.name == "postgresql":
            status = c.connection.driver_connection.info.transaction_status.name  # type: ignore[union-attr]
        else:
            status = "INTRANS" if c.connection.driver_connection.in_transaction else "IDLE"  # type: ignore[union-attr]
        return status


@pytest.mark.parametrize("read_only", [True, False])
def test_reads_without_a_snapshot_hold_no_transaction_and_the_pool_keeps_its_transactions(
        db_url: str, read_only: bool) -> None:
    # A pool of one: the same connection serves each call.
    engine = read_engine(db_url) if read_only else make_engine(db_url, pool_size=1, max_overflow=0)
    try:
        assert _driver_status(engine, snapshot=True) == "INTRANS"
        assert _driver_status(engine, snapshot=False) == "IDLE"
        assert _driver_status(engine, snapshot=True) == "INTRANS"
        assert _driver_status(engine, snapshot=False) == "IDLE"
    finally:
        engine.dispose()


def test_sqlite_writers_take_the_write_lock_at_begin_and_readers_never_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "SQLITE_BUSY_TIMEOUT_MS", 100)  # a blocked writer fails soon
    url = f"sqlite:///{tmp_path / 'lock.db'}"
    writer, other_writer, reader = make_engine(url), make_engine(url), read_engine(url)
    try:
        with writer.begin() as c:
            c.execute(text("CREATE TABLE t (x INTEGER)"))
        with writer.begin() as c:
            c.execute(text("SELECT 1"))  # BEGIN IMMEDIATE: the write lock, though it only read
            for snapshot in (True, False):
                with connection_scope(reader, snapshot=snapshot) as r:
                    assert r.execute(text("SELECT count(*) FROM t")).scalar_one() == 0
            with pytest.raises(OperationalError, match="locked"), other_writer.begin() as o:
                o.execute(text("SELECT 1"))
    finally:
        for engine in (writer, other_writer, reader):
            engine.dispose()


def test_a_pooled_postgresql_connection_is_pinged_only_after_it_idled_and_a_dead_one_is_replaced(
        pg_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db_url = pg_database_url
    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    pings: list[int] = []
    real_ping = engine.dialect.do_ping

    def counted_ping(connection: Any) -> bool:
        pings.append(1)
        return real_ping(connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted_ping)
    try:
        def backend() -> int:
            with connection_scope(engine) as c:
                return int(c.execute(text("SELECT pg_backend_pid()")).scalar_one())

        first = backend()
        assert backend() == first and pings == [1]  # the new connection once; back within the second: none
        # The server ends the connection while it idles in the pool (a restart, a firewall).
        admin = make_engine(db_url, poolclass=NullPool)
        try:
            with admin.connect() as c:
                assert c.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first}).scalar_one()
        finally:
            admin.dispose()
        monkeypatch.setattr(session_module, "PING_IDLE_S", 0.05)
        time.sleep(0.1)
        second = backend()  # the ping finds it dead; the pool hands out a new one
        assert second != first and len(pings) >= 2
    finally:
        engine.dispose()
