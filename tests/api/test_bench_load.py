"""bench/api_load.py: how it finds the machine's page-out of idle file cache, how its clients
reconnect before a phase, and that a small run on SQLite prints its table (its timings are
figures, not asserted here)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench import api_load

REPO = Path(__file__).resolve().parents[2]


def _kdamond(root: Path, index: int, *, state: str = "on", action: str = "pageout", age: int = 12,
             aggr_us: int = 5_000_000) -> None:
    context = root / str(index) / "contexts" / "0"
    scheme = context / "schemes" / "0"
    (scheme / "access_pattern" / "age").mkdir(parents=True)
    (context / "monitoring_attrs" / "intervals").mkdir(parents=True)
    (root / str(index) / "state").write_text(state + "\n")
    (scheme / "action").write_text(action + "\n")
    (scheme / "access_pattern" / "age" / "min").write_text(f"{age}\n")
    (context / "monitoring_attrs" / "intervals" / "aggr_us").write_text(f"{aggr_us}\n")


def test_a_running_pageout_scheme_is_found_with_its_idle_time(tmp_path: Path) -> None:
    _kdamond(tmp_path, 0)  # the python-svc machines' scheme: 12 intervals of 5 s
    assert api_load.idle_pageout_s(tmp_path) == 60.0
    _kdamond(tmp_path, 1, age=4, aggr_us=100_000)
    assert api_load.idle_pageout_s(tmp_path) == pytest.approx(0.4)  # the shortest of them


@pytest.mark.parametrize("change", [{"state": "off"}, {"action": "stat"}])
def test_no_pageout_without_a_running_pageout_scheme(tmp_path: Path, change: dict[str, str]) -> None:
    _kdamond(tmp_path, 0, **change)  # type: ignore[arg-type]
    assert api_load.idle_pageout_s(tmp_path) is None
    assert api_load.idle_pageout_s(tmp_path / "missing") is None


def test_reconnect_sends_once_more_on_a_connection_the_server_closed() -> None:
    calls: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 1:  # the server closed the idle connection as the request went out
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return httpx.Response(200, json={"ok": True})

    async def go() -> None:
        async with httpx.AsyncClient(base_url="http://bench", transport=httpx.MockTransport(answer)) as http:
            await api_load.reconnect([http])

    asyncio.run(go())
    assert calls == ["/healthz", "/healthz"]


def test_reconnect_raises_when_the_server_answers_with_an_error() -> None:
    async def go() -> None:
        transport = httpx.MockTransport(lambda request: httpx.Response(503))
        async with httpx.AsyncClient(base_url="http://bench", transport=transport) as http:
            await api_load.reconnect([http])

    with pytest.raises(httpx.HTTPStatusError):
        asyncio.run(go())


@pytest.mark.slow
def test_a_small_load_run_prints_every_phase() -> None:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "api_load.py"), "--backend", "sqlite", "--trials", "500",
                          "--requests", "20", "--clients", "3"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [line.split() for line in run.stdout.splitlines() if line.startswith("sqlite ")]
    assert [(r[1], r[2], r[3]) for r in rows] == [
        (endpoint, clients, "20") for clients in ("1", "3")
        for endpoint in ("/healthz", "/v1/history/best", "/v1/jobs/{id}/trials")], run.stdout
    for row in rows:  # p50 <= p99; server CPU >= its kernel part
        assert float(row[4]) <= float(row[5]) and float(row[6]) >= float(row[7]) >= 0, row
    # A new result stored through the repository, and the recomputation it sets off, timed.
    assert "[sqlite] /v1/history/best after a new result (a recomputation in a warm server): " in run.stdout
