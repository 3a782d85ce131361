"""Helpers of the API tests: submitting small jobs and waiting for them."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient

FINAL = {"completed", "failed", "cancelled"}


def submit(api: TestClient, **fields: Any) -> dict[str, Any]:
    """Submit a small simulated job; returns the job body (asserts 201)."""
    body = {"testbed": "sim:benson-40g", "budget": 12, "repeats": 2, "seed": 1} | fields
    response = api.post("/v1/jobs", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def wait_for(api: TestClient, job_id: int, states: set[str] | None = None, timeout: float = 30.0,
             done: int | None = None) -> dict[str, Any]:
    """Poll the job until it is in one of ``states`` (or has ``done`` trials)."""
    wanted = states or FINAL
    deadline = time.monotonic() + timeout
    while True:
        job = dict(api.get(f"/v1/jobs/{job_id}").json())
        if (done is not None and job["progress"]["done"] >= done) or (done is None and job["state"] in wanted):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']} after {timeout}s: {job}"
        time.sleep(0.02)
