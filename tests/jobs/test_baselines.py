"""A job measures its space's stock profiles at its start, and every front shows the
recommendation against the default and each of them (issue 30): the end of ``optimize``
(and ``--json``), ``history show``, the report and the API's job view."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nictune import db
from nictune.db import open_database
from nictune.db.auth import create_token
from nictune.jobs import job_report, trial_rows
from nictune.jobs.baselines import compare_baselines, comparison_rows
from nictune.jobs.runner import start_configs
from nictune.optimizer import Goal
from nictune.search_spaces import load_space

pytestmark = pytest.mark.slow  # its module fixtures run whole jobs


STOCK = ["tuned-network-throughput", "tuned-network-latency", "esnet"]
BENSON = load_space("benson-40g")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="220", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, env=env,
                          timeout=300)


@dataclass(frozen=True)
class Finished:
    url: str
    job_id: int
    stdout: str


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    """A sim job on benson-40g run by the CLI, on its own SQLite file."""
    url = f"sqlite:///{tmp_path_factory.mktemp('baselines') / 'jobs.db'}"
    res = _cli("optimize", "--objective", "throughput", "--budget", "9", "--seed", "3", "--db", url)
    assert res.returncode == 0, res.stderr
    found = re.search(r"job id: (\d+)", res.stdout)
    assert found, res.stdout
    return Finished(url, int(found.group(1)), res.stdout)


def test_the_job_starts_with_the_default_the_stock_profiles_and_the_baseline(finished: Finished) -> None:
    dbe = open_database(finished.url)
    try:
        with db.session_scope(dbe) as s:
            rows = trial_rows(db.job_trial_summaries(s, finished.job_id))
        report = job_report(dbe, finished.job_id)
    finally:
        dbe.dispose()
    starts = start_configs(BENSON)
    assert [r["config_hash"] for r in rows[: len(starts)]] == [c.hash for c in starts]
    assert len(starts) == 5 and report["trials"] == 9  # the stock profiles count in the budget
    comparison = report["baselines"]
    assert [b["name"] for b in comparison["baselines"]] == ["default", *STOCK]
    assert [b["number"] for b in comparison["baselines"]] == [0, 1, 2, 3]
    assert all(b["state"] == "completed" and b["value"] is not None for b in comparison["baselines"])
    assert [b["stock"] for b in comparison["baselines"]] == [False, True, True, True]
    rec = comparison["recommendation"]
    assert rec["number"] == report["best"]["number"] and rec["interval"]["low"] <= rec["value"]
    for b in comparison["baselines"]:
        assert b["change_pct"] == pytest.approx((rec["value"] - b["value"]) / abs(b["value"]) * 100)
        assert b["better"] == (rec["value"] > b["value"])
        assert b["interval"]["low"] < b["value"] < b["interval"]["high"]


def test_the_end_of_optimize_shows_each_stock_profile(finished: Finished) -> None:
    out = finished.stdout
    assert "recommendation vs the default and the stock profiles: throughput (Gbit/s, 90% CI; maximize) (simulated)" \
        in out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│ ")}
    for name in ("recommendation", "default", *(f"{p} (stock)" for p in STOCK)):
        assert name in lines, out
    for name in ("default", *(f"{p} (stock)" for p in STOCK)):
        assert re.search(r"[+-]\d+\.\d %", lines[name]), lines[name]
        assert re.search(r"\d ± \d", lines[name]), lines[name]
    assert "esnet (stock): cannot express 7 of its settings here" in out


@pytest.mark.system
def test_at_80_columns_every_name_is_whole(finished: Finished) -> None:
    # "tuned-network-throughput" and "tuned-network-latency" both used to end as
    # "tuned-netwo…" in a terminal of 80 columns: two rows nobody could tell apart.
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1")
    res = subprocess.run([sys.executable, "-m", "nictune", "history", "show", str(finished.job_id), "--db",
                          finished.url], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    out = res.stdout[res.stdout.index("recommendation vs the default and the stock profiles"):]
    table = out[: out.index("└")].splitlines()
    assert all(len(line) <= 80 for line in table), table
    names = [line.split("│")[1].strip() for line in table if line.startswith("│ ")]
    assert "…" not in "".join(names), names
    text = " ".join(n for n in names if n)
    for name in ("recommendation", "default", "tuned-network- throughput (stock)",
                 "tuned-network- latency (stock)", "esnet (stock)"):
        assert name in text, names


@pytest.mark.system
def test_optimize_json_and_history_show_carry_the_comparison(finished: Finished) -> None:
    res = _cli("history", "show", str(finished.job_id), "--db", finished.url)
    assert res.returncode == 0, res.stderr
    assert "tuned-network-latency (stock)" in res.stdout and "recommended vs it" in res.stdout
    res = _cli("history", "show", str(finished.job_id), "--db", finished.url, "--json")
    shown = json.loads(res.stdout)["baselines"]
    assert [b["name"] for b in shown["baselines"]] == ["default", *STOCK]
    # optimize --json, on a second job.
    res = _cli("optimize", "--objective", "throughput", "--budget", "6", "--seed", "4", "--db", finished.url,
               "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert [(b["name"], b["state"]) for b in doc["baselines"]["baselines"]] == \
        [("default", "completed"), *((p, "completed") for p in STOCK)]


@pytest.mark.system
def test_the_report_shows_the_stock_profiles_with_their_sources(finished: Finished, tmp_path: Path) -> None:
    res = _cli("report", str(finished.job_id), "--db", finished.url, "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "report.html").read_text()
    section = page[page.index("id=baselines"):page.index("<h2>Figures</h2>")]
    for name in ("recommendation", "default", *STOCK):
        assert f"<td>{name}" in section
    assert "https://fasterdata.es.net/host-tuning/linux/100g-tuning/" in section
    assert "/usr/lib/tuned/network-latency/tuned.conf" in section
    assert "Not expressed in space benson-40g" in section and "Simulated testbed" in section


@pytest.fixture
def read_token(finished: Finished) -> Iterator[str]:
    dbe = open_database(finished.url)
    with db.session_scope(dbe) as s:
        _, token = create_token(s, f"baselines-{os.getpid()}-{id(s)}", "read")
    dbe.dispose()
    yield token


def test_the_api_job_view_has_the_same_comparison(finished: Finished, read_token: str) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*httpx2.*")
        from fastapi.testclient import TestClient

    from nictune.api import ApiSettings, create_app

    with TestClient(create_app(ApiSettings(db_url=finished.url)),
                    headers={"Authorization": f"Bearer {read_token}"}) as client:
        body = client.get(f"/v1/jobs/{finished.job_id}").json()
    dbe = open_database(finished.url)
    try:
        local = job_report(dbe, finished.job_id)["baselines"]
    finally:
        dbe.dispose()
    api = body["baselines"]
    assert [b["name"] for b in api["baselines"]] == ["default", *STOCK]
    assert [b["change_pct"] for b in api["baselines"]] == pytest.approx([b["change_pct"] for b in local["baselines"]])
    assert api["recommendation"]["number"] == local["recommendation"]["number"] == body["best"]["number"]
    assert api["baselines"][3]["source"][0].startswith("https://fasterdata.es.net/")
    assert "not_expressed" in api["baselines"][1] and api["baselines"][1]["not_expressed"]


def _row(number: int, config_hash: str, state: str = "completed", gbps: float | None = None,
         error: str | None = None) -> dict[str, object]:
    return {"number": number, "state": state, "config_hash": config_hash, "repeats": 2, "error": error,
            "metrics": {} if gbps is None else {"throughput_gbps": gbps, "loss_pct": 0.0}}


def test_a_failed_stock_profile_is_shown_failed_and_an_unreached_one_not_measured() -> None:
    goal = Goal.from_names(["throughput"], [])
    default, tp, esnet = (BENSON.default().hash, BENSON.profile("tuned-network-throughput").hash,
                          BENSON.profile("esnet").hash)
    rows = [_row(0, default, gbps=8.0), _row(1, tp, gbps=10.0), _row(3, esnet, "failed", error="ethtool -G: boom"),
            _row(4, "f" * 64, gbps=20.0)]
    cmp = compare_baselines(BENSON, goal, {}, rows, rows[3])
    assert cmp is not None
    states = {b["name"]: (b["state"], b["number"], b["change_pct"]) for b in cmp["baselines"]}
    assert states["default"] == ("completed", 0, pytest.approx(150.0))
    assert states["tuned-network-throughput"] == ("completed", 1, pytest.approx(100.0))
    assert states["tuned-network-latency"] == ("not measured", None, None)
    assert states["esnet"] == ("failed", 3, None)
    text = {r["name"]: r for r in comparison_rows(cmp)}
    assert text["esnet (stock)"]["note"] == "failed: ethtool -G: boom"
    assert text["default"]["vs"] == "+150.0 % (better)"
    assert compare_baselines(BENSON, goal, {}, rows, None) is None


def test_a_minimised_objective_is_better_when_lower() -> None:
    goal = Goal.from_names(["cpu"], [])
    default = BENSON.default().hash
    rows = [{**_row(0, default), "metrics": {"cpu_rx_pct": 80.0, "throughput_gbps": 8.0}},
            {**_row(5, "e" * 64), "metrics": {"cpu_rx_pct": 40.0, "throughput_gbps": 8.0}}]
    cmp = compare_baselines(BENSON, goal, {}, rows, rows[1])
    assert cmp is not None
    entry = cmp["baselines"][0]
    assert entry["better"] is True and entry["change_pct"] == pytest.approx(-50.0)
