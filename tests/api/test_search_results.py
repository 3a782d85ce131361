"""Issue 6 through the API: default engines, racing, the recommendation's interval, the
noise estimate and the Pareto front of multi-objective jobs."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.api.support import submit, wait_for


def test_a_single_objective_job_shows_its_recommendation_and_noise(api: TestClient) -> None:
    job = wait_for(api, submit(api, budget=12, repeats=3, noise=0.03)["id"], timeout=120)
    assert job["state"] == "completed" and job["engine"] == "bayes" and job["racing"] is True
    rec = job["recommendation"]
    assert rec["number"] == job["best"]["number"] and rec["n"] == 3
    assert rec["low"] < rec["mean"] < rec["high"] and "±" in rec["text"]
    assert 0 < job["noise"]["objective"]["cv"] < 0.2
    assert job["runs"] >= 12 and job["front"] is None


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
