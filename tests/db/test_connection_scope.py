"""connection_scope: reads in one snapshot by default; without one, on PostgreSQL, each
statement on its own (no transaction held), and the pooled connection is transactional again
for the next user."""

from __future__ import annotations

from sqlalchemy import Engine, text

from nictune.api.database import read_engine
from nictune.db import connection_scope


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
