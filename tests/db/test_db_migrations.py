"""Schema creation and upgrades through the Alembic migrations shipped in the package."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import func, inspect, select, text

import nictune
import nictune.db
from nictune.db import (
    Base,
    Workload,
    alembic_config,
    current_revision,
    default_url,
    head_revision,
    make_engine,
    open_database,
    session_scope,
    upgrade,
)
from nictune.errors import InvalidInputError, StorageError

from .support import add_workload

TABLES = {"testbeds", "configurations", "workloads", "jobs", "trials", "measurements"}


def test_open_database_creates_the_schema_at_head(db_url: str) -> None:
    assert current_revision(db_url) is None

    engine = open_database(db_url)
    try:
        assert TABLES | {"alembic_version"} <= set(inspect(engine).get_table_names())
        versions = Path(nictune.db.__file__).parent / "migrations" / "versions"
        revisions = sorted(p.name.split("_")[0] for p in versions.glob("0*.py"))
        assert current_revision(engine) == head_revision() == revisions[-1]
    finally:
        engine.dispose()


def test_upgrading_again_is_a_no_op_that_keeps_data(db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="alembic")
    engine = open_database(db_url)
    try:
        assert any(r.getMessage().startswith("Running upgrade") for r in caplog.records)
        with session_scope(engine) as s:
            workload_id = add_workload(s).id

        caplog.clear()
        assert upgrade(db_url) == head_revision()
        assert upgrade(engine) == head_revision()
        open_database(db_url).dispose()
        # Nothing to migrate, nothing logged (a service logged Alembic's two context lines
        # at every start, for each time it opened its database).
        assert [r.getMessage() for r in caplog.records if r.name.startswith("alembic")] == []

        with session_scope(engine) as s:
            assert s.get(Workload, workload_id) is not None
            versions = s.scalar(text("SELECT count(*) FROM alembic_version"))
        assert versions == 1
        assert current_revision(db_url) == head_revision()
    finally:
        engine.dispose()


def test_migrations_create_exactly_what_the_models_describe(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


RACER = """
import sys
from nictune.db import upgrade
sys.stdin.readline()  # start together: imports are slow, the race is not
print(upgrade(sys.argv[1]))
"""


@pytest.mark.system
def test_processes_opening_a_new_database_at_once_do_not_race(db_url: str) -> None:
    env = dict(os.environ)
    package_root = str(Path(nictune.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, db_url], env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    outcomes = [racer.communicate(timeout=60) for racer in racers]

    assert [racer.returncode for racer in racers] == [0, 0, 0], outcomes
    assert [out.strip() for out, _ in outcomes] == [head_revision()] * 3


def test_the_shipped_head_is_alembics_head() -> None:
    assert head_revision() == nictune.db.migrate.SHIPPED_HEAD


@pytest.mark.system
def test_an_up_to_date_database_opens_without_importing_alembic(db_url: str) -> None:
    open_database(db_url).dispose()
    opener = "\n".join([
        "import sys",
        "from sqlalchemy import select",
        "from nictune.db import Job, open_database, session_scope",
        "engine = open_database(sys.argv[1])",
        "with session_scope(engine) as s:",
        "    s.scalars(select(Job)).all()",
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))",
    ])
    done = subprocess.run([sys.executable, "-c", opener, db_url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # A database behind the shipped head still goes through Alembic and is upgraded.
    command.downgrade(alembic_config(db_url), "0005")
    assert current_revision(db_url) == "0005"
    assert upgrade(db_url) == head_revision()
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            assert inspect(connection).has_table("config_stats")
    finally:
        engine.dispose()


def test_a_database_from_a_newer_nictune_is_refused(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        with pytest.raises(StorageError, match="newer nictune"):
            open_database(db_url)
    finally:
        engine.dispose()


def test_foreign_keys_are_enforced(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        with pytest.raises(StorageError), session_scope(engine) as s:
            s.execute(
                text(
                    "INSERT INTO trials (job_id, number, configuration_id, state, source, "
                    "started_at, notes) VALUES (999, 0, 999, 'running', 'measured', "
                    "'2024-01-01 00:00:00', '[]')"
                )
            )
        with session_scope(engine) as s:
            assert s.scalar(text("SELECT count(*) FROM trials")) == 0
    finally:
        engine.dispose()


def test_default_url_follows_nictune_db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NICTUNE_DB", raising=False)
    expected = Path(platformdirs.user_data_dir("nictune")) / "nictune.db"
    assert default_url() == f"sqlite:///{expected}"

    monkeypatch.setenv("NICTUNE_DB", "postgresql+psycopg://u@db.example/nictune")
    assert default_url() == "postgresql+psycopg://u@db.example/nictune"

    monkeypatch.setenv("NICTUNE_DB", str(tmp_path / "x" / "history.db"))
    assert default_url() == f"sqlite:///{tmp_path / 'x' / 'history.db'}"


def test_sqlite_engine_settings(tmp_path: Path) -> None:
    path = tmp_path / "not" / "yet" / "there.db"
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            pragmas = {
                name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
            }
        assert pragmas == {
            "journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 30000, "synchronous": 2,
        }
    finally:
        engine.dispose()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_savepoints_roll_back_inside_the_outer_transaction(db_url: str) -> None:
    """The pysqlite BEGIN fix: a released SAVEPOINT must still belong to the transaction."""
    engine = open_database(db_url)
    try:
        with pytest.raises(RuntimeError), session_scope(engine) as s:
            with s.begin_nested():
                add_workload(s, "inner")
            raise RuntimeError("abort the outer transaction")
        with session_scope(engine) as s:
            assert s.scalar(select(func.count()).select_from(Workload)) == 0
    finally:
        engine.dispose()


def test_bad_urls_are_storage_errors() -> None:
    with pytest.raises(StorageError):
        make_engine("not a url")
    with pytest.raises(StorageError) as unsupported:
        make_engine("nosuchdialect://x")
    # ... caused by the user's input: the CLI exits 2 naming the forms it takes.
    assert isinstance(unsupported.value, InvalidInputError) and unsupported.value.field == "db"
    with pytest.raises(InvalidInputError, match="not mysql"):
        make_engine("mysql://user:secret@127.0.0.1/x")
