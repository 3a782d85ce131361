"""Prometheus metrics: read from the database at scrape time, so they cover the CLI's jobs too."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.manager import JobManager
from nictune.db import measurement_totals, session_scope


class HistoryCollector(Collector):
    """Jobs by state, trials measured, cache hits, failures and measurement time.

    Args:
        dbe: the database engine.
        manager: the job runner of this process (for its queue).
    """

    def __init__(self, dbe: DbEngine, manager: JobManager):
        self.dbe = dbe
        self.manager = manager

    def collect(self) -> Iterator[Metric]:
        """Read the totals and yield one family per figure."""
        with session_scope(self.dbe) as s:
            totals = measurement_totals(s)
        jobs = GaugeMetricFamily("nictune_jobs", "Jobs in the history by state.", labels=["state"])
        for state, count in sorted(totals["jobs_by_state"].items()):
            jobs.add_metric([state], count)
        yield jobs
        yield CounterMetricFamily("nictune_trials_measured", "Trials measured on a testbed.",
                                  value=totals["trials_measured"])
        yield CounterMetricFamily("nictune_cache_hits", "Trials answered from the fitness cache.",
                                  value=totals["cache_hits"])
        yield CounterMetricFamily("nictune_trials_failed", "Trials whose measurement failed.",
                                  value=totals["trials_failed"])
        yield CounterMetricFamily("nictune_measurements", "Benchmark runs (repeats) of measured trials.",
                                  value=totals["measurements"])
        yield CounterMetricFamily("nictune_measurement_seconds",
                                  "Seconds spent in benchmark runs on real testbeds (veth, ssh).",
                                  value=totals["measurement_seconds"])
        yield CounterMetricFamily("nictune_simulated_seconds",
                                  "Seconds the simulated testbeds' benchmark runs stand for (a model: not spent).",
                                  value=totals["simulated_seconds"])
        queue = GaugeMetricFamily("nictune_service_jobs", "Jobs of this service process.", labels=["status"])
        for status, count in sorted(self.manager.counts().items()):
            queue.add_metric([status], count)
        yield queue


def make_registry(dbe: DbEngine, manager: JobManager) -> CollectorRegistry:
    """A registry of this app only (not the process-global one: several apps may coexist)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HistoryCollector(dbe, manager))
    return registry
