"""Stopping rules through the service: submitted, stored, shown as stop_reason; bad values 422."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from .support import submit, wait_for

LONG = {"testbed": "sim:benson-40g", "workload": "udp", "budget": 200, "repeats": 3, "seed": 3,
        "warm_start": False}


@pytest.mark.slow
def test_a_job_with_patience_stops_early_and_says_why(api: TestClient) -> None:
    job = wait_for(api, submit(api, **LONG, patience=8)["id"], timeout=120)
    assert job["state"] == "completed" and job["stop_reason"] == "patience"
    assert job["patience"] == 8 and job["time_limit_s"] is None
    assert job["progress"]["done"] < 200
    assert job["stop_text"].startswith("stopped: 8 measured configurations in a row did not improve")
    assert job["recommendation"]["n"] == 3  # the final race ran
    listed = api.get("/v1/jobs").json()["items"]
    assert listed[0]["stop_reason"] == "patience"


def test_a_time_limit_is_taken_as_text_or_seconds(api: TestClient) -> None:
    created = submit(api, **LONG | {"budget": 5}, time_limit="20m")
    assert created["time_limit_s"] == 1200.0 and created["stop_reason"] is None
    job = wait_for(api, created["id"], timeout=120)
    assert job["stop_reason"] == "budget" and job["elapsed_s"] > 0
    assert submit(api, **LONG | {"budget": 2}, time_limit=90)["time_limit_s"] == 90.0


@pytest.mark.parametrize(("fields", "field", "allowed"), [
    ({"time_limit": "0s"}, "time_limit", "20m"),
    ({"time_limit": "ten minutes"}, "time_limit", "20m"),
    ({"time_limit": -5}, "time_limit", "20m"),
    ({"time_limit": True}, "time_limit", ""),
    ({"patience": 0}, "patience", ">= 1"),
    ({"patience": "3"}, "patience", "integer"),
    ({"engine": "bayes", "engine_params": {"ei_stop": 2}}, "engine_params.ei_stop", "from 0 to 1"),
])
def test_bad_stopping_options_are_422_naming_the_field(api: TestClient, fields: dict[str, Any], field: str,
                                                       allowed: str) -> None:
    response = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 4} | fields)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["field"] == field and allowed in str(body.get("allowed")), body
