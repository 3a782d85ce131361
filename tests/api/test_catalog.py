"""Spaces, testbeds, metrics and the OpenAPI document."""

from __future__ import annotations

from typing import get_args

import pytest
from fastapi.testclient import TestClient

from nictune.api.schemas.trials import SORT_FIELDS, SortKey
from nictune.search_spaces import builtin_names
from tests.api.conftest import AppFactory

from .support import submit, wait_for


def test_spaces(shared_api: TestClient) -> None:
    listed = shared_api.get("/v1/spaces").json()["items"]
    assert [s["name"] for s in listed] == builtin_names()
    detail = shared_api.get("/v1/spaces/benson-40g").json()
    knobs = {k["name"]: k for k in detail["knobs"]}
    assert knobs["mtu"]["unit"] == "bytes" and "default" in detail["profiles"]
    missing = shared_api.get("/v1/spaces/nope")
    assert missing.status_code == 404 and "benson-40g" in missing.json()["allowed"]


@pytest.mark.slow
def test_testbeds(api: TestClient) -> None:
    wait_for(api, submit(api, budget=2)["id"])
    body = api.get("/v1/testbeds").json()
    available = {t["name"]: t for t in body["available"]}
    assert available["sim:benson-40g"]["simulated"] is True
    assert available["sim:benson-40g"]["default_space"] == "benson-40g"
    assert [t["name"] for t in body["stored"]] == ["sim:benson-40g"] and body["stored"][0]["jobs"] == 1
    assert body["stored"][0]["fingerprint"]["kind"] == "sim"


def test_operator_allowed_testbeds_are_listed(make_api: AppFactory) -> None:
    with make_api(testbeds=["veth:nt9"]) as api:
        available = {t["name"]: t for t in api.get("/v1/testbeds").json()["available"]}
    assert available["veth:nt9"]["simulated"] is False and available["veth:nt9"]["kind"] == "veth"


@pytest.mark.slow
def test_metrics_are_prometheus_text(api: TestClient) -> None:
    wait_for(api, submit(api, budget=4)["id"])
    wait_for(api, submit(api, budget=4, warm_start=False)["id"])  # same seed, no warm start: all cached
    response = api.get("/metrics")

    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    lines = dict(line.rsplit(" ", 1) for line in response.text.splitlines() if not line.startswith("#"))
    assert float(lines['nictune_jobs{state="completed"}']) == 2
    assert float(lines["nictune_trials_measured_total"]) == 4
    assert float(lines["nictune_cache_hits_total"]) == 4
    # Simulated runs are the model's seconds, not time spent: counted apart.
    assert float(lines["nictune_measurement_seconds_total"]) == 0
    assert float(lines["nictune_simulated_seconds_total"]) > 0
    assert 'nictune_service_jobs{status="queued"}' in lines


def test_metrics_need_a_token_unless_the_operator_makes_them_public(make_api: AppFactory) -> None:
    with make_api() as api:
        anonymous = api.get("/metrics", headers={"Authorization": ""})
        assert anonymous.status_code == 401
    with make_api(metrics_public=True) as api:
        scraped = api.get("/metrics", headers={"Authorization": ""})
        assert scraped.status_code == 200 and "nictune_jobs" in scraped.text
        assert api.get("/v1/jobs", headers={"Authorization": ""}).status_code == 401  # only /metrics


def test_openapi_documents_every_endpoint_with_examples(shared_api: TestClient) -> None:
    schema = shared_api.get("/openapi.json").json()
    paths = schema["paths"]
    for path in ("/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/trials", "/v1/jobs/{job_id}/cancel",
                 "/v1/jobs/{job_id}/events", "/v1/history/best", "/v1/history/trials",
                 "/v1/configurations/{config_hash}", "/v1/spaces", "/v1/spaces/{name}", "/v1/testbeds",
                 "/healthz", "/metrics"):
        assert path in paths, path
    components = schema["components"]["schemas"]
    assert components["JobCreate"]["examples"][0]["testbed"] == "sim:benson-40g"
    assert components["ErrorBody"]["examples"][0]["field"] == "budget"
    assert "bearer" in str(schema["components"]["securitySchemes"]).lower()
    assert "422" in paths["/v1/jobs"]["post"]["responses"]
    docs = shared_api.get("/docs")
    assert docs.status_code == 200
    # Served from the package: no third-party host on the page where an operator pastes a token.
    assert "://" not in docs.text.replace("http://www.w3.org", "")
    for asset in ("/docs-assets/swagger-ui-bundle.js", "/docs-assets/swagger-ui.css"):
        served = shared_api.get(asset)
        assert served.status_code == 200 and len(served.content) > 1000, asset


def test_sort_keys_cover_every_metric() -> None:
    assert set(get_args(SortKey)) == {f"{sign}{name}" for name in SORT_FIELDS for sign in ("", "-")}
