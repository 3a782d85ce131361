"""Builders shared by the db tests: small, explicit histories."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from nictune.db import (
    Configuration,
    Job,
    Measurement,
    Testbed,
    Trial,
    Workload,
    complete_trial,
    create_job,
    fail_trial,
    get_or_create_configuration,
    get_or_create_testbed,
    get_or_create_workload,
    start_trial,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
SAMPLE_SECONDS = 10.0
_clock = itertools.count()


@dataclass(frozen=True)
class FakeSample:
    """A measurement repeat as the measure package hands it over."""

    metrics: dict[str, float]
    started_at: datetime
    finished_at: datetime
    counters: dict[str, Any] = field(default_factory=dict)


def sample(throughput: float, **metrics: float) -> FakeSample:
    """One repeat; every call is later than the one before (ordering is by time)."""
    start = T0 + timedelta(minutes=next(_clock))
    return FakeSample(
        metrics={"throughput_gbps": throughput, **metrics},
        started_at=start,
        finished_at=start + timedelta(seconds=SAMPLE_SECONDS),
        counters={"eth0": {"rx_packets": 1000, "rx_missed_errors": 0}},
    )


def add_testbed(s: Session, name: str = "bed-a", *, kernel: str = "6.1.0") -> Testbed:
    """A sim testbed whose fingerprint differs by ``kernel``."""
    return get_or_create_testbed(
        s, name, "sim", {"profile": "10g", "model_version": 1, "kernel": kernel}
    )


def add_workload(s: Session, name: str = "tcp-1", *, streams: int = 1) -> Workload:
    """An iperf3 workload whose definition differs by ``streams``."""
    return get_or_create_workload(s, name, {"tool": "iperf3", "streams": streams})


def add_configuration(s: Session, config_hash: str) -> Configuration:
    """A configuration whose canonical form is derived from its hash."""
    return get_or_create_configuration(s, config_hash, f'{{"id":"{config_hash}"}}')


def add_job(
    s: Session,
    testbed: Testbed,
    workload: Workload,
    *,
    objectives: Sequence[str] = ("throughput_gbps",),
    space_name: str = "basic",
) -> Job:
    """A pending job with small, valid parameters."""
    return create_job(
        s,
        space_name=space_name,
        space_definition={"knobs": {"rx_usecs": {"type": "int", "low": 0, "high": 100}}},
        testbed=testbed,
        workload=workload,
        objectives=objectives,
        constraints=["loss_pct < 0.1"],
        engine="random",
        engine_params={"population": 4},
        budget=10,
        repeats=2,
        seed=7,
    )


def add_trial(
    s: Session,
    job: Job,
    number: int,
    config_hash: str,
    *,
    throughputs: Sequence[float] = (10.0,),
    state: str = "completed",
    source: str = "measured",
) -> Trial:
    """A trial left in ``state``; completed trials get one sample per throughput."""
    trial = start_trial(s, job, number, add_configuration(s, config_hash))
    if state == "completed":
        # A cache trial has no measurements of its own, only the summary.
        samples = [sample(value) for value in throughputs] if source == "measured" else []
        mean = sum(throughputs) / len(throughputs) if throughputs else 0.0
        complete_trial(s, trial, samples, source, {"throughput_gbps": mean})
    elif state == "failed":
        fail_trial(s, trial, "iperf3 exited with status 1")
    return trial


def attach_measurement(trial: Trial, throughput: float) -> None:
    """Add a measurement row directly, bypassing ``complete_trial``'s rules.

    Lets a test put rows under failed, running or cache trials, which the repository
    never writes, to prove that queries ignore such rows all the same.
    """
    repeat = sample(throughput)
    trial.measurements.append(
        Measurement(
            repeat=len(trial.measurements),
            testbed_id=trial.job.testbed_id,
            workload_id=trial.job.workload_id,
            configuration_id=trial.configuration_id,
            metrics=repeat.metrics,
            throughput_gbps=throughput,
            counters={},
            started_at=repeat.started_at,
            finished_at=repeat.finished_at,
        )
    )
