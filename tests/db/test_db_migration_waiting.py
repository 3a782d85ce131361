"""Migration 0003: job state ``waiting`` (Celery executor), up and down, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from nictune.db import current_revision, make_engine, open_database, upgrade
from nictune.db.migrate import head_revision


def _insert_job(engine: object, state: str) -> None:
    with engine.begin() as c:  # type: ignore[attr-defined]
        c.execute(text("INSERT INTO testbeds (name, kind, fingerprint, fingerprint_hash, created_at) "
                       "VALUES ('t', 'sim', '{}', 'h', CURRENT_TIMESTAMP)"))
        c.execute(text("INSERT INTO workloads (name, definition, key_hash) VALUES ('w', '{}', 'k')"))
        c.execute(text(
            "INSERT INTO jobs (state, space_name, space_definition, testbed_id, workload_id, objectives, "
            "constraints, engine, engine_params, budget, repeats, seed, created_at, stats) VALUES "
            f"('{state}', 's', '{{}}', (SELECT max(id) FROM testbeds), (SELECT max(id) FROM workloads), '[]', '[]', "
            "'ga', '{}', 1, 1, 1, CURRENT_TIMESTAMP, '{}')"))


def test_waiting_is_a_job_state_from_0003_on(db_url: str) -> None:
    from alembic import command

    from nictune.db import alembic_config

    assert upgrade(db_url, "0002") == "0002"
    old = make_engine(db_url)
    try:
        with pytest.raises(IntegrityError):
            _insert_job(old, "waiting")
    finally:
        old.dispose()
    engine = open_database(db_url)
    try:
        assert current_revision(engine) == head_revision()
        _insert_job(engine, "waiting")
        if engine.dialect.name == "sqlite":
            with engine.connect() as c:
                assert c.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, "0002")
        with engine.connect() as c:
            assert c.execute(text("SELECT state FROM jobs")).scalar_one() == "interrupted"
    finally:
        engine.dispose()
