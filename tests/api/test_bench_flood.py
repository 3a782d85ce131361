"""bench/api_flood.py runs (a small flood): three phases, every probe answered. Its timings are
figures it prints, not asserted here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_the_flood_bench_runs_its_three_phases() -> None:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "api_flood.py"), "--seconds", "1", "--streams", "12",
                          "--pages", "12", "--tokens", "1", "--trial-delay", "0.05", "--min-trials", "5"],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [line.split() for line in run.stdout.splitlines() if line.split()[:1] in (["quiet"], ["streams"], ["pages"])]
    assert [r[0] for r in rows] == ["quiet", "quiet", "streams", "streams", "pages", "pages"], run.stdout
    assert all(int(r[6]) == 0 for r in rows), run.stdout  # no probe failed or timed out
    streams = " ".join(rows[2][7:])
    assert "200: 8" in streams and "429: 4" in streams, run.stdout  # one token: 8 streams at most
