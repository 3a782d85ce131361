"""A job on a workload with a latency part (sockperf): what it refuses and what it counts."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import Engine

from nictune.errors import InvalidInputError
from nictune.jobs import JobSpec, create_job
from nictune.jobs.evaluate import bench_seconds
from nictune.measure._base import LatencyProbe
from nictune.measure.workloads import WORKLOADS


@pytest.mark.parametrize("workload", ["latency", "tcp+latency"])
def test_short_runs_are_refused_for_a_latency_objective(engine: Engine, workload: str) -> None:
    # A short run shortens iperf3 only: sockperf's figures would be a full run's.
    spec = JobSpec(objectives=["latency"], workload=workload, testbed="sim:benson-40g", budget=4, seed=1,
                   short_run_s=2.0)
    with pytest.raises(InvalidInputError) as err:
        create_job(engine, spec)
    assert err.value.field == "short_run" and "sockperf" in str(err.value)


def test_bench_seconds_count_each_part_that_runs() -> None:
    latency_only = replace(WORKLOADS["latency"], latency=LatencyProbe(duration_s=3))
    assert bench_seconds(latency_only, 2) == 6.0  # no iperf3 warm-up nor run
    both = replace(WORKLOADS["tcp+latency"], duration_s=4, omit_s=1, latency=LatencyProbe(duration_s=2))
    assert bench_seconds(both, 3) == 3 * (1 + 4 + 2)
    assert bench_seconds(replace(WORKLOADS["tcp"], duration_s=4, omit_s=1), 2) == 10.0
