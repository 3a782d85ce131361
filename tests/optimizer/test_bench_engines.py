"""Smoke test of the engine benchmark (bench/engines.py --quick, cut down further)."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "engines.py"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_engines", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_engines"] = module
    spec.loader.exec_module(module)
    return module


def test_share_interval_is_the_wilson_score_interval() -> None:
    wilson = _bench().wilson
    lo, hi = wilson(16, 20)  # 80 % of 20 seeds: textbook Wilson interval 58.4 % - 91.9 %
    assert lo == pytest.approx(0.584, abs=0.001) and hi == pytest.approx(0.919, abs=0.001)
    assert wilson(0, 20) == (0.0, pytest.approx(0.161, abs=0.001))
    assert wilson(20, 20) == (pytest.approx(0.839, abs=0.001), 1.0)
    narrow, wide = wilson(80, 100), wilson(16, 20)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]  # more seeds, a tighter figure


def test_ofat_comparison_is_taken_at_ofats_own_budget_in_each_seed() -> None:
    rows = [
        # ofat ends after 3 evaluations in seed 0 and after 4 in seed 1 (then its curve is flat).
        {"scenario": "s", "contender": "ofat", "_seeds": [0, 1],
         "_curves": [[0.5, 0.6, 0.7, 0.7, 0.7], [0.5, 0.9, 0.9, 0.95, 0.95]], "_finished": [3, 4]},
        {"scenario": "s", "contender": "bayes", "_seeds": [1, 0],
         "_curves": [[0.5, 0.6, 0.9, 0.92, 1.0], [0.4, 0.8, 0.8, 0.8, 0.8]], "_finished": [None, None]},
    ]
    note = _bench().ofat_comparison(rows, "bayes")["s"]
    # seed 0 at 3: 0.8 against 0.7 (better); seed 1 at 4: 0.92 against 0.95 (worse by 3 points)
    assert "budget 3-4" in note
    assert "better in 1/2 seeds, equal in 0, worse in 1 (by at most 3.00% of the optimum)" in note


def test_quick_benchmark_prints_a_table_and_writes_csv_and_plot(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    module = _bench()
    code = module.main(["--quick", "--seeds", "2", "--budget", "20", "--scenarios", "benson-tcp",
                        "--contenders", "bayes,random,optuna-tpe", "--optimum-evals", "300",
                        "--workers", "2", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "== benson-tcp" in out and "optuna-tpe" in out and "to 99%" in out and "95% CI" in out
    rows = list(csv.DictReader((tmp_path / "engines.csv").open()))
    assert {r["contender"] for r in rows} == {"bayes", "random", "optuna-tpe"}
    assert (tmp_path / "convergence-benson-tcp.png").stat().st_size > 1000
    # bayes starts with the baseline profile, which is at the model's optimum for Benson TCP.
    bayes = next(r for r in rows if r["contender"] == "bayes")
    assert float(bayes["q20"]) == pytest.approx(1.0, abs=1e-6)
    assert bayes["within2_at20_ci95"].startswith("(")  # the share's interval is in the CSV too
    # Each convergence curve is named by its seed (runs finish in any order in the pool).
    curves = list(csv.DictReader((tmp_path / "curves.csv").open()))
    for contender in ("bayes", "random", "optuna-tpe"):
        assert [r["seed"] for r in curves if r["contender"] == contender] == ["0"] * 20 + ["1"] * 20


def test_the_job_procedure_measures_each_configuration_once_and_keeps_four_measurements_for_the_end() -> None:
    module = _bench()
    problem = module._problem("linux-nic", 0.03)
    job = module.run_nictune(problem, "bayes", 0, 20, racing=True)
    # The search measures 16 configurations once each; the last 4 measurements are the final
    # race (the 3 best once more) and the recommendation's third measurement.
    assert job.evaluations == 16 and job.configurations == 16
    assert len(job.rec) == 20 and job.recommended[20]
    each = module.run_nictune(problem, "bayes", 0, 20, racing=True, race_each=True)
    assert each.evaluations == 18 and each.configurations < 18  # racing repeated some
