"""The dashboard's routes without a browser: the page, its assets, and the export/default endpoints."""

from __future__ import annotations

import json
import re
import time
import warnings
from typing import Any

import pytest
from fastapi.testclient import TestClient

from nictune.api.dashboard import router as dashboard
from nictune.api.dashboard.export_route import render_export
from nictune.db import open_database
from nictune.export import load_source

from .conftest import Tokens

META_RE = re.compile(r'<script type="application/json" id="nictune-meta">(.*?)</script>', re.S)


def _submit_and_finish(client: TestClient, tokens: Tokens, **fields: Any) -> dict[str, Any]:
    body = {"testbed": "sim:benson-40g", "budget": 6, "repeats": 1, "seed": 2} | fields
    created = client.post("/v1/jobs", json=body, headers=tokens.headers("submit"))
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    deadline = time.monotonic() + 30
    while True:
        job = dict(client.get(f"/v1/jobs/{job_id}", headers=tokens.headers()).json())
        if job["state"] in ("completed", "failed", "cancelled"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def test_the_page_is_served_with_its_metadata_and_a_strict_policy(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-security-policy"] == dashboard.CONTENT_SECURITY_POLICY
    policy = dashboard.CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in policy and "unsafe" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    found = META_RE.search(response.text)
    assert found is not None and dashboard.META_PLACEHOLDER not in response.text
    meta = json.loads(found.group(1))
    assert "throughput" in [o["name"] for o in meta["objectives"]]
    assert next(iter(meta["metrics"])) == "throughput_gbps"  # nictune's order, not sorted
    assert "tcp" in [w["name"] for w in meta["workloads"]]
    # The page needs no token (it holds no data); the API behind it does.
    assert client.get("/v1/jobs").status_code == 401


def test_assets_are_served_from_the_package_only(client: TestClient) -> None:
    assets = dashboard.load_assets()
    assert {"index.html", "style.css", "js/app.js", "js/api.js", "js/sse.js", "js/chart.js",
            "js/views/job.js", "js/views/jobs.js", "js/views/history.js"} <= set(assets)
    for name in assets:
        if name == "index.html":
            continue
        response = client.get(f"/static/{name}")
        assert response.status_code == 200, name
        assert response.content == assets[name].body
        if name.endswith(".js"):
            assert response.headers["content-type"] == "text/javascript; charset=utf-8"
        again = client.get(f"/static/{name}", headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
    for missing in ("nope.js", "../router.py", "..%2frouter.py", "%2e%2e/__init__.py", "index.html",
                    "js/../../router.py"):
        assert client.get(f"/static/{missing}").status_code == 404, missing


def test_every_module_import_resolves_and_nothing_comes_from_the_internet() -> None:
    assets = dashboard.load_assets()
    for name, asset in assets.items():
        text = asset.body.decode("utf-8")
        without_namespace = text.replace("http://www.w3.org/2000/svg", "")
        assert not re.search(r"https?://|//cdn|@import", without_namespace), f"{name} loads something remote"
        if not name.endswith(".js"):
            continue
        folder = name.rsplit("/", 1)[0]
        for spec in re.findall(r'^import .*? from "([^"]+)";', text, re.M):
            parts = f"{folder}/{spec}".split("/")
            resolved: list[str] = []
            for part in parts:
                if part == "..":
                    resolved.pop()
                elif part not in (".", ""):
                    resolved.append(part)
            assert "/".join(resolved) in assets, f"{name} imports {spec}, which is not shipped"
    index = assets["index.html"].body.decode()
    for ref in re.findall(r'(?:src|href)="(static/[^"]+)"', index):
        assert ref.removeprefix("static/") in assets, ref


def test_the_metadata_cannot_close_its_script_element() -> None:
    page = dashboard.render_index(b"<script>__NICTUNE_META__</script>", {"x": "</script><script>alert(1)</script>&"})
    assert page.count(b"</script>") == 1
    assert json.loads(page.decode()[len("<script>"):-len("</script>")]) == {
        "x": "</script><script>alert(1)</script>&"}


@pytest.mark.slow
def test_the_dashboard_stays_out_of_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and not any(p.startswith("/static") for p in paths)
    assert "/v1/jobs/{job_id}/export" in paths and "/v1/jobs/{job_id}/default" in paths
    # Every route once: a router included twice gives duplicate operation ids.
    app = client.app
    app.openapi_schema = None  # type: ignore[attr-defined]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app.openapi()  # type: ignore[attr-defined]
    assert not [str(w.message) for w in caught if "Duplicate Operation ID" in str(w.message)]


@pytest.mark.slow
def test_exports_match_what_nictune_export_writes(client: TestClient, tokens: Tokens, sqlite_url: str) -> None:
    job = _submit_and_finish(client, tokens)
    assert job["state"] == "completed", job
    job_id = job["id"]
    src = load_source(open_database(sqlite_url), job_id)
    expected_names = {("json", "apply"): f"nictune-job{job_id}.json",
                      ("sysctl", "apply"): f"90-nictune-job{job_id}.conf",
                      ("tuned", "apply"): f"nictune-job{job_id}-tuned.conf",
                      ("script", "apply"): f"nictune-job{job_id}-apply.sh",
                      ("script", "rollback"): f"nictune-job{job_id}-rollback.sh"}
    for (fmt, part), filename in expected_names.items():
        response = client.get(f"/v1/jobs/{job_id}/export", params={"format": fmt, "part": part},
                              headers=tokens.headers("read"))
        assert response.status_code == 200, response.text
        assert response.headers["content-disposition"] == f'attachment; filename="{filename}"'
        assert response.headers["x-nictune-simulated"] == "true"
        assert response.headers["x-nictune-trial"] == str(job["best"]["number"])
        # The same text as the CLI's renderers, but for the minute-resolution timestamp line.
        def strip(text: str) -> str:
            return re.sub(r"written by nictune .*", "", text)
        assert strip(response.text) == strip(render_export(src, fmt, part))
    document = client.get(f"/v1/jobs/{job_id}/export?format=json", headers=tokens.headers()).json()
    assert document["job_id"] == job_id and document["configuration_hash"] == job["best"]["config_hash"]
    assert document["testbed"]["simulated"] is True
    chosen = client.get(f"/v1/jobs/{job_id}/export?format=json&trial=0", headers=tokens.headers()).json()
    assert chosen["trial"] == 0


def test_export_errors_use_the_api_error_body(client: TestClient, tokens: Tokens) -> None:
    job_id = _submit_and_finish(client, tokens, budget=3)["id"]
    assert client.get(f"/v1/jobs/{job_id}/export?format=json").status_code == 401
    missing = client.get("/v1/jobs/999/export?format=json", headers=tokens.headers())
    assert missing.status_code == 404 and missing.json()["field"] == "job_id"
    bad = client.get(f"/v1/jobs/{job_id}/export?format=xml", headers=tokens.headers())
    assert bad.status_code == 422 and bad.json()["field"] == "format"
    no_trial = client.get(f"/v1/jobs/{job_id}/export?format=json&trial=99", headers=tokens.headers())
    assert no_trial.status_code == 422 and no_trial.json()["field"] == "trial"
    assert client.get(f"/v1/jobs/{job_id}/export?format=script&part=both", headers=tokens.headers()).status_code == 422
    for query, field in (("format=tuned&device=eth0%3Breboot", "device"), ("format=sysctl&include=network-latency",
                                                                          "include"),
                         ("format=tuned&include=a%20b", "include")):
        refused = client.get(f"/v1/jobs/{job_id}/export?{query}", headers=tokens.headers())
        assert refused.status_code == 422 and refused.json()["field"] == field, (query, refused.json())
    tuned = client.get(f"/v1/jobs/{job_id}/export?format=tuned&device=ens1f0&include=network-throughput",
                       headers=tokens.headers())
    assert tuned.status_code == 200
    assert "\ndevices=ens1f0\n" in tuned.text and "\ninclude=network-throughput\n" in tuned.text


@pytest.mark.parametrize("space", ["benson-40g"])
def test_the_default_endpoint_names_the_default_configuration(client: TestClient, tokens: Tokens, space: str) -> None:
    job = _submit_and_finish(client, tokens, space=space)
    body = client.get(f"/v1/jobs/{job['id']}/default", headers=tokens.headers()).json()
    assert body["objective"]["name"] == "throughput" and body["objective"]["direction"] == "maximize"
    assert body["simulated"] is True and body["note"]
    assert body["units"]["mtu"] == "bytes"
    trials = client.get(f"/v1/jobs/{job['id']}/trials?limit=100", headers=tokens.headers()).json()["items"]
    measured = [t for t in trials if t["config_hash"] == body["config_hash"] and t["state"] == "completed"]
    if measured:
        assert body["trial"]["number"] == measured[0]["number"]
        assert body["config"] == measured[0]["config"]
    else:
        assert body["trial"] is None
    assert client.get(f"/v1/jobs/{job['id']}/default").status_code == 401
    assert client.get("/v1/jobs/12345/default", headers=tokens.headers()).status_code == 404


def test_the_default_endpoint_falls_back_to_earlier_measurements(client: TestClient, tokens: Tokens) -> None:
    """A warm-started job does not measure the default again: the endpoint gives the earlier
    measurements of it (what the local report shows), with the spread of its repeats."""
    # Budget 9: the five start configurations (default, stock profiles, baseline) and four of the
    # engine's, so that the three best the warm start takes first from the cache are not the default.
    first = _submit_and_finish(client, tokens, repeats=2, racing=False, budget=9)
    body = client.get(f"/v1/jobs/{first['id']}/default", headers=tokens.headers()).json()
    assert body["trial"]["number"] == 0 and body["history"] is None
    spread = body["trial"]["spread"]["throughput_gbps"]
    assert spread["min"] < body["trial"]["metrics"]["throughput_gbps"] < spread["max"]
    second = _submit_and_finish(client, tokens, budget=3, seed=5)
    trials = client.get(f"/v1/jobs/{second['id']}/trials", headers=tokens.headers()).json()["items"]
    assert body["config_hash"] not in {t["config_hash"] for t in trials}
    again = client.get(f"/v1/jobs/{second['id']}/default", headers=tokens.headers()).json()
    assert again["trial"] is None and again["history"]["repeats"] == 2
    assert again["history"]["metrics"]["throughput_gbps"] == pytest.approx(body["trial"]["metrics"]["throughput_gbps"])
    assert again["history"]["spread"]["throughput_gbps"]["max"] == pytest.approx(spread["max"])
