"""Schemas of trials (one configuration measured within a job) and their pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from nictune.api.schemas.common import Page
from nictune.measure import METRICS

#: Sort keys of trial lists; a leading '-' sorts in descending order.
SORT_FIELDS: tuple[str, ...] = ("number", "started_at", "finished_at", "score", *METRICS)
#: Spelled out for the type checker and the OpenAPI schema; a test checks it against METRICS.
SortKey = Literal[
    "number", "-number", "started_at", "-started_at", "finished_at", "-finished_at", "score", "-score",
    "throughput_gbps", "-throughput_gbps", "packet_rate_mpps", "-packet_rate_mpps", "loss_pct", "-loss_pct",
    "retransmits", "-retransmits", "interrupts_per_s", "-interrupts_per_s", "interrupts_per_gb",
    "-interrupts_per_gb", "cpu_rx_pct", "-cpu_rx_pct", "cpu_tx_pct", "-cpu_tx_pct",
    "qdisc_drops", "-qdisc_drops", "ring_drops", "-ring_drops", "backlog_drops", "-backlog_drops",
    "socket_drops", "-socket_drops", "rx_core_busy_pct", "-rx_core_busy_pct", "tx_core_busy_pct", "-tx_core_busy_pct",
    "latency_p50_us", "-latency_p50_us", "latency_p99_us", "-latency_p99_us", "latency_p999_us", "-latency_p999_us",
    "latency_mean_us", "-latency_mean_us",
]


class TrialOut(BaseModel):
    """One trial: its configuration, mean metrics over the repeats, and score."""

    job_id: int
    number: int
    state: Literal["running", "completed", "failed"]
    source: Literal["measured", "cache"]
    config_hash: str
    config: dict[str, Any]
    metrics: dict[str, float | None] = Field(description="Mean over the repeats.")
    spread: dict[str, dict[str, float | None]] = Field(description="min, max, stdev of each metric.")
    score: dict[str, Any] | None = Field(description="feasible, value, violation as the job's goal saw it.")
    repeats: int | None = None
    cached_from: int | None = Field(
        None, description="Answered from the cache when the job asked for it: how many earlier runs it reused "
                          "(with source 'measured': measured again in the final race since).")
    seconds: float | None = Field(None, description="Wall-clock seconds the measurement took.")
    error: str | None = None
    started_at: datetime
    finished_at: datetime | None
    testbed: str | None = Field(None, description="In history listings: the testbed.")
    workload: str | None = Field(None, description="In history listings: the workload.")
    simulated: bool


class TrialPage(Page[TrialOut]):
    """A page of trials."""

    simulated: bool = Field(description="True when any trial on the page comes from a simulated testbed.")
    note: str | None = None
