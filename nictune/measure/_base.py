"""Interfaces of the measurement layer: workloads, results and the Testbed ABC.

A testbed measures a list of :class:`~nictune.search_spaces.Setting` under a
:class:`Workload` and returns one :class:`Sample` per repeat. It never knows which
engine asked, nor which search space the settings came from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from nictune.search_spaces._base import Setting

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nictune.measure.dryrun import DryRun
    from nictune.search_spaces.space import SearchSpace

Protocol = Literal["tcp", "udp"]
Scenario = Literal["idle", "busy"]

#: Metric names testbeds report (units in the name). Objectives and constraints use them.
#: A testbed kind that cannot measure some of them is in :data:`UNMEASURED`.
METRICS: dict[str, str] = {
    "throughput_gbps": "receiver goodput, Gbit/s",
    "packet_rate_mpps": "packets delivered to the receiver, millions per second",
    "loss_pct": "datagrams (UDP) or segments (TCP) lost, percent of sent",
    "retransmits": "TCP retransmitted segments during the run",
    "interrupts_per_s": "NIC interrupts per second on the receiver",
    "interrupts_per_gb": "NIC interrupts on the receiver per gigabyte delivered",
    "cpu_rx_pct": "receiver CPU in percent of one core (150 = 1.5 cores)",
    "cpu_tx_pct": "sender CPU in percent of one core",
    # Where packets were dropped and how busy the busiest core of each end was: the
    # counters the bayes engine's diagnose rounds read (BOTTLENECKS in search_spaces).
    "qdisc_drops": "packets the sender's root qdisc dropped during the run",
    "ring_drops": "frames the receiver's device dropped (rx ring full or missed) during the run",
    "backlog_drops": "frames dropped at the receiver's per-CPU input queue (softnet_stat) during the run",
    "socket_drops": "datagrams dropped at a full receive socket buffer (UDP RcvbufErrors) during the run",
    "rx_core_busy_pct": "utilisation of the receiver's busiest core, percent",
    "tx_core_busy_pct": "utilisation of the sender's busiest core, percent",
}

_NO_IRQS = "a veth device has no interrupts (no line of /proc/interrupts names it)"
#: Metrics a testbed kind cannot measure, with why: its measurements leave them out, and a
#: job whose objective or constraint needs one is refused.
UNMEASURED: dict[str, dict[str, str]] = {
    "veth": {"interrupts_per_s": _NO_IRQS, "interrupts_per_gb": _NO_IRQS},
}


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
    """

    name: str
    protocol: Protocol
    streams: int = 1
    length: int | None = None
    bitrate_gbps: float | None = None
    duration_s: float = 10.0
    omit_s: float = 1.0
    scenario: Scenario = "idle"

    def key(self) -> dict[str, Any]:
        """The fields that define the workload for the fitness cache."""
        return asdict(self)


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


class Testbed(ABC):
    """A sender/receiver pair that can be measured.

    Attributes:
        name: how the user names it (``sim:benson-40g``, ``veth:nt0``, a YAML file path).
        kind: ``sim``, ``veth`` or ``ssh``.
        simulated: ``True`` when the figures come from a model, not from hardware.
    """

    name: str
    kind: str
    simulated: bool = False
    #: Things the user should be told about the testbed (e.g. settings restored from a crash).
    notices: tuple[str, ...] = ()

    @abstractmethod
    def fingerprint(self) -> dict[str, str]:
        """What makes results from this testbed comparable (kernel, driver, NIC, CPU ...)."""

    @abstractmethod
    def default_space(self) -> str:
        """Name of the built-in search space that fits this testbed."""

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

    def ignored_knobs(self, space: SearchSpace) -> list[str]:
        """Knobs of ``space`` whose values cannot change this testbed's figures.

        Only a model can know: a simulated testbed names the knobs it has no term for.
        Real hosts return none.
        """
        return []

    def unsupported_knobs(self, space: SearchSpace) -> dict[str, str]:
        """Knobs of ``space`` this testbed's hosts cannot set, each with the reason, found
        without changing anything. A model sets every knob of its spaces: none."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the testbed holds (namespaces it created, connections)."""

    def __enter__(self) -> Testbed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
