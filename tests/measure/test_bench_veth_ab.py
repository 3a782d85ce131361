"""bench/veth_ab.py: the rounds' order, the per-configuration figures against the reference,
where its configurations come from, and a real interleaved run on a veth pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import veth_ab
from nictune.search_spaces import load_space
from tests.measure.support import unique_name


def test_each_round_rotates_the_order() -> None:
    names = ["ref", "a", "b"]
    rounds = [veth_ab.order(names, r) for r in range(4)]
    assert rounds == [["ref", "a", "b"], ["a", "b", "ref"], ["b", "ref", "a"], ["ref", "a", "b"]]
    assert {tuple(r[:1]) for r in rounds[:3]} == {("ref",), ("a",), ("b",)}  # each first once in three


def _run(name: str, round_no: int, gbps: float, loss: float | None = 0.0) -> dict[str, object]:
    return {"name": name, "round": round_no, "throughput_gbps": gbps, "loss_pct": loss}


def test_summary_compares_with_the_reference_of_the_same_rounds() -> None:
    # A slow spell (round 1) halves both: the paired ratio sees through it, the means less so.
    runs = [_run("ref", 0, 12.0), _run("x", 0, 11.0), _run("ref", 1, 6.0), _run("x", 1, 5.5, 0.2),
            _run("ref", 2, 12.0), _run("x", 2, 11.0)]
    rows = {row["name"]: row for row in veth_ab.summary(runs, ["ref", "x"])}
    assert rows["ref"]["ratio_of_means"] == 1.0 and rows["ref"]["median_paired_ratio"] == 1.0
    assert rows["x"]["runs"] == [11.0, 5.5, 11.0]
    assert rows["x"]["mean_gbps"] == pytest.approx(27.5 / 3)
    assert rows["x"]["median_gbps"] == 11.0
    assert rows["x"]["loss_pct"] == pytest.approx(0.2 / 3)
    assert rows["x"]["ratio_of_means"] == pytest.approx((27.5 / 3) / 10.0)
    assert rows["x"]["median_paired_ratio"] == pytest.approx(11 / 12)


def test_contenders_come_from_rows_jobs_and_sets(tmp_path: Path) -> None:
    space = load_space("veth")
    job = tmp_path / "seed7.json"
    job.write_text(json.dumps({"best": {"config": {**space.default().as_dict(), "mtu": 9000}}}))
    named = veth_ab.contenders(space, [job], ["sobol:64"], ["txqueuelen=5000"])
    assert [name for name, _ in named] == ["sobol:64", "seed7", "set"]
    assert named[0][1].as_dict() == veth_ab.design_rows()["sobol:64"]
    assert named[1][1]["mtu"] == 9000
    assert named[2][1]["txqueuelen"] == 5000 and named[2][1]["mtu"] == space.default()["mtu"]


def test_bad_contenders_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    space = load_space("veth")
    with pytest.raises(SystemExit, match="no row 'sobol:9999'"):
        veth_ab.contenders(space, [], ["sobol:9999"], [])
    empty = tmp_path / "job.json"
    empty.write_text("{}")
    with pytest.raises(SystemExit, match="has no 'best'"):
        veth_ab.contenders(space, [empty], [], [])
    assert veth_ab.main(["--set", "mtu=12", "--testbed", "sim:benson-40g", "--rounds", "1"]) == 2
    assert "mtu" in capsys.readouterr().err


@pytest.mark.netns
def test_two_configurations_measured_interleaved_on_a_veth_pair(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs.jsonl"
    assert veth_ab.main(["--testbed", f"veth:{unique_name()}", "--workload", "tcp", "--duration", "1",
                         "--row", "default", "--set", "mtu=9000", "--rounds", "2", "--out", str(out)]) == 0
    runs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["round"], r["name"]) for r in runs] == [(0, "default"), (0, "set"), (1, "set"), (1, "default")]
    assert all(r["throughput_gbps"] > 0 for r in runs)
    printed = capsys.readouterr().out
    assert "against default (the reference)" in printed and "simulated" not in printed
