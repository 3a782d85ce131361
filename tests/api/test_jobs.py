"""Submitting, reading, listing and cancelling jobs; lanes per testbed."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from nictune.jobs import TrialEvent
from tests.api.conftest import AppFactory

from .support import submit, wait_for


@pytest.mark.slow
def test_submit_runs_the_job_in_the_background(api: TestClient) -> None:
    response = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 12, "repeats": 2, "seed": 5,
                                          "constraints": ["loss_pct <= 1"]})

    assert response.status_code == 201
    created = response.json()
    assert response.headers["location"] == f"/v1/jobs/{created['id']}" == created["links"]["self"]
    assert created["simulated"] is True and "model" in created["note"]
    assert created["space"] == "benson-40g" and created["budget"] == 12
    # The model has no term for the space's tx_ring; the job says so.
    assert created["notices"] == ["sim:benson-40g is a model with no term for tx_ring (space benson-40g): its value "
                                  "changes nothing in its figures"]

    job = wait_for(api, created["id"])
    assert job["state"] == "completed"
    assert job["progress"] == {"done": 12, "budget": 12, "fraction": 1.0, "measured": 12, "cached": 0,
                               "failed": 0, "running": 0}
    best = job["best"]
    assert best is not None and best["score"]["feasible"] is True
    trials = api.get(f"/v1/jobs/{job['id']}/trials", params={"limit": 1000}).json()["items"]
    assert best["metrics"]["throughput_gbps"] == max(t["metrics"]["throughput_gbps"] for t in trials)
    assert job["eta_s"] is None and job["finished_at"] is not None


@pytest.mark.slow
def test_a_job_whose_engine_runs_out_before_the_budget_says_when(api: TestClient) -> None:
    small = wait_for(api, submit(api, testbed="sim:ixgbe-10g", budget=20)["id"])  # a space of 8 configurations
    assert small["state"] == "completed" and small["progress"]["done"] == 8
    assert small["engine_done_at"] == 8
    # What the model stands for (a forwarding study, whatever the workload); no ignored-knob
    # notice: the model reads every knob of ixgbe-numa.
    assert len(small["notices"]) == 1, small["notices"]
    assert small["notices"][0].startswith("sim:ixgbe-10g models L3 forwarding of small frames on 8 cores, whatever "
                                          "the workload's protocol")
    listed = api.get("/v1/jobs", params={"testbed": "sim:ixgbe-10g"}).json()["items"]
    assert listed[0]["engine_done_at"] == 8
    spent = wait_for(api, submit(api, testbed="sim:ixgbe-10g", budget=4, warm_start=False)["id"])
    assert spent["progress"]["done"] == 4 and spent["engine_done_at"] is None


@pytest.mark.slow
def test_trials_are_paginated_and_sortable_by_any_metric(api: TestClient) -> None:
    job = wait_for(api, submit(api, budget=15)["id"])
    url = f"/v1/jobs/{job['id']}/trials"

    first = api.get(url, params={"sort": "-throughput_gbps", "limit": 6}).json()
    assert first["total"] == 15 and len(first["items"]) == 6 and first["simulated"] is True
    assert first["next"] is not None and "offset=6" in first["next"]
    rest = api.get(first["next"]).json()
    rest2 = api.get(rest["next"]).json()
    assert rest2["next"] is None
    values = [t["metrics"]["throughput_gbps"] for t in first["items"] + rest["items"] + rest2["items"]]
    assert values == sorted(values, reverse=True) and len(values) == 15

    ascending = api.get(url, params={"sort": "cpu_rx_pct", "limit": 100}).json()["items"]
    cpu = [t["metrics"]["cpu_rx_pct"] for t in ascending]
    assert cpu == sorted(cpu)
    by_number = api.get(url).json()["items"]
    assert [t["number"] for t in by_number] == list(range(15))
    assert all(t["config_hash"] and t["config"] and t["score"] for t in by_number)
    scored = api.get(url, params={"sort": "-score"}).json()["items"]
    assert scored[0]["number"] == job["best"]["number"]


@pytest.mark.slow
def test_list_jobs_filters_and_paginates(api: TestClient) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    a = submit(api, testbed="sim:benson-40g", objectives=["throughput"])
    b = submit(api, testbed="sim:mishra-10g", objectives=["cpu", "throughput"])
    for job in (a, b):
        wait_for(api, job["id"])

    everything = api.get("/v1/jobs").json()
    assert [j["id"] for j in everything["items"]] == [b["id"], a["id"]] and everything["total"] == 2
    assert api.get("/v1/jobs", params={"testbed": "sim:mishra-10g"}).json()["items"][0]["id"] == b["id"]
    assert [j["id"] for j in api.get("/v1/jobs", params={"objective": "cpu"}).json()["items"]] == [b["id"]]
    assert api.get("/v1/jobs", params={"state": "completed"}).json()["total"] == 2
    assert api.get("/v1/jobs", params={"state": "running"}).json()["total"] == 0
    assert api.get("/v1/jobs", params={"created_after": before.isoformat()}).json()["total"] == 2
    assert api.get("/v1/jobs", params={"created_before": before.isoformat()}).json()["total"] == 0
    page = api.get("/v1/jobs", params={"limit": 1}).json()
    assert len(page["items"]) == 1 and page["next"] is not None
    assert api.get(page["next"]).json()["items"][0]["id"] == a["id"]
    assert everything["items"][0]["best"] is None  # lists stay cheap


@pytest.mark.slow
def test_jobs_on_one_testbed_wait_for_each_other(make_api: AppFactory) -> None:
    with make_api(pace_s=0.05) as api:
        first = submit(api, budget=20)  # at least a second, paced
        other = submit(api, testbed="sim:ixgbe-10g", budget=5)
        second = submit(api, budget=5)

        waiting = api.get(f"/v1/jobs/{second['id']}").json()
        assert waiting["state"] == "pending" and waiting["queue_position"] == 1
        assert api.get(f"/v1/jobs/{first['id']}").json()["state"] == "running"
        jobs = [wait_for(api, job["id"]) for job in (first, second, other)]

    one, two, three = (
        (datetime.fromisoformat(j["started_at"]), datetime.fromisoformat(j["finished_at"])) for j in jobs
    )
    assert two[0] >= one[1], "the second job on the testbed started before the first ended"
    assert three[0] < one[1], "a job on another testbed should not wait"


@pytest.mark.slow
def test_cancel_a_running_job_ends_it_cancelled_after_the_trial_in_flight(make_api: AppFactory) -> None:
    with make_api(pace_s=0.05) as api:
        job = submit(api, budget=200)
        running = wait_for(api, job["id"], done=3)
        assert running["state"] == "running" and running["queue_position"] is None
        assert running["eta_s"] is not None and running["eta_s"] > 0
        assert running["best"] is not None and running["progress"]["fraction"] < 1

        response = api.post(f"/v1/jobs/{job['id']}/cancel")
        assert response.status_code == 202 and response.json()["cancel_requested"] is True
        ended = wait_for(api, job["id"])

        assert ended["state"] == "cancelled" and ended["finished_at"] is not None
        assert 3 <= ended["progress"]["done"] < 200 and ended["progress"]["running"] == 0
        again = api.post(f"/v1/jobs/{job['id']}/cancel")
        assert again.status_code == 409 and "already cancelled" in again.json()["message"]


@pytest.mark.slow
def test_the_trial_hook_sees_each_new_trial_but_not_the_replayed_ones(make_api: AppFactory) -> None:
    """The hook tests pace jobs with (``create_app(trial_hook=...)``): called on the job's thread
    after every trial measured in this run, with the job's stop event; a trial replayed when
    the job resumes is not new."""
    seen: list[tuple[int, str]] = []
    stops: set[type] = set()

    def record(event: TrialEvent, stop: threading.Event) -> None:
        stops.add(type(stop))
        seen.append((event.number, event.source))
        stop.wait(0.05)  # as a pacing hook does: the stop below lands mid-job

    with make_api(trial_hook=record) as api:
        job = submit(api, budget=30, repeats=1)
        wait_for(api, job["id"], done=3)
    # The app stopped under the job (interrupted); the next start resumes it.
    first = list(seen)
    assert first and all(source != "replayed" for _, source in first) and stops == {threading.Event}
    seen.clear()
    with make_api(trial_hook=lambda event, stop: seen.append((event.number, event.source))) as api:
        ended = wait_for(api, job["id"])
    assert ended["state"] == "completed" and ended["progress"]["done"] == 30
    assert all(source != "replayed" for _, source in seen)
    assert sorted(n for n, _ in first + seen) == list(range(30)), (first, seen)  # each once (0: the default)


def test_cancel_a_queued_job_is_immediate(make_api: AppFactory) -> None:
    with make_api(pace_s=0.05) as api:
        running = submit(api, budget=40)
        queued = submit(api, budget=40)

        response = api.post(f"/v1/jobs/{queued['id']}/cancel")
        assert response.status_code == 200 and response.json()["state"] == "cancelled"
        assert api.post(f"/v1/jobs/{running['id']}/cancel").status_code == 202
        assert wait_for(api, running["id"])["state"] == "cancelled"
        assert api.get(f"/v1/jobs/{queued['id']}").json()["progress"]["done"] == 0


def test_unknown_jobs_are_404(api: TestClient) -> None:
    for method, path in (("GET", "/v1/jobs/999"), ("GET", "/v1/jobs/999/trials"),
                         ("POST", "/v1/jobs/999/cancel"), ("GET", "/v1/jobs/999/events")):
        response = api.request(method, path)
        assert response.status_code == 404, (path, response.text)
        assert response.json()["error"] == "not_found" and "999" in response.json()["message"]


def test_a_job_that_ends_cancelled_while_its_view_is_read_still_says_cancel_requested(engine: Engine) -> None:
    """The race behind a flaky 202: a cancelled job ends (stored ``cancelled``, then forgotten
    by the manager) while its view is computed. Read first and the manager asked after, the
    view saw a running job whose stored flag the runner's stats write had dropped, then heard
    that the job had ended: no cancel at all. Asked first, the manager still has the job."""
    from sqlalchemy import event

    from nictune import db
    from nictune.api.manager import CANCEL_KEY
    from nictune.api.routers.jobs import read_job
    from nictune.jobs import JobSpec, create_job

    job_id = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=5))
    with db.session_scope(engine) as s:
        db.set_job_state(s, db.get_job(s, job_id), "running")  # the stored flag is gone
    read = []

    def reads(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith("SELECT") and " jobs" in statement:
            read.append(statement)

    def end() -> None:
        with db.session_scope(engine) as s:
            ended = db.get_job(s, job_id)
            db.set_job_state(s, ended, "cancelled")
            ended.stats[CANCEL_KEY] = True

    class Ending:
        """A manager whose job ends as soon as the view has read it, or right after answering."""

        def cancel_requested(self, job: int) -> bool:
            event.remove(engine, "after_cursor_execute", reads)
            if read:  # the view read the running job first; it has ended since: forgotten here
                return False
            end()  # asked first: the job still runs, and ends right after this answer
            return True

        def queue_position(self, job: int) -> None:
            return None

        def waiting_for(self, job: int) -> None:
            return None

    event.listen(engine, "after_cursor_execute", reads)
    view = read_job(engine, Ending(), job_id)  # type: ignore[arg-type]
    assert view.state in ("running", "cancelled") and view.cancel_requested is True
