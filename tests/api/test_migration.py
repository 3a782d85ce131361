"""The schema revision of the API (0002, tokens) upgrades a database of the previous one."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, inspect, select

from nictune.api import ApiSettings, create_app
from nictune.db import current_revision, head_revision, make_engine, open_database, session_scope
from nictune.db.auth import create_token
from nictune.jobs import JobRunner, JobSpec, create_job


def downgrade(engine: Engine, revision: str) -> None:
    """Take the database of ``engine`` back to ``revision`` with the shipped migrations."""
    from alembic import command

    from nictune.db import alembic_config

    with engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def test_a_database_of_revision_0001_is_upgraded_at_start(db_url: str) -> None:
    """A database of revision 0001 with a job in it (run at today's revision, then taken back to
    0001: today's job loop reads columns 0001 does not have) keeps the job when upgraded."""
    first = open_database(db_url)
    try:
        job_id = create_job(first, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=5, seed=2))
        JobRunner(first).run(job_id)
        downgrade(first, "0001")
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
        assert current_revision(engine) == head_revision() == "0009"
        assert "api_tokens" in inspect(engine).get_table_names()
        with session_scope(engine) as s:
            _, token = create_token(s, "ci", "read")
    finally:
        engine.dispose()

    with TestClient(create_app(ApiSettings(db_url=db_url)), headers={"Authorization": f"Bearer {token}"}) as api:
        job = api.get(f"/v1/jobs/{job_id}").json()
        assert job["state"] == "completed" and job["progress"]["done"] == 5
        assert api.get("/healthz").json()["schema_revision"] == "0009"


def test_downgrading_to_0001_drops_only_the_tokens(db_url: str) -> None:
    engine = open_database(db_url)
    try:
        downgrade(engine, "0001")
        tables = set(inspect(engine).get_table_names())
        assert "api_tokens" not in tables and {"jobs", "trials", "measurements"} <= tables
    finally:
        engine.dispose()


def test_revision_0005_keeps_tokens_working_and_jobs_without_a_submitter(db_url: str) -> None:
    """Tokens of 0004 never expire after the upgrade; jobs stored before it name no token."""
    first = open_database(db_url)
    try:
        job_id = create_job(first, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=2, seed=2))
        downgrade(first, "0004")
        columns = {c["name"] for c in inspect(first).get_columns("api_tokens")}
        assert "expires_at" not in columns
        with first.begin() as connection:
            connection.exec_driver_sql(
                "INSERT INTO api_tokens (name, role, token_hash, created_at) VALUES ('old', 'read', "
                "'5a1a3c2d0d9c4d0e8a52cbbc8f0e7b3a8b6b1e0c4a1d7f2e9c3b5a7d9e1f3a5c', '2026-01-01 00:00:00')")
    finally:
        first.dispose()

    engine = open_database(db_url)
    try:
        assert current_revision(engine) == "0009"
        with session_scope(engine) as s:
            from nictune.db import Job
            from nictune.db.auth import list_tokens

            assert [(t.name, t.expires_at) for t in list_tokens(s)] == [("old", None)]
            job = s.get(Job, job_id)
            assert job is not None and (job.submitted_by, job.cancelled_by) == (None, None)
    finally:
        engine.dispose()


def test_revision_0007_fills_the_page_items_as_the_recorder_writes_them(db_url: str) -> None:
    """Upgrading to 0007 stores every finished trial's page item, equal to what a job records."""
    from nictune.db import Trial, TrialItem

    first = open_database(db_url)
    try:
        job_id = create_job(first, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=6, seed=5))
        JobRunner(first).run(job_id)
        with session_scope(first) as s:
            _, token = create_token(s, "ci", "read")
            recorded = dict(s.execute(select(TrialItem.trial_id, TrialItem.item)).all())
            finished = s.scalar(select(func.count(Trial.id)).where(Trial.state != "running")) or 0
        assert len(recorded) == finished >= 6
        downgrade(first, "0006")
        assert "trial_items" not in inspect(first).get_table_names()
    finally:
        first.dispose()

    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            backfilled = dict(s.execute(select(TrialItem.trial_id, TrialItem.item)).all())
    finally:
        engine.dispose()
    assert {k: json.loads(v) for k, v in backfilled.items()} == {k: json.loads(v) for k, v in recorded.items()}
    assert backfilled == recorded  # byte for byte: a page is these texts put together
    with TestClient(create_app(ApiSettings(db_url=db_url)), headers={"Authorization": f"Bearer {token}"}) as api:
        page = api.get(f"/v1/jobs/{job_id}/trials", params={"limit": 100}).json()
    assert [item["number"] for item in page["items"]] == sorted(item["number"] for item in page["items"])
    assert len(page["items"]) == finished


def test_revision_0008_stores_the_landmarks_a_finished_job_stores(db_url: str) -> None:
    """Upgrading to 0008 stores the landmarks of every finished job's trial pages, equal to
    those the job stored when it finished (and none for a job still pending)."""
    from nictune.db import TrialLandmark

    first = open_database(db_url)
    try:
        done = create_job(first, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=6, seed=5))
        JobRunner(first).run(done)
        create_job(first, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=3, seed=6))
        columns = (TrialLandmark.job_id, TrialLandmark.sort, TrialLandmark.position, TrialLandmark.value,
                   TrialLandmark.number, TrialLandmark.total)
        with session_scope(first) as s:
            recorded = set(s.execute(select(*columns)).all())
        assert {row[0] for row in recorded} == {done} and len({row[1] for row in recorded}) == 7
        downgrade(first, "0007")
        assert "trial_landmarks" not in inspect(first).get_table_names()
    finally:
        first.dispose()

    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            assert set(s.execute(select(*columns)).all()) == recorded
    finally:
        engine.dispose()
