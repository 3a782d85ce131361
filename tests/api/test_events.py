"""Following a job live through server-sent events."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient

from nictune.api.client import ServerEvent, server_events
from tests.api.conftest import AppFactory

from .support import submit, wait_for


def read_events(api: TestClient, job_id: int, **kwargs: object) -> list[ServerEvent]:
    with api.stream("GET", f"/v1/jobs/{job_id}/events", **kwargs) as response:  # type: ignore[arg-type]
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(server_events(response))


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


def test_server_events_skip_comments_and_join_multiline_data() -> None:
    body = (b": ping\n\nid: 3\nevent: trial\ndata: {\"a\":\ndata: 1}\n\n: keep-alive\n\n"
            b"event: end\ndata: {}\n\nevent: state\ndata: {\"cut\": true}")
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    # The id is the stream's last one (the SSE format keeps it), a comment after it is no event,
    # and an event without its closing blank line is dropped.
    assert list(server_events(response)) == [ServerEvent("trial", {"a": 1}, 3), ServerEvent("end", {}, 3)]


def test_server_events_refuse_a_body_that_is_not_an_event_stream() -> None:
    response = httpx.Response(200, headers={"content-type": "text/html"}, content=b"<html>proxy login</html>")
    with pytest.raises(httpx.TransportError, match="text/event-stream"):  # a reconnect, in follow_events
        list(server_events(response))


def test_the_service_frames_events_as_the_sse_format_says(api: TestClient) -> None:
    job = wait_for(api, submit(api, budget=2, repeats=1)["id"])
    with api.stream("GET", f"/v1/jobs/{job['id']}/events") as response:
        body = response.read().decode()
    assert response.headers["cache-control"] == "no-cache" and response.headers["x-accel-buffering"] == "no"
    frames = body.split("\n\n")
    assert frames[-1] == "" and all(frames[:-1])
    first = frames[0].split("\n")
    assert sorted(line.partition(":")[0] for line in first) == ["data", "event", "id"]
    assert "event: trial" in first and "id: 0" in first
    assert json.loads(next(line for line in first if line.startswith("data: "))[6:])["number"] == 0
    assert frames[-2].startswith("event: end\ndata: {")


def test_an_idle_stream_sends_keep_alive_comments(make_api: AppFactory) -> None:
    # The stream lasts 3 s: on a loaded 2-core machine a 0.6 s stream once ended with its
    # first event alone, before any idle gap of 0.05 s had come.
    with make_api(pace_s=0.3, events_keepalive_s=0.05, events_poll_s=0.02, events_max_s=3.0) as api:
        job = submit(api, budget=50)
        with api.stream("GET", f"/v1/jobs/{job['id']}/events") as response:
            lines = list(response.iter_lines())
        api.post(f"/v1/jobs/{job['id']}/cancel")
    assert ": ping" in lines
