"""Following a job live through server-sent events."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from nictune.api.client import ServerEvent, parse_events
from tests.api.conftest import AppFactory

from .support import submit, wait_for


def read_events(api: TestClient, job_id: int, **kwargs: object) -> list[ServerEvent]:
    with api.stream("GET", f"/v1/jobs/{job_id}/events", **kwargs) as response:  # type: ignore[arg-type]
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(parse_events(response.iter_lines()))


@pytest.mark.slow
def test_follow_a_running_job_to_its_end(make_api: AppFactory) -> None:
    with make_api(pace_s=0.01) as api:
        job = submit(api, budget=15)
        events = read_events(api, job["id"])
        final = api.get(f"/v1/jobs/{job['id']}").json()

    trials = [e for e in events if e.event == "trial"]
    assert [e.id for e in trials] == list(range(15))
    assert [e.data["number"] for e in trials] == list(range(15))
    assert all(e.data["simulated"] is True and e.data["budget"] == 15 for e in trials)
    assert events[-1].event == "end" and events[-1].data["state"] == "completed"
    assert "running" in [e.data["state"] for e in events if e.event == "state"]
    # "best so far" never gets worse.
    best = [e.data["best"]["metrics"]["throughput_gbps"] for e in trials]
    assert best == sorted(best)
    # The job's answer comes after its final race, in the end event.
    rec = events[-1].data["best"]
    assert rec["number"] == final["best"]["number"] == final["recommendation"]["number"]
    assert rec["n"] == 2 and rec["low"] < rec["mean"] < rec["high"] and "90% CI" in rec["text"]


@pytest.mark.slow
def test_reconnecting_with_last_event_id_sends_only_what_was_missed(api: TestClient) -> None:
    job = wait_for(api, submit(api, budget=10)["id"])

    after_header = read_events(api, job["id"], headers={"Last-Event-ID": "6"})
    assert [e.id for e in after_header if e.event == "trial"] == [7, 8, 9]
    after_param = read_events(api, job["id"], params={"after": 8})
    trials = [e for e in after_param if e.event == "trial"]
    assert [e.id for e in trials] == [9]
    # The best so far accounts for the trials the client had already seen.
    assert trials[0].data["best"]["number"] == job["best"]["number"]


@pytest.mark.slow
def test_a_cancelled_job_ends_its_stream(make_api: AppFactory) -> None:
    with make_api(pace_s=0.05) as api:
        job = submit(api, budget=100)
        wait_for(api, job["id"], done=2)
        assert api.post(f"/v1/jobs/{job['id']}/cancel").status_code == 202
        events = read_events(api, job["id"])
    assert events[-1].event == "end" and events[-1].data["state"] == "cancelled"
    assert len([e for e in events if e.event == "trial"]) < 100


@pytest.mark.slow
def test_streams_close_after_events_max_s(make_api: AppFactory) -> None:
    with make_api(pace_s=0.2, events_max_s=0.3, events_poll_s=0.05) as api:
        job = submit(api, budget=50)
        events = read_events(api, job["id"])
        assert events and events[-1].event != "end"
        last = max(e.id for e in events if e.id is not None) if any(e.id is not None for e in events) else -1
        api.post(f"/v1/jobs/{job['id']}/cancel")
        rest = read_events(api, job["id"], headers={"Last-Event-ID": str(last)})
        while rest[-1].event != "end":
            rest = read_events(api, job["id"], headers={"Last-Event-ID": str(last)})
    assert all(e.id is None or e.id > last for e in rest)


def test_parse_events_handles_comments_and_multiline_data() -> None:
    lines = [": keep-alive", "", "id: 3", "event: trial", 'data: {"a":', "data: 1}", "", "event: end", "data: {}", ""]
    assert list(parse_events(lines)) == [ServerEvent("trial", {"a": 1}, 3), ServerEvent("end", {}, None)]
