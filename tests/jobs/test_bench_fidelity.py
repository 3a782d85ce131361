"""The seconds-per-answer benchmark (bench/fidelity.py): its helpers, and that its quick mode
runs real jobs and writes its table. Its figures are printed by the benchmark, not asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import fidelity


def test_variants_are_job_options_and_nonsense_is_refused() -> None:
    assert fidelity.parse_variant("full") == {}
    assert fidelity.parse_variant("short=2,risk=0.1,patience=15") == {
        "short_run_s": 2.0, "short_risk": 0.1, "patience": 15}
    assert fidelity.parse_variant("engine=ga,time=600") == {"engine": "ga", "time_limit_s": 600.0}
    with pytest.raises(SystemExit):
        fidelity.parse_variant("shrot=2")


def test_regret_is_relative_to_the_optimum_for_either_sign() -> None:
    assert fidelity.regret(10.0, 9.8) == pytest.approx(0.02)
    assert fidelity.regret(-100.0, -102.0) == pytest.approx(0.02)  # a minimised objective, oriented
    assert fidelity.regret(0.0, -0.5) == pytest.approx(0.5)


@pytest.mark.slow
def test_the_quick_mode_runs_both_variants_and_writes_its_table(tmp_path: Path) -> None:
    assert fidelity.main(["--quick", "--workers", "1", "--out", str(tmp_path)]) == 0
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert {r["variant"] for r in runs} == {"full", "short=2"} and len(runs) == 12
    assert all(r["state"] == "completed" and r["seconds"] > 0 for r in runs)
    assert all(r["screened"] == 0 for r in runs if r["variant"] == "full")
    table = (tmp_path / "table.txt").read_text()
    assert "simulated testbeds: a model" in table and "discarded optima" in table
