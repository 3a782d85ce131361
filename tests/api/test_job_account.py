"""Issue 31: one account of a job. ``nictune.jobs.report.job_account`` builds it; the CLI prints
it, the report is built from it, ``GET /v1/jobs/{id}/account`` serves it and the best trial and
baselines of ``GET /v1/jobs/{id}`` are read from it."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from nictune.api.schemas.jobs import Baselines
from nictune.api.views import json_safe
from nictune.cli.main import app as cli_app
from nictune.db import open_database, session_scope
from nictune.jobs.report import job_account
from nictune.report.data import load_job

from .support import submit, wait_for


def _local(db_url: str, job_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            return job_account(s, job_id)
    finally:
        engine.dispose()


def test_the_api_the_cli_and_the_report_give_one_account_of_a_job(api: TestClient, db_url: str) -> None:
    job = submit(api, budget=14, repeats=2, seed=5, constraints=["loss_pct<=5"])
    view = wait_for(api, job["id"])
    assert view["state"] == "completed"
    account, rows = _local(db_url, job["id"])

    # The API serves the account itself, with its trial rows: the local function's result.
    served = api.get(f"/v1/jobs/{job['id']}/account")
    assert served.status_code == 200, served.text
    assert served.json() == json.loads(json.dumps(json_safe({"account": account, "trials": rows}), default=str))
    assert len(served.json()["trials"]) == 14 and served.json()["account"]["best"] is not None

    # The job view's best trial and baselines are the account's.
    best = account["best"]
    assert view["best"]["number"] == best["number"] == account["recommendation"]["number"]
    assert view["best"]["config_hash"] == best["config_hash"] and view["best"]["config"] == best["config"]
    assert view["best"]["changes"] == account["changes"]
    assert view["baselines"] == Baselines.model_validate(account["baselines"]).model_dump(mode="json")

    # `history show N --json` prints the same account (and trials) locally.
    shown = CliRunner().invoke(cli_app, ["history", "show", str(job["id"]), "--db", db_url, "--json"])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert document == json.loads(json.dumps(account | {"trials": rows}, default=str))

    # The report reads the same account.
    report = load_job(open_database(db_url), job["id"])
    assert report.info["best"]["number"] == best["number"] and report.info["baselines"] == account["baselines"]


def test_the_account_of_an_unknown_job_is_a_404(api: TestClient) -> None:
    missing = api.get("/v1/jobs/999999/account")
    assert missing.status_code == 404 and missing.json()["field"] == "job_id"
