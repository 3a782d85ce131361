"""``GET /v1/workers``: empty with the local executor; the registry's workers and pools with Celery."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nictune.executors.pools import Registry, WorkerRecord
from tests.executors.support import REDIS_URL, delete_prefix, require_redis, running_worker, unique_prefix

from .conftest import AppFactory
from .support import submit, wait_for


def test_the_local_executor_has_no_workers(make_api: AppFactory) -> None:
    with make_api() as api:
        assert api.get("/v1/workers").json() == {"executor": "local", "workers": [], "pools": []}
        assert api.get("/v1/workers", headers={"Authorization": ""}).status_code == 401


@pytest.mark.slow
def test_workers_and_pools_come_from_the_registry(make_api: AppFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    require_redis()
    prefix = unique_prefix()
    monkeypatch.setenv("NICTUNE_KEY_PREFIX", prefix)
    registry = Registry(REDIS_URL, prefix)
    record = WorkerRecord("nictune-lab-veth-nt1@h", "h", 42, "veth:nt1", "lab", "veth", {"nic": "veth"},
                          state="busy", current={"key": "nictune-3-17-0", "job_id": 3, "trial_id": 17, "step": 0,
                                                 "since": "2026-11-22T21:00:00+00:00"})
    try:
        registry.join(record, simulated=False, default_space="veth")
        registry.publish(record, ttl_s=30)
        with make_api(executor="celery", broker_url=REDIS_URL, testbeds=["pool:nobody", "pool:lab"]) as api:
            # The catalogue names the pools as pools, described by their pinned record.
            listed = {t["name"]: t for t in api.get("/v1/testbeds").json()["available"]}
            assert listed["pool:lab"]["kind"] == "pool" and listed["pool:lab"]["default_space"] == "veth"
            assert listed["pool:lab"]["simulated"] is False and "veth pair" in listed["pool:lab"]["description"]
            assert listed["pool:nobody"]["kind"] == "pool" and listed["pool:nobody"]["default_space"] is None
            assert "none has joined it yet" in listed["pool:nobody"]["description"]
            body = api.get("/v1/workers").json()
            assert body["executor"] == "celery"
            (worker,) = body["workers"]
            assert (worker["testbed"], worker["pool"], worker["state"]) == ("veth:nt1", "lab", "busy")
            assert worker["current"]["trial_id"] == 17 and worker["heartbeat_at"]
            (pool,) = body["pools"]
            assert (pool["pool"], pool["live_workers"], pool["busy_workers"]) == ("lab", 1, 1)
            # A pool nobody joined cannot take a job: its fingerprint is unknown.
            response = api.post("/v1/jobs", json={"testbed": "pool:nobody", "budget": 1})
            assert response.status_code == 422
            assert response.json()["field"] == "testbed" and "no worker has joined" in response.json()["message"]
    finally:
        registry.close()
        delete_prefix(prefix)


def test_an_unreachable_registry_is_503(make_api: AppFactory) -> None:
    with make_api(executor="celery", broker_url="redis://127.0.0.1:1/0", testbeds=["pool:lab"]) as api:
        response = api.get("/v1/workers")
        assert response.status_code == 503, response.text
        assert "worker registry at redis://127.0.0.1:1/0" in response.json()["message"]
        # The catalogue still answers; it cannot say what the pool's workers measure.
        listed = {t["name"]: t for t in api.get("/v1/testbeds").json()["available"]}
        assert listed["pool:lab"]["kind"] == "pool" and listed["pool:lab"]["default_space"] is None


@pytest.mark.system
def test_a_waiting_job_can_be_cancelled_and_its_request_is_withdrawn(
        make_api: AppFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    require_redis()
    prefix = unique_prefix()
    env = {"NICTUNE_BROKER_URL": REDIS_URL, "NICTUNE_KEY_PREFIX": prefix, "NICTUNE_HEARTBEAT_S": "0.5",
           "NICTUNE_STATE_DIR": str(tmp_path / "state")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    registry = Registry(REDIS_URL, prefix)
    try:
        with running_worker("sim:benson-40g", "simw", env, tmp_path / "w1.log", registry):
            pass  # the pool exists from now on
        with make_api(executor="celery", testbeds=["pool:simw"]) as api:
            job_id = submit(api, testbed="pool:simw", budget=3)["id"]
            assert wait_for(api, job_id, {"waiting"})["progress"]["done"] == 0
            # A new reason, told through the executors' wait hook before the old one ends: the
            # job stays waiting and shows the new reason.
            manager = api.app.state.manager  # type: ignore[attr-defined]
            other = "waiting for a worker on pool simw: another reason"
            manager._on_wait(job_id, other)
            manager._on_wait(job_id, None)
            job = api.get(f"/v1/jobs/{job_id}").json()
            assert (job["state"], job["waiting_for"]) == ("waiting", other)
            assert api.post(f"/v1/jobs/{job_id}/cancel").status_code in (200, 202)
            assert wait_for(api, job_id)["state"] == "cancelled"
            # Nothing was measured: the trial that waited is left out, or (the job loop's choice)
            # stored as failed with the reason.
            for trial in api.get(f"/v1/jobs/{job_id}/trials").json()["items"]:
                assert trial["state"] == "failed" and "while waiting for a worker" in trial["error"], trial
        with running_worker("sim:benson-40g", "simw", env, tmp_path / "w2.log", registry):
            time.sleep(2.0)  # time to receive (and drop) the withdrawn request
            (worker,) = registry.workers("simw")
            assert worker.measured == 0
    finally:
        registry.close()
        delete_prefix(prefix)
