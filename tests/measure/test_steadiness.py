"""Runs too far apart for one steady host: when `measure` warns, and what it says."""

from __future__ import annotations

import json

import pytest

from nictune.cli.main import main
from nictune.measure.steadiness import UNSTEADY_SHARE, unsteady_runs


def _runs(*gbps: float) -> list[dict[str, float]]:
    return [{"throughput_gbps": v, "loss_pct": 0.0} for v in gbps]


def test_a_steady_hosts_spread_is_not_a_warning() -> None:
    assert unsteady_runs(_runs(12.1, 12.9, 11.6, 13.0, 12.4)) is None  # the veth table's few per cent
    assert unsteady_runs(_runs(10.0, 10.0 * UNSTEADY_SHARE)) is None  # on the line: steady
    assert unsteady_runs(_runs(7.0)) is None and unsteady_runs([]) is None  # one run says nothing
    assert unsteady_runs([{"latency_p99_us": 30.0}, {"latency_p99_us": 90.0}]) is None  # no throughput
    assert unsteady_runs(_runs(0.0, 0.0)) is None


def test_a_slow_spell_is_named_run_by_run() -> None:
    # seed 3's configuration on 2026-11-29: two slow runs at the start, then the host's pace
    found = unsteady_runs(_runs(7.0, 9.4, 11.2, 13.1, 13.2))
    assert found is not None
    assert (found.slowest, found.fastest, found.slow_runs, found.runs) == (7.0, 13.2, (1,), 5)
    text = found.text()
    assert "7 to 13.2 Gbit/s over 5 runs (run 1 under 70% of the fastest)" in text
    assert "alternating rounds" in text and "simulated" not in text
    several = unsteady_runs(_runs(13.0, 6.8, 12.9, 6.5, 6.6))
    assert several is not None and several.slow_runs == (2, 4, 5)
    assert "(runs 2, 4 and 5 under" in several.text()
    assert several.text(simulated=True).endswith("the simulated noise (--noise) is that large.")
    packets = unsteady_runs([{"packet_rate_mpps": 1.9}, {"packet_rate_mpps": 0.9}], metric="packet_rate_mpps")
    assert packets is not None and "packet rate ranged from 0.9 to 1.9 Mpps over 2 runs" in packets.text()


def test_measure_warns_in_json_and_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["measure", "--noise", "0.5", "--repeats", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rates = [r["throughput_gbps"] for r in out["repeats"]]
    assert min(rates) < UNSTEADY_SHARE * max(rates)  # the model's noise asked for that large
    assert len(out["warnings"]) == 1 and "the simulated noise (--noise)" in out["warnings"][0]
    assert main(["measure", "--noise", "0.5", "--repeats", "6"]) == 0
    captured = capsys.readouterr()
    assert "warning: unsteady runs" in captured.err and "unsteady" not in captured.out
    assert main(["measure", "--noise", "0", "--repeats", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []
