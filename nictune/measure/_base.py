"""Interfaces of the measurement layer: workloads, results and the Testbed ABC.

A testbed measures a list of :class:`~nictune.search_spaces.Setting` under a
:class:`Workload` and returns one :class:`Sample` per repeat. It never knows which
engine asked, nor which search space the settings came from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Self

from nictune.metrics import LATENCY_METRICS as _LATENCY_METRICS
from nictune.metrics import METRICS as _METRICS
from nictune.search_spaces import Setting

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nictune.measure.planning import DryRun
    from nictune.search_spaces.space import SearchSpace

Protocol = Literal["tcp", "udp"]
Scenario = Literal["idle", "busy"]
#: sockperf's request/response modes: ``ping-pong`` (the idle round trip, one message in
#: flight) and ``under-load`` (messages sent at a fixed rate, a sample of them timed).
LatencyMode = Literal["ping-pong", "under-load"]

#: Metric names testbeds report, with descriptions (the definitions: :mod:`nictune.metrics`).
METRICS = _METRICS
LATENCY_METRICS = _LATENCY_METRICS

_NO_IRQS = "a veth device has no interrupts (no line of /proc/interrupts names it)"
#: Metrics a testbed kind cannot measure, with why: its measurements leave them out, and a
#: job whose objective or constraint needs one is refused.
UNMEASURED: dict[str, dict[str, str]] = {
    "veth": {"interrupts_per_s": _NO_IRQS, "interrupts_per_gb": _NO_IRQS},
}


@dataclass(frozen=True)
class LatencyProbe:
    """The request/response part of a workload (sockperf between the two ends).

    Attributes:
        mode: ``ping-pong`` (idle round trip) or ``under-load`` (at ``rate_mps``).
        protocol: ``udp`` or ``tcp``.
        msg_size: bytes per request (and reply).
        rate_mps: messages per second (sockperf ``--mps``); ``None`` = as fast as replies
            come back (ping-pong only; ``under-load`` needs a rate).
        duration_s: seconds measured per repeat.
    """

    mode: LatencyMode = "ping-pong"
    protocol: Protocol = "udp"
    msg_size: int = 64
    rate_mps: int | None = None
    duration_s: float = 5.0


@dataclass(frozen=True)
class Workload:
    """What the benchmark sends.

    Attributes:
        name: short name (``tcp``, ``udp-jumbo`` ...).
        protocol: ``tcp`` or ``udp``.
        streams: parallel streams (iperf3 ``-P``).
        length: bytes per write (TCP) or per datagram (UDP); ``None`` = iperf3's default.
        bitrate_gbps: offered rate for UDP; ``None`` means as fast as the sender can.
        duration_s: seconds measured per repeat.
        omit_s: warm-up seconds left out of the figures (iperf3 ``-O``).
        scenario: ``idle`` (nothing else runs) or ``busy`` (a busy loop on the other cores).
        reverse: the receiver sends (iperf3 ``-R``).
        bidir: both ends send at once (iperf3 ``--bidir``).
        throughput: the workload runs the throughput benchmark (iperf3); ``False`` for a
            latency-only workload.
        latency: the request/response benchmark (sockperf) run after the throughput one,
            or ``None``.
    """

    name: str
    protocol: Protocol
    streams: int = 1
    length: int | None = None
    bitrate_gbps: float | None = None
    duration_s: float = 10.0
    omit_s: float = 1.0
    scenario: Scenario = "idle"
    reverse: bool = False
    bidir: bool = False
    throughput: bool = True
    latency: LatencyProbe | None = None

    def key(self) -> dict[str, Any]:
        """The fields that define the workload for the fitness cache: every field, except
        the ones added later while they hold their defaults (so a database written before
        they existed keeps its cache hits)."""
        out = asdict(self)
        for name, default in _LATER_FIELDS.items():
            if out.get(name) == default:
                del out[name]
        return out

    @classmethod
    def from_definition(cls, definition: dict[str, Any]) -> Workload:
        """The workload :meth:`key` described (a stored definition, the wire format)."""
        data = dict(definition)
        probe = data.get("latency")
        if isinstance(probe, dict):
            data["latency"] = LatencyProbe(**probe)
        return cls(**data)

    def measures(self) -> tuple[str, ...]:
        """The metrics a run of this workload can report (before a testbed's own limits)."""
        names = [m for m in METRICS if m not in LATENCY_METRICS] if self.throughput else []
        if self.latency is not None:
            names += LATENCY_METRICS
        return tuple(names)


#: Fields :meth:`Workload.key` leaves out while they hold these defaults.
_LATER_FIELDS: dict[str, Any] = {"reverse": False, "bidir": False, "throughput": True, "latency": None}


@dataclass
class Sample:
    """One repeat of a benchmark: its metrics and the raw counters behind them."""

    metrics: dict[str, float]
    started_at: datetime
    finished_at: datetime
    counters: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrialResult:
    """Everything one trial produced: the repeats and what the hosts looked like."""

    samples: list[Sample]
    snapshot: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def ignored_knobs_notice(testbed: str, space: str, knobs: list[str]) -> str:
    """What the user is told when a model has no term for some knobs (:meth:`Testbed.ignored_knobs`)."""
    what = "its value changes" if len(knobs) == 1 else "their values change"
    return f"{testbed} is a model with no term for {', '.join(knobs)} (space {space}): {what} nothing in its figures"


class TestbedFacts(ABC):
    """What the job loop asks of the place it measures, besides measuring: what the testbed is
    (its kind, whether a model, its fingerprint, the space that fits it, the knobs it ignores
    or cannot set), and closing it.

    A :class:`Testbed` has these facts of its own. An executor (:mod:`nictune.executors`), which
    decides *where* a testbed's measurements run (in this process, on a worker of a pool),
    reports the facts of the testbed(s) it measures on: the interface is written once, here.

    Attributes:
        kind: ``sim``, ``veth`` or ``ssh``.
        simulated: ``True`` when the figures come from a model, not from hardware.
        notices: things the user should be told (e.g. settings restored from a crash).
    """

    kind: str
    simulated: bool = False
    notices: tuple[str, ...] = ()

    @abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """What makes results from this testbed comparable (kernel, driver, NIC, CPU ...)."""

    @abstractmethod
    def default_space(self) -> str:
        """Name of the built-in search space that fits this testbed."""

    def ignored_knobs(self, space: SearchSpace) -> list[str]:
        """Knobs of ``space`` whose values cannot change this testbed's figures.

        Only a model can know: a simulated testbed names the knobs it has no term for.
        Real hosts return none.
        """
        return []

    def unsupported_knobs(self, space: SearchSpace) -> dict[str, str]:
        """Knobs of ``space`` this testbed's hosts cannot set, each with the reason, found
        without changing anything. A model sets every knob of its spaces: none (nor does an
        executor that cannot reach the hosts to ask)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what is held (namespaces created, connections)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Testbed(TestbedFacts):
    """A sender/receiver pair that can be measured.

    Attributes:
        name: how the user names it (``sim:benson-40g``, ``veth:nt0``, a YAML file path).
    """

    name: str

    @property
    def journal_key(self) -> str:
        """The key of this testbed's apply journals and lock: what a trial journals under, what
        crash recovery, ``nictune apply`` and ``nictune restore`` look for. Its name, unless a
        kind names its hosts otherwise (an SSH pair: ``pair:NAME`` whichever file path opened it).
        """
        return self.name

    @abstractmethod
    def measure(
        self, settings: list[Setting], workload: Workload, repeats: int, seed: int
    ) -> TrialResult:
        """Apply ``settings``, run ``workload`` ``repeats`` times, restore, return the result.

        Raises:
            MeasurementError: the trial failed; the host settings have been restored.
        """

    def dry_run(
        self, trials: Sequence[tuple[str, list[Setting]]], workload: Workload, repeats: int
    ) -> DryRun:
        """What measuring each ``(label, settings)`` would do on the hosts, found without
        changing anything (reads may run; writes, processes and benchmarks do not).

        Raises:
            InvalidInputError: a setting failed the validation a real trial applies.
            MeasurementError: this kind of testbed has no dry run, or a read failed.
        """
        from nictune.errors import MeasurementError

        raise MeasurementError(f"testbed {self.name} ({self.kind}) has no dry run")
