"""connection_scope: reads in one snapshot by default; without one, on PostgreSQL, each
statement on its own (no transaction held), and the pooled connection is transactional again
for the next user. A pooled PostgreSQL connection is pinged when it has idled."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import Engine, text
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


def test_only_postgresql_reads_leave_the_snapshot_out_and_the_pool_keeps_its_transactions(db_url: str) -> None:
    reader = read_engine(db_url)  # a pool of its own: the same connection serves each call
    try:
        postgres = reader.dialect.name == "postgresql"
        assert _driver_status(reader, snapshot=True) == "INTRANS"
        assert _driver_status(reader, snapshot=False) == ("IDLE" if postgres else "INTRANS")
        assert _driver_status(reader, snapshot=True) == "INTRANS"
    finally:
        reader.dispose()


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
