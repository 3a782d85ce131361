"""The service can be stopped at any moment: jobs resume, no trial is lost or measured twice."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from nictune.api.client import ApiError, Client
from nictune.db import Job, Measurement, Trial, open_database, session_scope
from nictune.db.auth import create_token

from .server import running_server

pytestmark = pytest.mark.slow

BUDGET = 30
REPEATS = 2
#: Test-only pacing, so the kill lands mid-job (the runner itself never sleeps).
PACE_S = 0.04


def follow_until_gone(url: str, token: str, job_id: int) -> None:
    """Follow the job's events until the server goes away."""
    with contextlib.suppress(ApiError):
        list(Client(url, token).follow_events(job_id, reconnects=0))


def stored_trials(db_url: str) -> dict[int, tuple[int, str, str | None]]:
    """Trial number -> (row id, state, finished_at) of every trial in the database."""
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            rows = s.execute(select(Trial.number, Trial.id, Trial.state, Trial.finished_at)).all()
            return {n: (i, st, f.isoformat() if f else None) for n, i, st, f in rows}
    finally:
        engine.dispose()


def test_a_job_survives_sigkill_with_exactly_budget_trials(db_url: str, tmp_path: Path) -> None:
    restart_mid_job(db_url, tmp_path, "sigkill")


def test_a_job_survives_a_graceful_stop(tmp_path: Path) -> None:
    # A graceful stop does not depend on the backend; SIGKILL runs on both.
    restart_mid_job(f"sqlite:///{tmp_path / 'nictune.db'}", tmp_path, "sigterm")


def restart_mid_job(db_url: str, tmp_path: Path, stop: str) -> None:
    """Start a paced job, stop the server mid-job with ``stop``, start again, check every trial."""
    engine = open_database(db_url)
    with session_scope(engine) as s:
        _, token = create_token(s, "ci", "submit")
    engine.dispose()
    log = tmp_path / "server.log"

    with running_server(db_url, log, pace_s=PACE_S) as first, Client(first.url, token) as api:
        job_id = api.submit_job(testbed="sim:benson-40g", budget=BUDGET, repeats=REPEATS, seed=11,
                                racing=False)["id"]
        deadline = time.monotonic() + 30
        while api.get_job(job_id)["progress"]["done"] < 8:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        if stop == "sigkill":
            first.kill()
        else:
            # A client following the job must not hold the stop (uvicorn waits for open responses).
            follower = threading.Thread(target=follow_until_gone, args=(first.url, token, job_id), daemon=True)
            follower.start()
            time.sleep(0.2)
            began = time.monotonic()
            first.stop()
            assert time.monotonic() - began < 10, "the graceful stop waited for the event stream"
            with session_scope(engine := open_database(db_url)) as s:
                assert s.get(Job, job_id).state == "interrupted"  # type: ignore[union-attr]
            engine.dispose()
    before = {n: t for n, t in stored_trials(db_url).items() if t[1] == "completed"}
    assert 8 <= len(before) < BUDGET, "the stop should land mid-job"

    with running_server(db_url, log, pace_s=PACE_S) as second, Client(second.url, token) as api:
        deadline = time.monotonic() + 60
        while api.get_job(job_id)["state"] not in ("completed", "failed", "cancelled"):
            assert time.monotonic() < deadline, f"the job did not resume: {api.get_job(job_id)}"
            time.sleep(0.05)
        events = list(api.follow_events(job_id))
        job = api.get_job(job_id)

    assert events[-1].event == "end" and job["state"] == "completed"
    assert [e.id for e in events if e.event == "trial"] == list(range(BUDGET))
    after = stored_trials(db_url)
    assert sorted(after) == list(range(BUDGET)), "every trial number once, none missing"
    assert all(state == "completed" for _, state, _ in after.values()), "no trial left running or failed"
    for number, trial in before.items():
        assert after[number] == trial, f"trial {number} was measured again after the restart"
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            measured = s.scalar(select(func.count()).select_from(Trial).where(Trial.source == "measured"))
            measurements = s.scalar(select(func.count()).select_from(Measurement))
            stats = dict(s.get(Job, job_id).stats)  # type: ignore[union-attr]
    finally:
        engine.dispose()
    assert measurements == REPEATS * measured, "a trial's measurements were stored twice or lost"
    assert job["progress"]["done"] == BUDGET and stats["origin"] == "api"
    assert "Traceback" not in log.read_text(), log.read_text()
