"""Issue 6 through the API: default engines, racing, the recommendation's interval, the
noise estimate and the Pareto front of multi-objective jobs."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.support import submit, wait_for


@pytest.mark.slow
def test_a_single_objective_job_shows_its_recommendation_and_noise(api: TestClient) -> None:
    job = wait_for(api, submit(api, budget=12, repeats=3, noise=0.03)["id"], timeout=120)
    assert job["state"] == "completed" and job["engine"] == "bayes" and job["racing"] is True
    rec = job["recommendation"]
    assert rec["number"] == job["best"]["number"] and rec["n"] == 3
    assert rec["low"] < rec["mean"] < rec["high"] and "±" in rec["text"]
    assert 0 < job["noise"]["objective"]["cv"] < 0.2
    assert job["runs"] >= 12 and job["front"] is None


@pytest.mark.slow
def test_two_objectives_run_nsga2_and_return_the_front(api: TestClient) -> None:
    job = wait_for(api, submit(api, objectives=["throughput", "interrupts"], budget=16)["id"], timeout=120)
    assert job["state"] == "completed" and job["engine"] == "nsga2" and job["racing"] is False
    assert job["front"] and all({"number", "config_hash", "metrics"} <= set(f) for f in job["front"])


def test_a_single_objective_engine_with_two_objectives_is_a_422(api: TestClient) -> None:
    response = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", "objectives": ["throughput", "loss"],
                                          "engine": "ga"})
    assert response.status_code == 422
    body = response.json()
    assert body["field"] == "engine" and "nsga2" in body["allowed"]


@pytest.mark.slow
def test_a_service_job_whose_race_moves_ends_with_its_recommendation_measured_to_its_repeats(
        api: TestClient) -> None:
    """Issue 34 through the service: noise high enough (40 % CV) and a loss limit near it make
    the recommendation move during the final race; the job still hands back a configuration
    with its three runs, and says how the race ended."""
    job = wait_for(api, submit(api, testbed="sim:cai-100g", workload="udp", constraints=["loss<=0.1"],
                               engine="random", budget=15, seed=7, noise=0.4, repeats=3,
                               warm_start=False)["id"], timeout=120)
    assert job["state"] == "completed", job
    assert job["race"]["decided"] is True and 0 < job["race"]["measurements"] <= job["race"]["cap"]
    assert job["recommendation"]["n"] >= 3


@pytest.mark.slow
def test_short_runs_first_through_the_service(api: TestClient) -> None:
    """Issue 29: the service takes the same short-run options as the CLI and says how the
    screening went; values that cannot work are a 422 naming the field."""
    job = wait_for(api, submit(api, budget=20, seed=3, repeats=3, short_run_s=2, warm_start=False)["id"],
                   timeout=120)
    assert job["state"] == "completed", job
    short = job["short_runs"]
    assert short["duration_s"] == 2 and short["risk"] == 0.05
    assert short["screened"] + short["promoted"] >= 1 and short["runs"] == short["screened"] + short["promoted"]
    assert job["bench_seconds"] == job["runs"] * 11 + short["runs"] * 3  # 1 s warm-up + the measured seconds
    assert job["recommendation"]["n"] >= 3
    for body, field in [({"short_run_s": 10}, "short_run"), ({"short_run_s": 0.1}, "short_run_s"),
                        ({"short_run_s": 2, "racing": False}, "short_run"), ({"short_risk": 0.9}, "short_risk")]:
        response = api.post("/v1/jobs", json={"testbed": "sim:benson-40g", **body})
        assert response.status_code == 422, (body, response.text)
        assert response.json()["field"] == field, response.json()
