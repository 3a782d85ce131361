"""Migration 0004: each run's duration and whether it was a short screening run, up and down,
on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import inspect, text

from nictune.db import current_revision, head_revision, open_database
from nictune.jobs import JobRunner, JobSpec, create_job


def _downgrade(engine, revision: str) -> None:  # type: ignore[no-untyped-def]
    from alembic import command

    from nictune.db import alembic_config

    with engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def test_short_runs_go_on_downgrade_and_older_runs_read_as_full_ones_after_an_upgrade(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        job = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=12, seed=3,
                                         short_run_s=2.0, warm_start=False))
        JobRunner(engine).run(job)
        with engine.connect() as c:
            kinds = dict(c.execute(text("SELECT short, count(*) FROM measurements GROUP BY short")).all())
            durations = {row[0] for row in c.execute(text("SELECT DISTINCT duration_s FROM measurements"))}
        full, short = kinds.get(False, kinds.get(0, 0)), kinds.get(True, kinds.get(1, 0))
        assert full and short and durations == {2.0, 10.0}
        _downgrade(engine, "0003")
        assert current_revision(engine) == "0003"
        columns = {c["name"] for c in inspect(engine).get_columns("measurements")}
        assert "short" not in columns and "duration_s" not in columns
        with engine.connect() as c:  # a screening run would read as a fitness without its flag: it goes
            assert c.execute(text("SELECT count(*) FROM measurements")).scalar_one() == full
    finally:
        engine.dispose()
    engine = open_database(db_url)
    try:
        assert current_revision(engine) == head_revision()
        with engine.connect() as c:
            rows = c.execute(text("SELECT short, duration_s FROM measurements")).all()
        assert len(rows) == full and all(not s and d is None for s, d in rows)  # full runs of before 0004
    finally:
        engine.dispose()
