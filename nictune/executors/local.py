"""The local executor: one testbed opened in this process, one measurement at a time."""

from __future__ import annotations

import threading
from typing import Any

from nictune.errors import MeasurementError, NictuneError
from nictune.executors._base import Executor, MeasureRequest
from nictune.measure import Testbed, TrialResult
from nictune.measure.testbeds import open_testbed
from nictune.search_spaces.space import SearchSpace


class LocalExecutor(Executor):
    """Measures on ``testbed`` (a name ``open_testbed`` understands) in this process: an
    adapter that turns a :class:`MeasureRequest` into the testbed's settings and reports the
    testbed's own facts (the :class:`~nictune.measure.TestbedFacts` both share).

    Measurements are serialised with a lock: a testbed is never measured by two trials
    at once, whatever the caller does. Whatever the testbed refuses or fails on reaches the
    caller as a :class:`~nictune.errors.MeasurementError` naming its cause (the executor
    interface's one failure type, as a Celery worker answers it): the trial fails, the job
    goes on.
    """

    def __init__(self, testbed: str | Testbed, *, noise: float | None = None):
        self._bed = open_testbed(testbed, noise=noise) if isinstance(testbed, str) else testbed
        self.testbed = self._bed.name
        self.kind = self._bed.kind
        self.simulated = self._bed.simulated
        self.notices = tuple(self._bed.notices)
        self._lock = threading.Lock()

    @property
    def bed(self) -> Testbed:
        return self._bed

    def fingerprint(self) -> dict[str, Any]:
        return dict(self._bed.fingerprint())

    def default_space(self) -> str:
        return self._bed.default_space()

    def ignored_knobs(self, space: SearchSpace) -> list[str]:
        return self._bed.ignored_knobs(space)

    def unsupported_knobs(self, space: SearchSpace) -> dict[str, str]:
        with self._lock:
            return self._bed.unsupported_knobs(space)

    def measure(self, request: MeasureRequest) -> TrialResult:
        try:
            space, config = request.configuration()
            with self._lock:
                return self._bed.measure(space.settings(config), request.workload_obj(), request.repeats,
                                         request.seed)
        except MeasurementError:
            raise
        except NictuneError as exc:  # a value or workload the testbed refuses: a failed measurement
            raise MeasurementError(str(exc)) from exc

    def close(self) -> None:
        self._bed.close()
