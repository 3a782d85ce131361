"""End to end: the real server in a subprocess, a token from the CLI, the client module."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from nictune.api.client import ApiError, Client
from nictune.cli import token as token_cli
from nictune.errors import InvalidInputError

from .server import free_port, running_server

pytestmark = pytest.mark.slow


def cli_token(db_url: str, role: str, name: str) -> str:
    result = CliRunner().invoke(token_cli.app, ["create", "--role", role, "--name", name, "--db", db_url])
    assert result.exit_code == 0, result.output
    return result.stdout.strip().splitlines()[0]


def test_submit_follow_and_read_the_best_configuration(db_url: str, tmp_path: Path) -> None:
    submit_token = cli_token(db_url, "submit", "ci")
    read_token = cli_token(db_url, "read", "dashboard")

    with running_server(db_url, tmp_path / "server.log") as server, Client(server.url, submit_token) as api:
        job = api.submit_job(testbed="sim:benson-40g", objectives=["throughput"], budget=20, repeats=2, seed=4)
        assert job["state"] in ("pending", "running") and job["simulated"] is True
        # The first lines an operator reads: where the dashboard is and which database it serves.
        banner = server.log.read_text()
        assert f"nictune service: dashboard {server.url}/  API docs {server.url}/docs" in banner
        assert f"  database {make_url(db_url).render_as_string(hide_password=True)}\n" in banner

        events = list(api.follow_events(job["id"]))
        trials = [e for e in events if e.event == "trial"]
        assert [e.id for e in trials] == list(range(20))
        assert events[-1].event == "end" and events[-1].data["state"] == "completed"

        with Client(server.url, read_token) as reader:
            best = reader.history_best("sim:benson-40g", workload="tcp", objective="throughput", top=3)
            final = reader.get_job(job["id"])
            assert best["simulated"] is True
            # History ranks every configuration ever measured by its mean; the job's answer is
            # its recommendation after the final race, which the end event carries.
            assert events[-1].data["best"]["config_hash"] == final["best"]["config_hash"]
            assert best["items"][0]["objective_value"] >= final["best"]["metrics"]["throughput_gbps"] - 1e-9
            assert best["items"][0]["jobs"] == [job["id"]]
            jumbo = reader.history_trials(testbed="sim:benson-40g", knobs={"mtu": 9000}, limit=100)
            assert all(t["config"]["mtu"] == 9000 for t in jumbo["items"])
            with pytest.raises(ApiError) as denied:
                reader.cancel_job(job["id"])
            assert denied.value.status == 403

        with pytest.raises(InvalidInputError) as invalid:
            api.submit_job(testbed="sim:benson-40g", budget=-1)
        assert invalid.value.field == "budget" and invalid.value.allowed == ">= 1"
        with pytest.raises(ApiError) as anonymous, Client(server.url, "") as nobody:
            nobody.list_jobs()
        assert anonymous.value.status == 401
        assert "role read" in str(anonymous.value) and "--token or $NICTUNE_TOKEN" in str(anonymous.value)
        assert Client(server.url, "").health()["status"] == "ok"

    server_log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in server_log, server_log


@pytest.mark.parametrize(("sig", "code", "said"), [
    # A service manager's stop: a clean end, nothing to report.
    (signal.SIGTERM, 0, ""),
    # Ctrl-C, as everywhere in the CLI.
    (signal.SIGINT, 130, "interrupted\n"),
])
def test_serve_stops_gracefully_with_0_on_sigterm_and_130_on_ctrl_c(tmp_path: Path, sig: int, code: int,
                                                                   said: str) -> None:
    # SIGINT may be ignored by whatever started the tests (a background job): restore it.
    command = [sys.executable, "-c", "import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
               "sys.argv = ['nictune', *sys.argv[1:]]\nfrom nictune.cli.entry import run\nrun()\n",
               "serve", "--port", str(port := free_port()), "--db", str(tmp_path / "n.db"), "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _answers(f"http://127.0.0.1:{port}/healthz"):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(sig)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == code, err
    # Its banner first (where the dashboard is, which database), then only what the stop said.
    banner, _, rest = err.partition("(jobs left unfinished resume when the service starts again)\n")
    assert banner.startswith("nictune service: dashboard") and rest == said and out == "", err
    assert not _answers(f"http://127.0.0.1:{port}/healthz")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False
