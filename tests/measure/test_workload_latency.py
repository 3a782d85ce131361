"""The workload's latency part: what it measures, its cache key and the goal check (pure logic)."""

from __future__ import annotations

import pytest

from nictune.errors import InvalidInputError
from nictune.jobs.runner import check_goal_workload
from nictune.measure._base import LATENCY_METRICS, LatencyProbe, Workload
from nictune.measure.benchmarks.workloads import WORKLOADS
from nictune.optimizer import Goal


def test_key_of_a_workload_without_the_later_fields_is_unchanged() -> None:
    # A database written before reverse/bidir/latency existed keeps its cache hits.
    assert WORKLOADS["tcp"].key() == {"name": "tcp", "protocol": "tcp", "streams": 1, "length": None,
                                      "bitrate_gbps": None, "duration_s": 10.0, "omit_s": 1.0,
                                      "scenario": "idle"}


def test_key_names_every_changed_field_and_round_trips() -> None:
    wl = Workload("mine", "tcp", streams=4, reverse=True, latency=LatencyProbe("under-load", "tcp", 256, 10_000))
    key = wl.key()
    assert key["reverse"] is True and key["latency"]["rate_mps"] == 10_000
    assert Workload.from_definition(key) == wl
    assert key != WORKLOADS["tcp"].key()


def test_measures_follows_the_parts() -> None:
    assert set(LATENCY_METRICS) <= set(WORKLOADS["tcp+latency"].measures())
    assert "throughput_gbps" in WORKLOADS["tcp+latency"].measures()
    assert set(WORKLOADS["latency"].measures()) == set(LATENCY_METRICS)
    assert not set(LATENCY_METRICS) & set(WORKLOADS["tcp"].measures())


def test_latency_objective_needs_a_latency_workload() -> None:
    with pytest.raises(InvalidInputError) as err:
        check_goal_workload(Goal.from_names(["latency"], []), WORKLOADS["tcp"])
    assert err.value.field == "objectives" and "no latency part" in str(err.value)
    with pytest.raises(InvalidInputError) as err:
        check_goal_workload(Goal.from_names(["throughput"], []), WORKLOADS["latency"])
    assert err.value.field == "objectives" and "latency" in str(err.value.allowed)
    with pytest.raises(InvalidInputError) as err:
        check_goal_workload(Goal.from_names(["throughput"], ["latency_p99_us<=40"]), WORKLOADS["tcp"])
    assert err.value.field == "constraints"
    check_goal_workload(Goal.from_names(["throughput", "latency"], ["latency<=40"]), WORKLOADS["tcp+latency"])
