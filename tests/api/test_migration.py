"""The schema revision of the API (0002, tokens) upgrades a database of the previous one."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import inspect

from nictune.api import ApiSettings, create_app
from nictune.db import current_revision, head_revision, make_engine, open_database, session_scope
from nictune.db.auth import create_token
from nictune.jobs import JobRunner, JobSpec, create_job


def test_a_database_of_revision_0001_is_upgraded_at_start(db_url: str) -> None:
    """A database of revision 0001 with a job in it (run at today's revision, then taken back to
    0001: today's job loop reads columns 0001 does not have) keeps the job when upgraded."""
    from alembic import command

    from nictune.db import alembic_config

    first = open_database(db_url)
    try:
        job_id = create_job(first, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=5, seed=2))
        JobRunner(first).run(job_id)
        with first.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, "0001")
    finally:
        first.dispose()
    old = make_engine(db_url)
    try:
        assert current_revision(old) == "0001"
        assert "api_tokens" not in inspect(old).get_table_names()
    finally:
        old.dispose()

    engine = open_database(db_url)  # what `nictune token create` and the service do first
    try:
        assert current_revision(engine) == head_revision() == "0004"
        assert "api_tokens" in inspect(engine).get_table_names()
        with session_scope(engine) as s:
            _, token = create_token(s, "ci", "read")
    finally:
        engine.dispose()

    with TestClient(create_app(ApiSettings(db_url=db_url)), headers={"Authorization": f"Bearer {token}"}) as api:
        job = api.get(f"/v1/jobs/{job_id}").json()
        assert job["state"] == "completed" and job["progress"]["done"] == 5
        assert api.get("/healthz").json()["schema_revision"] == "0004"


def test_downgrading_to_0001_drops_only_the_tokens(db_url: str) -> None:
    from alembic import command

    from nictune.db import alembic_config

    engine = open_database(db_url)
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, "0001")
        tables = set(inspect(engine).get_table_names())
        assert "api_tokens" not in tables and {"jobs", "trials", "measurements"} <= tables
    finally:
        engine.dispose()
