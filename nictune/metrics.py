"""What nictune measures: one table of metric definitions (name, label, unit, direction).

Testbeds report metrics by name (units in the name: ``throughput_gbps``); everything that
shows a metric to a person takes its label and unit from here, so the CLI, the report, the
API's display fields and the dashboard say the same thing. A neutral module: the measurement
layer and the optimizer both import it, neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class MetricDef:
    """One metric.

    Attributes:
        name: the key in measurements (``throughput_gbps``).
        label: how a person reads it (``throughput``).
        unit: its unit (``Gbit/s``); ``""`` for none.
        description: one sentence: what it counts and where it is read.
        better: ``higher`` or ``lower`` when one direction is better, else ``None``.
        per_run: a count over one benchmark run (drops, retransmits), not a rate.
    """

    name: str
    label: str
    unit: str
    description: str
    better: Literal["higher", "lower"] | None = None
    per_run: bool = False

    @property
    def heading(self) -> str:
        """Label and unit for a table column or a figure axis: ``throughput (Gbit/s)``."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


_DEFS = (
    MetricDef("throughput_gbps", "throughput", "Gbit/s", "receiver goodput, Gbit/s", "higher"),
    MetricDef("packet_rate_mpps", "packet rate", "Mpps", "packets delivered to the receiver, millions per second",
              "higher"),
    MetricDef("loss_pct", "loss", "%", "datagrams (UDP) or segments (TCP) lost, percent of sent", "lower"),
    MetricDef("retransmits", "retransmits", "segments/run", "TCP retransmitted segments during the run", "lower",
              per_run=True),
    MetricDef("interrupts_per_s", "interrupts", "per s", "NIC interrupts per second on the receiver", "lower"),
    MetricDef("interrupts_per_gb", "interrupts", "per GB",
              "NIC interrupts on the receiver per gigabyte delivered", "lower"),
    MetricDef("cpu_rx_pct", "receiver CPU", "% of a core", "receiver CPU in percent of one core (150 = 1.5 cores)",
              "lower"),
    MetricDef("cpu_tx_pct", "sender CPU", "% of a core", "sender CPU in percent of one core", "lower"),
    # Where packets were dropped and how busy the busiest core of each end was: the counters
    # the bayes engine's diagnose rounds read (BOTTLENECKS in search_spaces).
    MetricDef("qdisc_drops", "qdisc drops", "packets/run", "packets the sender's root qdisc dropped during the run",
              "lower", per_run=True),
    MetricDef("ring_drops", "ring drops", "frames/run",
              "frames the receiver's device dropped (rx ring full or missed) during the run", "lower", per_run=True),
    MetricDef("backlog_drops", "backlog drops", "frames/run",
              "frames dropped at the receiver's per-CPU input queue (softnet_stat) during the run", "lower",
              per_run=True),
    MetricDef("socket_drops", "socket drops", "datagrams/run",
              "datagrams dropped at a full receive socket buffer (UDP RcvbufErrors) during the run", "lower",
              per_run=True),
    MetricDef("rx_core_busy_pct", "receiver busiest core", "%", "utilisation of the receiver's busiest core, percent"),
    MetricDef("tx_core_busy_pct", "sender busiest core", "%", "utilisation of the sender's busiest core, percent"),
    # Request/response latency (sockperf), present when the workload has a latency part.
    # Always the full round trip (sockperf --full-rtt): request out, reply back.
    MetricDef("latency_p50_us", "round trip p50", "µs", "round-trip latency, median, microseconds (sockperf)", "lower"),
    MetricDef("latency_p99_us", "round trip p99", "µs", "round-trip latency, 99th percentile, microseconds (sockperf)",
              "lower"),
    MetricDef("latency_p999_us", "round trip p99.9", "µs",
              "round-trip latency, 99.9th percentile, microseconds (sockperf)", "lower"),
    MetricDef("latency_mean_us", "round trip mean", "µs", "round-trip latency, mean, microseconds (sockperf)", "lower"),
)

#: Every metric, by name, in display order.
DEFINITIONS: dict[str, MetricDef] = {d.name: d for d in _DEFS}

#: Metric name -> description (units in the name). Objectives and constraints use the names;
#: a testbed kind that cannot measure some of them lists them in ``measure._base.UNMEASURED``.
METRICS: dict[str, str] = {d.name: d.description for d in _DEFS}

#: The metrics a workload's latency part (sockperf) reports; the rest come from its
#: throughput part (iperf3) and the counters read around it.
LATENCY_METRICS: tuple[str, ...] = ("latency_p50_us", "latency_p99_us", "latency_p999_us", "latency_mean_us")


def heading(name: str) -> str:
    """``throughput (Gbit/s)`` for a known metric; the name itself for any other."""
    known = DEFINITIONS.get(name)
    return known.heading if known else name


def label(name: str) -> str:
    """``throughput`` for a known metric; the name itself for any other."""
    known = DEFINITIONS.get(name)
    return known.label if known else name


def unit(name: str) -> str:
    """``Gbit/s`` for a known metric; ``""`` for any other."""
    known = DEFINITIONS.get(name)
    return known.unit if known else ""


__all__ = ["DEFINITIONS", "LATENCY_METRICS", "METRICS", "MetricDef", "heading", "label", "unit"]
