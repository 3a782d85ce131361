"""The engine benchmark (bench/engines.py): its scoring helpers, and that its quick mode runs.

The benchmark's figures are printed by the benchmark, not asserted here."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import pytest

from bench import engines
from bench.landscapes import sim_random, synthetic
from bench.landscapes._base import Optimum, regret
from nictune.optimizer import Score


def test_regret_is_the_gap_to_the_optimum_in_percent_and_100_for_an_infeasible_recommendation() -> None:
    opt = Optimum(value=10.0, feasible=True, config={}, method="test", feasible_share=None)
    assert regret(Score(True, 9.5), opt) == pytest.approx(5.0)
    assert regret(Score(True, 10.5), opt) == 0.0  # a noisy optimum search never makes regret negative
    assert regret(Score(False, 9.9, 0.1), opt) == 100.0
    assert regret(None, opt) == 100.0
    assert regret(Score(True, -30.0), opt) == 100.0  # capped


def test_mean_rank_shares_ties_and_skips_pairs_a_contender_did_not_run() -> None:
    runs = [
        {"landscape": "a", "seed": 0, "contender": "x", "regret": [1.0]},
        {"landscape": "a", "seed": 0, "contender": "y", "regret": [1.0]},
        {"landscape": "a", "seed": 0, "contender": "z", "regret": [3.0]},
        {"landscape": "a", "seed": 1, "contender": "x", "regret": [0.0]},
        {"landscape": "a", "seed": 1, "contender": "y", "regret": [2.0]},
        {"landscape": "a", "seed": 1, "contender": "z", "regret": [1.0]},
        {"landscape": "b", "seed": 0, "contender": "x", "regret": [5.0]},  # y and z missing
    ]
    assert engines.ranks(runs, 1) == {"x": pytest.approx(1.25), "y": pytest.approx(2.25), "z": pytest.approx(2.5)}


def test_verdict_compares_the_default_engine_with_the_best_optuna_contender() -> None:
    def row(contender: str, median: float, rank: float) -> dict[str, object]:
        return {"family": "sim", "split": "test", "budget": 30, "contender": contender,
                "median_regret": median, "mean_rank": rank}

    met = engines.verdicts([row("bayes", 1.0, 1.5), row("optuna-tpe", 2.0, 2.0), row("optuna-gp", 4.0, 2.5)])
    assert len(met) == 1 and "ratio 0.50" in met[0] and met[0].endswith("MET") and "optuna-tpe" in met[0]
    missed = engines.verdicts([row("bayes", 1.5, 1.5), row("optuna-tpe", 2.0, 2.0)])
    assert "ratio 0.75" in missed[0] and missed[0].endswith("NOT MET")
    rank = engines.verdicts([row("bayes", 1.0, 2.1), row("optuna-tpe", 2.0, 2.0), row("random", 9.0, 1.9)])
    assert rank[0].endswith("NOT MET")


def test_median_iqr_interpolates_and_sorts_infinity_last() -> None:
    assert engines.median_iqr([1.0, 2.0, 3.0, 4.0]) == (2.5, 1.75, 3.25)
    med, _, hi = engines.median_iqr([1.0, math.inf, 2.0])
    assert med == 2.0 and math.isinf(hi)


@pytest.mark.slow
def test_families_are_split_before_tuning_and_are_broad_enough() -> None:
    for family, least in ((sim_random.family(), 30), (synthetic.family(), 30)):
        assert len(family) >= least
        splits = {land.split for land in family}
        assert splits == {"dev", "test"}
        assert len({land.name for land in family}) == len(family)
    spaces = {land.space.name for land in synthetic.family()}
    assert len(spaces) >= 4  # over several built-in spaces, not one


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_quick_benchmark_runs_and_writes_its_table_csv_and_plot(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = engines.main(["--quick", "--families", "sim,synthetic", "--split", "test", "--seeds", "1",
                         "--contenders", "bayes,random,optuna-tpe", "--workers", "2", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "optuna-tpe" in out and "median regret" in out
    rows = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert {r["contender"] for r in rows} == {"bayes", "random", "optuna-tpe"}
    assert {r["family"] for r in rows} == {"sim", "synthetic"}
    assert all(0.0 <= float(r["median_regret"]) <= 100.0 for r in rows)
    assert any(p.suffix == ".png" and p.stat().st_size > 1000 for p in tmp_path.iterdir())
    # A second run answers from the cache of runs.
    assert engines.main(["--quick", "--families", "sim,synthetic", "--split", "test", "--seeds", "1",
                         "--contenders", "bayes,random,optuna-tpe", "--workers", "2", "--out", str(tmp_path)]) == 0
    assert "0 to run" in capsys.readouterr().out


def test_a_table_design_extended_keeps_its_entries_and_continues_its_sobol_sequence() -> None:
    from bench.collect_veth import build_design, extend_design
    from nictune.search_spaces import load_space

    space = load_space("veth")
    small = build_design(space, 6, 2811)
    more = extend_design(space, [dict(e) for e in small], 5, 2811)
    whole = build_design(space, 11, 2811)
    assert [e["hash"] for e in small + more] == [e["hash"] for e in whole]
    assert [e["label"] for e in more] == [f"sobol:{i}" for i in range(6, 11)]
    # A fixed entry the design lacks (a profile added to the space since) joins first.
    without = [e for e in small if e["label"] != "profile:esnet"]
    again = extend_design(space, without, 2, 2811)
    assert again[0]["label"] == "profile:esnet" and len(again) == 3


@pytest.mark.slow
def test_the_bench_races_as_many_finalists_as_a_job_of_each_budget() -> None:
    from bench.contenders import run_nictune
    from nictune.optimizer.racing import RacingPolicy

    land = synthetic.family()[0]
    sizes: list[int] = []

    def rule(budget: int) -> int:
        sizes.append(budget)
        return RacingPolicy.final_race_for(budget)

    run = run_nictune(land, "random", 0, 40, final_race=rule)
    assert run.evaluations == 40 - (2 + 1)  # a budget-40 job races 2 finalists, then its third run
    assert len(run.recommended) == 40 and set(sizes) >= set(range(1, 41))


def test_the_table_leaves_out_runs_that_ran_beside_other_work_and_the_collector_waits_for_quiet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import bench.collect_veth as collect
    from bench.landscapes import veth_table
    from nictune.search_spaces import load_space

    space = load_space("veth")
    entries = collect.build_design(space, 2, 2811)[:2]
    (tmp_path / "design.json").write_text(json.dumps({"space": "veth", "seed": 2811, "entries": entries}))

    def run(entry: dict[str, object], gbps: float, load: float, marked: bool = False) -> str:
        return json.dumps({"hash": entry["hash"], "workload": "tcp", "machine": "m", "pass": 1, "ok": True,
                           "loadavg_before": load, "metrics": {"throughput_gbps": gbps, "loss_pct": 0.0}}
                          | ({"beside_other_work": True} if marked else {}))

    (tmp_path / "runs.jsonl").write_text("\n".join([
        run(entries[0], 30.0, 1.1), run(entries[0], 15.0, 3.4),  # the second ran beside a benchmark
        run(entries[0], 18.0, 1.0, marked=True),  # so did this one, by its provenance, though its load was low
        run(entries[1], 9.0, 4.0)]) + "\n")
    table = veth_table.load_table("tcp", tmp_path)
    assert list(table.runs) == [entries[0]["hash"]]  # the busy-only configuration is not in the table
    assert table.mean(entries[0]["hash"])["throughput_gbps"] == 30.0
    assert veth_table.table_summary("tcp", tmp_path)["runs_left_out_not_quiet"] == 3
    assert veth_table.machines(tmp_path) == {"m": 1}

    loads = iter([3.5, 2.6, 1.2])
    slept: list[float] = []
    said: list[str] = []
    monkeypatch.setattr(collect, "_loadavg", lambda: next(loads))
    monkeypatch.setattr(collect.time, "sleep", slept.append)
    assert collect.wait_for_quiet(2.0, poll_s=5.0, say=said.append) == 10.0
    assert slept == [5.0, 5.0] and len(said) == 1 and "3.50 > 2" in said[0]


def test_the_table_surrogate_is_calibrated_to_the_spread_and_shares_of_the_tables_design_rows(
        tmp_path: Path) -> None:
    """A regression model predicts conditional means, which shrink toward the middle: the
    calibrated surrogate gives predictions over the space the design rows' distribution (its
    top near the best row, its share under a loss limit near theirs) and keeps their order."""
    import json
    import random
    import statistics

    import bench.collect_veth as collect
    from bench.landscapes import veth_table
    from nictune.search_spaces import load_space

    space = load_space("veth")
    entries = [e for e in collect.build_design(space, 80, 2811) if e["label"].startswith("sobol:")]
    noise = random.Random(3)

    def figures(values: dict[str, object]) -> dict[str, float]:
        mtu = float(values.get("mtu", 1500))  # type: ignore[arg-type]
        buffer = float(values.get("rmem_default", 212992))  # type: ignore[arg-type]
        gbps = 4.0 + 40.0 * (mtu / 65000) * (1.0 if values.get("busy_poll") == 50 else 0.6)
        return {"throughput_gbps": gbps * noise.uniform(0.9, 1.1),
                "loss_pct": (0.01 if buffer >= 4194304 else 2.0) * noise.uniform(0.5, 1.5)}

    lines = [json.dumps({"hash": e["hash"], "workload": "udp-jumbo", "machine": "m", "pass": p, "ok": True,
                         "loadavg_before": 1.0, "metrics": figures(e["config"])})
             for e in entries for p in (1, 2)]
    (tmp_path / "design.json").write_text(json.dumps({"space": "veth", "seed": 2811, "entries": entries}))
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    table = veth_table.load_table("udp-jumbo", tmp_path)
    assert len(table.design_rows()) == len(entries)
    rows = [table.mean(k) for k in table.design_rows()]
    best_row = max(r["throughput_gbps"] for r in rows)
    share = statistics.fmean(r["loss_pct"] <= 0.1 for r in rows)

    rng = random.Random(5)
    draws = [space.sample(rng) for _ in range(1500)]
    raw = veth_table.Surrogate(table, "random-forest", calibrate=False).predict(draws)
    calibrated = veth_table.Surrogate(table, "random-forest").predict(draws)
    top_raw = max(p["throughput_gbps"] for p in raw)
    top = max(p["throughput_gbps"] for p in calibrated)
    assert top_raw < 0.9 * best_row  # the shrinkage this corrects
    assert 0.95 * best_row <= top <= best_row * 1.0001
    assert abs(statistics.fmean(p["loss_pct"] <= 0.1 for p in calibrated) - share) < 0.1
    # The map is monotone: the model's order is kept.
    order_raw = sorted(range(len(draws)), key=lambda i: raw[i]["throughput_gbps"])
    values = [calibrated[i]["throughput_gbps"] for i in order_raw]
    assert all(a <= b + 1e-9 for a, b in itertools.pairwise(values))
