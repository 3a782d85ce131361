"""The CLI's metric tables for a workload with a latency part: latency columns where the rows
have round trips, no column of "-" for a part that did not run."""

from __future__ import annotations

from nictune.cli._common import console
from nictune.cli.history import trials_table
from nictune.cli.results import default_vs_best_table

LATENCY = {"latency_p50_us": 20.0, "latency_p99_us": 50.0, "latency_p999_us": 90.0, "latency_mean_us": 25.0}
THROUGHPUT = {"throughput_gbps": 9.5, "loss_pct": 0.0, "cpu_rx_pct": 80.0}


def _headers(objectives: list[str], *rows: dict[str, float]) -> str:
    report = {"objectives": objectives, "best": None, "default_config": {"mtu": 1500}}
    trials = [{"number": i, "state": "completed", "source": "measured", "config_hash": "ab" * 32,
               "config": {"mtu": 9000}, "metrics": m, "repeats": 1, "cached_from": None}
              for i, m in enumerate(rows)]
    table, _ = trials_table(report, trials, width=200)
    return " | ".join(str(c.header).replace("\n", " ") for c in table.columns)


def test_a_latency_only_job_shows_latency_columns_only() -> None:
    headers = _headers(["latency"], LATENCY)
    assert "round trip p99 µs" in headers and "round trip p50 µs" in headers and "round trip mean µs" in headers
    assert "throughput" not in headers and "loss" not in headers


def test_a_throughput_job_gets_no_latency_columns() -> None:
    headers = _headers(["throughput"], THROUGHPUT)
    assert "throughput Gbit/s" in headers and "loss %" in headers and "round trip" not in headers


def test_both_parts_show_both_groups() -> None:
    headers = _headers(["throughput", "latency"], THROUGHPUT | LATENCY)
    assert "throughput Gbit/s" in headers and "round trip p99 µs" in headers


def test_default_vs_best_of_a_latency_job_has_no_throughput_rows() -> None:
    row = {"metrics": LATENCY, "spread": {}}
    with console.capture() as out:
        console.print(default_vs_best_table(row, row, simulated=False))
    text = out.get()
    assert "round trip p99 (µs)" in text and "throughput" not in text and "loss" not in text
