"""`nictune history best` on a local database, as a user runs it after a job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def nictune(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{db}", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_history_best_ranks_the_job_recommendation_first_with_its_interval(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    run = nictune(db, "optimize", "--objective", "throughput", "--budget", "14", "--seed", "2", "--json")
    assert run.returncode == 0, run.stderr
    rec = json.loads(run.stdout)["recommendation"]

    best = nictune(db, "history", "best", "-t", "sim:benson-40g", "-w", "tcp", "-o", "throughput", "--top", "14",
                   "--json")
    assert best.returncode == 0, best.stderr
    rows = json.loads(best.stdout)
    assert rows[0]["config_hash"] == rec["hash"] and rows[0]["measurements"] == 3
    assert rows[0]["interval"]["low"] == pytest.approx(rec["interval"]["low"])
    lows = [r["interval"]["low"] for r in rows]
    assert lows == sorted(lows, reverse=True)
    assert any(r["measurements"] == 1 and r["value"] > rows[0]["value"] for r in rows), \
        "seed 2 has a single run above the recommendation's mean: the case the ranking is for"

    table = nictune(db, "history", "best", "-t", "sim:benson-40g", "-w", "tcp", "-o", "throughput", "--top", "3")
    assert table.returncode == 0, table.stderr
    assert "(90% CI)" in table.stdout and "±" in table.stdout and rec["hash"][:12] in table.stdout
    assert "conservative end" in table.stdout
    assert "simulated testbed: figures come from a model" in table.stdout
