"""The CLI's metric tables for a workload with a latency part: latency columns where the rows
have round trips, no column of "-" for a part that did not run."""

from __future__ import annotations

from nictune.cli._common import console
from nictune.cli.history import metric_columns
from nictune.cli.results import default_vs_best_table, shown_metrics
from nictune.measure._base import LATENCY_METRICS

LATENCY = {"latency_p50_us": 20.0, "latency_p99_us": 50.0, "latency_p999_us": 90.0, "latency_mean_us": 25.0}
THROUGHPUT = {"throughput_gbps": 9.5, "loss_pct": 0.0, "cpu_rx_pct": 80.0}


def test_a_latency_only_job_shows_latency_columns_only() -> None:
    assert shown_metrics([LATENCY, {}, None]) == list(LATENCY_METRICS)
    assert list(metric_columns([LATENCY])) == ["latency_p50_us", "latency_p99_us", "latency_mean_us"]


def test_a_throughput_job_keeps_its_columns_and_gets_no_latency_ones() -> None:
    shown = shown_metrics([THROUGHPUT])
    assert "interrupts_per_s" in shown  # a metric the testbed did not measure still has its column ("-")
    assert not set(shown) & set(LATENCY_METRICS)
    assert list(metric_columns([THROUGHPUT])) == ["throughput_gbps", "loss_pct", "interrupts_per_s", "cpu_rx_pct"]
    assert list(metric_columns([])) == list(metric_columns([THROUGHPUT]))  # no rows: as before


def test_both_parts_show_both_groups() -> None:
    assert set(metric_columns([THROUGHPUT | LATENCY])) >= {"throughput_gbps", "latency_p99_us"}


def test_default_vs_best_of_a_latency_job_has_no_throughput_rows() -> None:
    row = {"metrics": LATENCY, "spread": {}}
    with console.capture() as out:
        console.print(default_vs_best_table(row, row, simulated=False))
    text = out.get()
    assert "latency_p99_us" in text and "throughput_gbps" not in text and "loss_pct" not in text
