"""`nictune optimize --time-limit/--patience`: bad values exit 2 naming the option; the result,
--json and `history show` say why the job stopped; --resume keeps the stored rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.system  # runs nictune in subprocesses


def _nictune(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path / 'h.db'}", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.mark.parametrize(("args", "needle"), [
    (["--time-limit", "0"], "time-limit must be a positive duration: seconds (90, 90s), minutes (20m) or hours"),
    (["--time-limit", "10 minutes"], "time-limit must be a positive duration"),
    (["--time-limit", "-5m"], "time-limit must be a positive duration"),
    (["--patience", "0"], "patience must be a whole number of measured configurations, at least 1"),
    (["--param", "ei_stop=5"], "parameter 'ei_stop' = 5 is invalid; expected a number from 0 to 1"),
    (["--server", "http://127.0.0.1:1", "--patience", "0"], "patience must be a whole number"),
])
def test_bad_stopping_options_exit_2_naming_the_option(tmp_path: Path, args: list[str], needle: str) -> None:
    res = _nictune(tmp_path, "optimize", "-o", "throughput", "-b", "4", *args)
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in " ".join(res.stderr.split()), res.stderr
    assert "Traceback" not in res.stderr


def test_patience_in_the_result_json_and_history(tmp_path: Path) -> None:
    args = ["optimize", "-o", "throughput", "-t", "sim:benson-40g", "-w", "udp", "-b", "200", "--seed", "3",
            "--no-warm-start", "--patience", "8"]
    res = _nictune(tmp_path, *args)
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stdout.split())
    assert "stopped: 8 measured configurations in a row did not improve the recommendation (patience 8;" in said
    doc = json.loads(_nictune(tmp_path, *args, "--json").stdout)
    assert doc["stop_reason"] == "patience" and doc["patience"] == 8 and doc["trials"] < 200
    assert doc["recommendation"]["interval"]["n"] == 3
    shown = _nictune(tmp_path, "history", "show", "1")
    assert "did not improve the recommendation (patience 8;" in " ".join(shown.stdout.split())
    assert json.loads(_nictune(tmp_path, "history", "show", "1", "--json").stdout)["stop_reason"] == "patience"
    # A resumed job keeps its rules: changing them is refused.
    refused = _nictune(tmp_path, "optimize", "--resume", "1", "--patience", "3")
    assert refused.returncode == 2 and "--patience cannot change it" in " ".join(refused.stderr.split())


@pytest.mark.slow
def test_optimize_through_the_service_takes_the_same_rules(db_url: str, tmp_path: Path) -> None:
    from tests.api.server import running_server
    from tests.api.test_server import cli_token

    token = cli_token(db_url, "submit", "cli")
    with running_server(db_url, tmp_path / "server.log") as server:
        res = _nictune(tmp_path, "optimize", "-o", "throughput", "-w", "udp", "-b", "200", "--seed", "3",
                       "--no-warm-start", "--patience", "8", "--time-limit", "20m", "--server", server.url,
                       "--token", token, "--json")
        assert res.returncode == 0, res.stderr
        job = json.loads(res.stdout)
        assert job["stop_reason"] == "patience" and job["patience"] == 8 and job["time_limit_s"] == 1200.0
        assert job["progress"]["done"] < 200
        text = _nictune(tmp_path, "history", "show", str(job["job_id"]), "--server", server.url, "--token", token)
        assert "did not improve the recommendation (patience 8;" in " ".join(text.stdout.split()), text.stdout
