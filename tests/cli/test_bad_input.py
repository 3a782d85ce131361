"""Bad input to the CLI: exit 2 with a message naming the field, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HUGE = "99999999999999999999"  # beyond every database's INTEGER


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["history", "--since", "99999999d"], "out of the calendar's range"),
        (["history", "--since", "9999-12-31T23:59:59-05:00"], "out of the calendar's range"),
        (["history", "--since", "yesterday"], "expected a date"),
        (["history", "show", HUGE], "less than or equal to 2147483647"),
        (["export", HUGE, "--format", "json"], "less than or equal to 2147483647"),
        (["report", HUGE], "less than or equal to 2147483647"),
        (["optimize", "--resume", HUGE], "less than or equal to 2147483647"),
        (["optimize", "--objective", "throughput", "--budget", HUGE], "budget must be a positive number"),
        (["optimize", "--objective", "throughput", "--seed", "-1"], "seed must be between 0 and 2147483647"),
        (["optimize", "--objective", "throughput", "--seed", HUGE], "seed must be between 0 and 2147483647"),
        (["serve", "--log-level", "bogus"], "'bogus' is not one of"),
    ],
)
def test_bad_input_exits_2_naming_the_field(tmp_path: Path, args: list[str], needle: str) -> None:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path / 'h.db'}", "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=60,
                         env=env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in " ".join(res.stderr.split()), res.stderr
    assert "Traceback" not in res.stderr
