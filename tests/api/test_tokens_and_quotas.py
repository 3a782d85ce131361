"""Issue 31, limits and checks: pending jobs per token, event streams, token expiry and the
token recorded on each job, a chunked body over the limit (413 after authentication)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from nictune.api.client import ServerEvent, server_events
from nictune.api.limits import StreamLimitError, StreamSlots
from nictune.db import open_database, session_scope
from nictune.db.auth import create_token, revoke_token
from nictune.db.types import utcnow
from tests.api.conftest import AppFactory, Tokens

from .support import submit, wait_for


def new_token(db_url: str, name: str, role: str = "read", lifetime: timedelta | None = None) -> str:
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            _, secret = create_token(s, name, role, expires_at=utcnow() + lifetime if lifetime is not None else None)
    finally:
        engine.dispose()
    return secret


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


# ---------------------------------------------------------------- pending jobs per token
def test_a_token_at_its_pending_jobs_limit_gets_429_saying_the_limit(make_api: AppFactory, tokens: Tokens,
                                                                     db_url: str) -> None:
    other = new_token(db_url, "other", "submit")
    with make_api(max_pending_jobs=3, pace_s=0.2) as api:
        jobs = [submit(api, budget=500) for _ in range(3)]

        refused = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 5})

        assert refused.status_code == 429, refused.text
        error = refused.json()
        assert error["error"] == "too_many_requests" and error["field"] == "token"
        assert "token 'ci' has 3 jobs pending or running" in error["message"]
        assert "allows 3 per token" in error["message"]
        assert error["allowed"] == "at most 3 jobs pending or running per token"
        assert refused.headers["Retry-After"]
        assert api.get("/v1/jobs").json()["total"] == 3, "nothing is stored for a refused job"
        # The limit is per token: another token still submits.
        assert api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 2},
                        headers=bearer(other)).status_code == 201
        # A cancelled job frees its place.
        assert api.post(f"/v1/jobs/{jobs[-1]['id']}/cancel").status_code in (200, 202)
        wait_for(api, jobs[-1]["id"])
        assert api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 2}).status_code == 201
        for job in jobs[:2]:
            api.post(f"/v1/jobs/{job['id']}/cancel")


def test_concurrent_submissions_cannot_overshoot_the_limit(make_api: AppFactory) -> None:
    with make_api(max_pending_jobs=2, pace_s=0.2) as api:
        statuses: list[int] = []

        def post() -> None:
            statuses.append(api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 500}).status_code)

        threads = [threading.Thread(target=post) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        assert sorted(statuses) == [201, 201, 429, 429, 429, 429]
        for job in api.get("/v1/jobs").json()["items"]:
            api.post(f"/v1/jobs/{job['id']}/cancel")


# ---------------------------------------------------------------- who submitted, who cancelled
def test_the_job_names_the_token_that_submitted_and_the_one_that_cancelled_it(make_api: AppFactory,
                                                                               db_url: str) -> None:
    ops = new_token(db_url, "ops", "submit")
    with make_api(pace_s=0.05) as api:
        job = submit(api, budget=200)
        assert (job["submitted_by"], job["cancelled_by"]) == ("ci", None)

        cancelled = api.post(f"/v1/jobs/{job['id']}/cancel", headers=bearer(ops)).json()
        final = wait_for(api, job["id"])

    assert cancelled["cancelled_by"] == "ops"
    assert (final["state"], final["submitted_by"], final["cancelled_by"]) == ("cancelled", "ci", "ops")


# ---------------------------------------------------------------- token expiry
def test_an_expired_token_gets_401_saying_it_expired(shared_api: TestClient, shared_db_url: str) -> None:
    secret = new_token(shared_db_url, "temp", lifetime=timedelta(seconds=-1))
    live = new_token(shared_db_url, "later", lifetime=timedelta(days=90))

    response = shared_api.get("/v1/jobs", headers=bearer(secret))

    assert response.status_code == 401, response.text
    assert "token 'temp' expired at" in response.json()["message"], response.json()
    assert 'error_description="the token expired"' in response.headers["WWW-Authenticate"]
    assert shared_api.get("/v1/jobs", headers=bearer(live)).status_code == 200


# ---------------------------------------------------------------- event streams
def test_stream_slots_per_token_and_overall() -> None:
    slots = StreamSlots(per_token=2, total=3)
    a1, a2 = slots.acquire("a"), slots.acquire("a")
    with pytest.raises(StreamLimitError) as exc:
        slots.acquire("a")
    assert "token 'a' has 2 event streams open" in exc.value.message and exc.value.allowed.startswith("at most 2")
    b1 = slots.acquire("b")
    with pytest.raises(StreamLimitError) as exc:
        slots.acquire("c")
    assert "the service has 3 event streams open" in exc.value.message
    a1.release()
    a1.release()  # once only
    assert slots.open_count("a") == 1 and slots.open_count() == 2
    slots.acquire("c")
    a2.release()
    b1.release()
    assert slots.open_count("a") == 0


def read_events(api: TestClient, job_id: int, headers: dict[str, str] | None = None) -> list[ServerEvent]:
    with api.stream("GET", f"/v1/jobs/{job_id}/events", headers=headers) as response:
        assert response.status_code == 200, response.read()
        return list(server_events(response))


def test_a_stream_over_the_limit_is_429_and_an_ended_stream_frees_its_slot(make_api: AppFactory) -> None:
    with make_api(max_streams_per_token=2, max_streams=3) as api:
        job = wait_for(api, submit(api, budget=2, repeats=1)["id"])
        slots: StreamSlots = api.app.state.streams  # type: ignore[attr-defined]
        for _ in range(3):  # streams come and go: each frees its slot when it ends
            assert read_events(api, job["id"])[-1].event == "end"
        assert slots.open_count() == 0

        held = [slots.acquire("ci"), slots.acquire("ci")]  # two streams of this token are open
        mine = api.get(f"/v1/jobs/{job['id']}/events")
        assert mine.status_code == 429, mine.text
        assert "token 'ci' has 2 event streams open" in mine.json()["message"]
        assert mine.json()["allowed"] == "at most 2 open event streams per token"

        held.pop().release()
        held += [slots.acquire("dashboard"), slots.acquire("dashboard")]  # the service's three are open
        everyone = api.get(f"/v1/jobs/{job['id']}/events")
        assert everyone.status_code == 429 and "the service has 3 event streams open" in everyone.json()["message"]
        assert api.get("/healthz").status_code == 200
        for slot in held:
            slot.release()
        assert read_events(api, job["id"])[-1].event == "end"


@pytest.mark.parametrize("how", ["revoked", "expired"])
def test_an_open_stream_ends_when_its_token_is_revoked_or_expires(make_api: AppFactory, db_url: str,
                                                                  how: str) -> None:
    def revoke() -> None:
        engine = open_database(db_url)
        try:
            with session_scope(engine) as s:
                revoke_token(s, "watcher")
        finally:
            engine.dispose()

    with make_api(pace_s=0.05, token_recheck_s=0.2, events_poll_s=0.05) as api:
        job = submit(api, budget=400)
        # Made now, not before the service starts: an expiring token's 1.5 s must not be spent
        # on the service's start on a busy machine (its stream then got a 401 instead).
        secret = new_token(db_url, "watcher", lifetime=timedelta(seconds=1.5) if how == "expired" else None)
        timer = threading.Timer(1.0, revoke)
        if how == "revoked":
            timer.start()
        try:
            events = read_events(api, job["id"], headers=bearer(secret))
        finally:
            timer.cancel()
            api.post(f"/v1/jobs/{job['id']}/cancel")

    assert events[-1].event == "error", events[-3:]
    assert events[-1].data["error"] == "unauthorized" and f"token was {how}" in events[-1].data["message"]
    assert len([e for e in events if e.event == "trial"]) < 400


# ---------------------------------------------------------------- chunked bodies
def chunks(size: int) -> Iterator[bytes]:
    yield b'{"testbed": "sim:benson-40g", "space": {"name": "'
    for _ in range(size // 1024):
        yield b"x" * 1024
    yield b'"}}'


@pytest.mark.parametrize(("headers", "status", "error"), [
    ({}, 401, "unauthorized"),
    ({"Authorization": "Bearer nt_not-a-token"}, 401, "unauthorized"),
    (None, 413, "too_large"),  # the client's submit token
])
def test_a_chunked_body_over_the_limit_is_413_after_authentication(make_api: AppFactory, tokens: Tokens,
                                                                   headers: dict[str, Any] | None, status: int,
                                                                   error: str) -> None:
    with make_api(max_body_bytes=4096) as api:
        if headers is not None:
            api.headers.pop("Authorization")
        response = api.post("/v1/jobs", content=chunks(64 * 1024),
                            headers={"Content-Type": "application/json", **(headers or {})})
        assert "content-length" not in {k.lower() for k in response.request.headers}

        assert response.status_code == status, response.text
        assert response.json()["error"] == error
        # By Content-Length too: no token, no 413.
        sized = api.post("/v1/jobs", content=b"x" * 8192, headers={"Content-Type": "application/json",
                                                                    **(headers or {})})
        assert sized.status_code == status, sized.text


def test_a_body_over_the_limit_gets_the_error_body_naming_the_limit(make_api: AppFactory, tokens: Tokens) -> None:
    with make_api(max_body_bytes=4096) as api:
        job = wait_for(api, submit(api, budget=2, repeats=1)["id"])
        answers = {
            "sized": api.post("/v1/jobs", content=b"x" * 8192, headers={"Content-Type": "application/json"}),
            "chunked": api.post("/v1/jobs", content=chunks(64 * 1024), headers={"Content-Type": "application/json"}),
            # An endpoint that reads no body: still the service's error body, not Starlette's plain text.
            "no body read": api.post(f"/v1/jobs/{job['id']}/cancel", content=b"x" * 8192),
        }
        unread_without_token = api.post(f"/v1/jobs/{job['id']}/cancel", content=b"x" * 8192,
                                        headers={"Authorization": ""})
        within = api.post(f"/v1/jobs/{job['id']}/cancel", content=b"x" * 4096)
    for how, response in answers.items():
        assert response.status_code == 413, (how, response.text)
        assert response.headers["content-type"] == "application/json", how
        body = response.json()
        assert (body["error"], body["field"], body["allowed"]) == ("too_large", "body", "at most 4096 bytes"), how
        assert body["message"] == "request body above 4096 bytes", how
    assert unread_without_token.status_code == 401 and unread_without_token.json()["field"] == "Authorization"
    assert within.status_code != 413


# ---------------------------------------------------------------- tokens found valid are trusted a while
def _revoke(db_url: str, name: str) -> None:
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            revoke_token(s, name)
    finally:
        engine.dispose()


def test_a_token_found_valid_is_trusted_for_token_cache_s_without_a_database_read(make_api: AppFactory,
                                                                                   db_url: str) -> None:
    secret = new_token(db_url, "poller")
    with make_api(token_cache_s=30) as api:
        # The trust's clock is the test's, so a slow machine cannot run it out early.
        now = [1000.0]
        api.app.state.tokens.clock = lambda: now[0]  # type: ignore[attr-defined]
        token_reads: list[str] = []

        def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if "api_tokens" in statement:
                token_reads.append(statement)

        event.listen(api.app.state.db, "before_cursor_execute", count)  # type: ignore[attr-defined]
        assert api.get("/v1/jobs", headers=bearer(secret)).status_code == 200
        assert len(token_reads) == 1
        for _ in range(5):
            now[0] += 5.0
            assert api.get("/v1/jobs", headers=bearer(secret)).status_code == 200
        assert len(token_reads) == 1, "a trusted token costs no database read"

        _revoke(db_url, "poller")
        now[0] += 4.0  # 29 s after it was found valid: still trusted
        assert api.get("/v1/jobs", headers=bearer(secret)).status_code == 200
        assert len(token_reads) == 1
        now[0] += 1.0  # 30 s: the trust has run out, the database says revoked
        refused = api.get("/v1/jobs", headers=bearer(secret))
        assert refused.status_code == 401 and "revoked" in refused.json()["message"]
        assert len(token_reads) == 2
        # An unknown secret is never trusted: every request asks the database.
        for _ in range(3):
            assert api.get("/v1/jobs", headers=bearer("nt_not-a-token")).status_code == 401
        assert len(token_reads) == 2 + 3


def test_token_cache_s_zero_refuses_a_revoked_token_at_the_next_request(make_api: AppFactory, db_url: str) -> None:
    secret = new_token(db_url, "strict")
    with make_api(token_cache_s=0) as api:
        assert api.get("/v1/jobs", headers=bearer(secret)).status_code == 200
        _revoke(db_url, "strict")
        assert api.get("/v1/jobs", headers=bearer(secret)).status_code == 401


def test_a_trusted_token_is_still_refused_once_it_expires(make_api: AppFactory, db_url: str) -> None:
    secret = new_token(db_url, "brief", lifetime=timedelta(seconds=1.5))
    with make_api(token_cache_s=60) as api:
        assert api.get("/v1/jobs", headers=bearer(secret)).status_code == 200
        refused = wait_for_status(api, "/v1/jobs", bearer(secret), 401, within_s=5.0)
        assert "expired" in refused.json()["message"]


def wait_for_status(api: TestClient, path: str, headers: dict[str, str], status: int, within_s: float) -> Any:
    """The first answer to ``path`` with ``status``, asked every 0.1 s for at most ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        answer = api.get(path, headers=headers)
        if answer.status_code == status or time.monotonic() > deadline:
            assert answer.status_code == status, answer.text
            return answer
        time.sleep(0.1)
