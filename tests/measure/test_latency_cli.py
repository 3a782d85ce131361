"""The latency workload as a user drives it on a real veth pair: `nictune measure` and a small
`nictune optimize --objective latency`, then the history."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nictune.measure._base import LATENCY_METRICS
from nictune.measure.testbeds.veth import VethPair
from tests.measure.support import global_sysctls, unique_name, wait_no_processes

pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("sockperf") is None, reason="sockperf is not installed")]


def nictune(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nictune", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_measure_and_optimize_a_latency_workload(tmp_path: Path, state_dir: Path) -> None:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path}/h.db", "NICTUNE_STATE_DIR": str(state_dir.parent),
           "COLUMNS": "200"}
    before = global_sysctls()
    name = unique_name()
    res = nictune("measure", "--testbed", f"veth:{name}", "--workload", "latency", "--repeats", "1",
                  "--set", "busy_poll=50", "--json", env=env)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["simulated"] is False and set(out["metrics"]) == set(LATENCY_METRICS)
    m = out["metrics"]
    assert 1 < m["latency_p50_us"] <= m["latency_p99_us"] <= m["latency_p999_us"] < 1_000_000

    res = nictune("optimize", "--testbed", f"veth:{name}", "--objective", "latency", "--workload", "latency",
                  "--engine", "random", "--budget", "2", "--repeats", "1", "--json", env=env)
    assert res.returncode == 0, res.stderr
    job = json.loads(res.stdout)
    assert job["measured"] == 2 and job["best"]["metrics"]["latency_p99_us"] > 0
    assert "throughput_gbps" not in job["best"]["metrics"]
    shown = nictune("history", "show", str(job["job_id"]), env=env)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown
    header = " ".join(line for line in shown.stdout.splitlines() if line.startswith("┃"))
    assert "round trip p50" in header and "µs" in header and "throughput" not in header

    assert not VethPair(name).exists()
    assert global_sysctls() == before  # busy_poll is back
    assert not wait_no_processes(5)
