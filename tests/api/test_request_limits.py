"""Issue 31, floods: a token's requests in progress are capped (429), /healthz answers while
every request thread is busy, event streams read on threads of their own, and the limits are
options of ``nictune serve``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send
from typer.testing import CliRunner

from nictune.api import routers
from nictune.api.limits import RequestLimit
from nictune.cli.main import app as cli_app

from .conftest import AppFactory, Tokens


class _Blocking:
    """An ASGI app whose every request waits until :attr:`release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.entered += 1
        await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})


def test_a_token_gets_429_above_its_requests_in_progress_and_other_tokens_do_not() -> None:
    async def scenario() -> None:
        inner = _Blocking()
        limit = RequestLimit(inner, per_token=3)
        transport = httpx.ASGITransport(app=limit)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            mine = {"Authorization": "Bearer secret-a"}
            first = [asyncio.create_task(http.get("/v1/jobs", headers=mine)) for _ in range(3)]
            while inner.entered < 3:
                await asyncio.sleep(0.01)
            assert limit.in_progress("secret-a") == 3
            refused = await http.get("/v1/jobs/1/trials", headers=mine)
            assert refused.status_code == 429
            body = refused.json()
            assert body["field"] == "token" and body["allowed"] == "at most 3 requests in progress per token"
            assert "3 requests in progress" in body["message"] and refused.headers["retry-after"] == "1"
            # Another token, a request without one (/healthz) and an event stream are not held back.
            others = [asyncio.create_task(http.get("/v1/jobs", headers={"Authorization": "Bearer secret-b"})),
                      asyncio.create_task(http.get("/healthz")),
                      asyncio.create_task(http.get("/v1/jobs/1/events", headers=mine))]
            while inner.entered < 6:
                await asyncio.sleep(0.01)
            inner.release.set()
            answers = await asyncio.gather(*first, *others)
            assert [a.status_code for a in answers] == [200] * 6
            assert limit.in_progress("secret-a") == 0 and limit.in_progress("secret-b") == 0
            assert (await http.get("/v1/jobs", headers=mine)).status_code == 200  # its slots came back

    asyncio.run(scenario())


def test_the_service_as_a_whole_answers_at_most_its_total_at_once() -> None:
    async def scenario() -> None:
        inner = _Blocking()
        limit = RequestLimit(inner, per_token=10, total=4)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=limit), base_url="http://t") as http:
            held = [asyncio.create_task(http.get("/v1/jobs", headers={"Authorization": f"Bearer t{i}"}))
                    for i in range(3)] + [asyncio.create_task(http.get("/v1/spaces"))]  # no token: counted too
            while inner.entered < 4:
                await asyncio.sleep(0.01)
            assert limit.in_progress() == 4
            refused = await http.get("/v1/jobs", headers={"Authorization": "Bearer fresh"})
            assert refused.status_code == 429 and refused.json()["allowed"] == "at most 4 requests in progress in all"
            health = asyncio.create_task(http.get("/healthz"))  # never held back
            while inner.entered < 5:
                await asyncio.sleep(0.01)
            inner.release.set()
            assert [r.status_code for r in await asyncio.gather(*held, health)] == [200] * 5
            assert limit.in_progress() == 0

    asyncio.run(scenario())


def test_a_request_that_fails_gives_its_slot_back() -> None:
    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    async def scenario() -> None:
        limit = RequestLimit(failing, per_token=1)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=limit, raise_app_exceptions=False),
                                     base_url="http://t") as http:
            for _ in range(3):  # never 429: the failed request's slot was released
                assert (await http.get("/v1/jobs", headers={"Authorization": "Bearer s"})).status_code == 500
            assert limit.in_progress("s") == 0

    asyncio.run(scenario())


def test_healthz_answers_while_every_request_thread_is_busy(
        make_api: AppFactory, tokens: Tokens, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: /healthz was a sync endpoint and waited for a request thread like any other."""
    release = threading.Event()
    busy = threading.Semaphore(0)
    original = routers.jobs.read_job

    def stuck(*args: Any, **kwargs: Any) -> Any:
        busy.release()
        assert release.wait(60), "never released"
        return original(*args, **kwargs)

    with make_api(request_threads=2, max_requests_per_token=10) as api:
        job = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 2, "repeats": 1})
        assert job.status_code == 201, job.text
        job_id = job.json()["id"]
        monkeypatch.setattr(routers.jobs, "read_job", stuck)
        holders = [threading.Thread(target=api.get, args=(f"/v1/jobs/{job_id}",)) for _ in range(4)]
        for t in holders:
            t.start()
        try:
            for _ in range(2):  # both request threads are stuck in read_job
                assert busy.acquire(timeout=30)
            answered: list[int] = []
            probe = threading.Thread(target=lambda: answered.append(api.get("/healthz").status_code))
            probe.start()
            probe.join(30)
            assert answered == [200], "/healthz waited for a request thread"
            assert all(t.is_alive() for t in holders)  # still stuck: healthz did not need them
        finally:
            release.set()
            for t in holders:
                t.join(60)


def test_serve_help_lists_the_limits_and_refuses_a_bad_one() -> None:
    runner = CliRunner()
    shown = runner.invoke(cli_app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0
    for option in ("--max-pending-jobs", "--max-requests-per-token", "--max-requests", "--max-streams-per-token",
                   "--max-streams",
                   "--max-body-bytes", "--request-threads"):
        assert option in shown.output, option
    bad = runner.invoke(cli_app, ["serve", "--max-requests-per-token", "0"], env={"COLUMNS": "200"})
    assert bad.exit_code == 2 and "--max-requests-per-token" in bad.output


@pytest.mark.slow
def test_the_real_service_refuses_a_token_s_flood_with_429_and_serves_the_rest(
        db_url: str, tokens: Tokens, tmp_path: Path) -> None:
    from .server import running_server

    async def flood(base: str, n: int) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=base, headers=tokens.headers("read"), timeout=60,
                                     limits=httpx.Limits(max_connections=n)) as http:
            return list(await asyncio.gather(*(http.get("/v1/jobs", params={"limit": 100}) for _ in range(n))))

    with running_server(db_url, tmp_path / "server.log",
                        args=["--max-requests-per-token", "2", "--max-streams", "5"]) as server:
        banner = server.log.read_text()
        assert "limits per token: 10 pending jobs, 2 requests at once (64 in all), 8 event streams (5 in all)" in banner
        answers = asyncio.run(flood(server.url, 40))
        codes = sorted({a.status_code for a in answers})
        assert codes == [200, 429], codes
        for refused in (a for a in answers if a.status_code == 429):
            assert refused.json()["field"] == "token" and refused.headers["retry-after"] == "1"
        # Another token is served meanwhile, and the flooding token again once it waits.
        assert httpx.get(f"{server.url}/v1/jobs", headers=tokens.headers("submit"), timeout=30).status_code == 200
        assert httpx.get(f"{server.url}/v1/jobs", headers=tokens.headers("read"), timeout=30).status_code == 200


def test_the_health_probe_reuses_a_fresh_check_and_reports_a_database_that_does_not_answer(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    from nictune.api.database import DatabaseProbe
    from nictune.db import current_revision, open_database
    from nictune.errors import StorageError

    engine = open_database(f"sqlite:///{tmp_path / 'ok.db'}")
    probe = DatabaseProbe(engine, ttl=60.0)
    calls: list[int] = []
    original = probe._pool.submit

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    probe._pool.submit = counting  # type: ignore[method-assign]

    async def twice() -> list[str | None]:
        return list(await asyncio.gather(probe.revision(), probe.revision(), probe.revision()))

    head = current_revision(engine)
    assert head is not None
    assert asyncio.run(twice()) == [head] * 3 and len(calls) == 1  # one check for concurrent callers
    assert asyncio.run(probe.revision()) == head and len(calls) == 1  # fresh: reused
    probe.close()
    engine.dispose()

    gone = DatabaseProbe(create_engine(f"sqlite:///{tmp_path / 'missing' / 'no.db'}"))
    with pytest.raises(StorageError):
        asyncio.run(gone.revision())
    gone.close()


def test_the_health_probe_answers_its_last_success_while_a_new_check_is_slow(tmp_path: Path) -> None:
    from nictune.api.database import DatabaseProbe
    from nictune.db import current_revision, open_database
    from nictune.errors import StorageError

    engine = open_database(f"sqlite:///{tmp_path / 'ok.db'}")
    head = current_revision(engine)
    probe = DatabaseProbe(engine, ttl=0.0, stale=60.0, timeout=0.5)
    release = threading.Event()
    original = probe._pool.submit
    fail = {"now": False}

    def slow(fn: Any, *args: Any) -> Any:
        def run() -> Any:
            assert release.wait(30)
            if fail["now"]:
                raise StorageError("the database went away")
            return fn(*args)
        return original(run)

    probe._pool.submit = slow  # type: ignore[method-assign,assignment]

    async def scenario() -> None:
        first = asyncio.create_task(probe.revision())  # nothing known yet: waits for its check
        await asyncio.sleep(0.05)
        assert not first.done()
        release.set()
        assert await first == head
        release.clear()
        # A new check is slow: the last success answers at once, and the check goes on.
        assert await asyncio.wait_for(probe.revision(), 0.2) == head
        fail["now"] = True
        release.set()
        await asyncio.sleep(0.1)  # the check ends in a failure
        with pytest.raises(StorageError):  # after a failure a request waits for a check
            await probe.revision()

    asyncio.run(scenario())
    probe.close()
    engine.dispose()
