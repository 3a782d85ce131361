"""The executor interface: how the job loop gets a configuration measured.

The job loop (``nictune.jobs.runner``) never talks to a testbed itself. It hands each
measurement to an :class:`Executor` as a :class:`MeasureRequest` and waits for the
:class:`~nictune.measure._base.TrialResult`. The local executor measures in this process
on one testbed, one measurement at a time; a distributed executor sends the request to a
worker bound to a testbed of the job's pool and can run up to :attr:`Executor.slots`
measurements at once (one per testbed).

A request is plain data (JSON-able), so it can travel to another machine: the worker
rebuilds the search space from its definition and validates every value again before
anything touches a host.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from nictune.errors import MeasurementError
from nictune.measure import TestbedFacts, TrialResult, Workload
from nictune.search_spaces import Configuration, SearchSpace, space_from_dict


@dataclass(frozen=True)
class MeasureRequest:
    """One measurement of one configuration (``repeats`` benchmark runs).

    Attributes:
        job_id: the job that asks.
        trial_id: the database id of the trial the measurement belongs to.
        step: which measurement of the trial this is (0, 1, ... with adaptive repeats);
            ``(trial_id, step)`` identifies the request, so a duplicate or redelivered
            result is recognised.
        testbed: the job's testbed (or pool) name.
        space: the search space definition (as stored with the job).
        values: the configuration's values.
        workload: the :class:`Workload` fields.
        repeats: benchmark runs in this measurement.
        seed: seed of this measurement (simulated noise, iperf3 port choice ...).
    """

    job_id: int
    trial_id: int
    step: int
    testbed: str
    space: Mapping[str, Any]
    values: Mapping[str, Any]
    workload: Mapping[str, Any]
    repeats: int
    seed: int
    labels: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """A unique, stable id of this request (usable as a task id)."""
        return f"nictune-{self.job_id}-{self.trial_id}-{self.step}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> MeasureRequest:
        return cls(**dict(raw))

    def configuration(self) -> tuple[SearchSpace, Configuration]:
        """The space and the configuration, validated again (strictly)."""
        space = space_from_dict(dict(self.space))
        return space, space.configuration(dict(self.values), strict=True)

    def workload_obj(self) -> Workload:
        return Workload.from_definition(dict(self.workload))


class MeasurementWithdrawn(MeasurementError):
    """The measurement never started: the job stopped while it waited for a testbed
    (a pool without a live worker). Nothing touched a host; the request was withdrawn so no
    worker takes it later. A job loop may leave such a trial out instead of failing it, so a
    resumed job runs it again."""


class Executor(TestbedFacts):
    """Runs measurements for one job: *where* a testbed's measurements run. What the testbed is
    (kind, fingerprint, default space, ignored and unsupported knobs) is the
    :class:`~nictune.measure.TestbedFacts` of the testbed(s) measured on, reported as they are.
    Thread-safe: the job loop calls :meth:`measure` from up to :attr:`slots` threads at once.

    Attributes:
        testbed: the testbed (or pool) name the executor measures on.
    """

    testbed: str
    kind: str = "sim"

    @property
    def slots(self) -> int:
        """How many measurements can run at the same time (testbeds available)."""
        return 1

    @abstractmethod
    def measure(self, request: MeasureRequest) -> TrialResult:
        """Measure and return the result once the testbed's settings are restored.

        Raises:
            MeasurementError: the measurement failed (settings restored).
        """
