"""The trial transaction: lock -> snapshot -> journal -> apply -> verify -> reachability ->
benchmark -> restore -> verify restore -> clear journal -> unlock.

The benchmark of each repeat is the workload's: iperf3 for its throughput part, then
sockperf for its latency part (:func:`run_workload`).

The locks (:mod:`nictune.measure.trial.locks`) keep trials of other runs off the same testbed and
off the machine-wide settings this one changes until it has restored them.

Settings are restored on success, on any exception, on a command timeout and on SIGINT /
SIGTERM (handlers are installed for the duration of the trial; the signal is delivered
again once the hosts are restored). A failed apply or benchmark raises
:class:`~nictune.errors.MeasurementError` *after* the restore; a failed restore raises
:class:`~nictune.errors.RestoreError` and keeps the journal for :func:`replay_journal`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from nictune.errors import MeasurementError, NictuneError, RestoreError
from nictune.measure._base import Sample, TrialResult, Workload
from nictune.measure.appliers import applier_for, validate_settings
from nictune.measure.appliers.ip_link import link_info
from nictune.measure.benchmarks.benchmark import Endpoints, missing_programs
from nictune.measure.benchmarks.busy import BusyLoad
from nictune.measure.benchmarks.iperf3 import run_iperf3
from nictune.measure.benchmarks.sockperf import PACKAGE as SOCKPERF_PACKAGE
from nictune.measure.benchmarks.sockperf import check_probe, run_sockperf
from nictune.measure.hosts import Host
from nictune.measure.topology import resolve_placement
from nictune.measure.trial.journal import Journal, replay_journal
from nictune.measure.trial.locks import trial_locks
from nictune.measure.trial.signals import SignalGuard, TrialInterrupted
from nictune.measure.validation import parse_cpu_list
from nictune.search_spaces import Family, Setting

log = logging.getLogger(__name__)

#: Seconds each ping waits for a reply in the reachability check.
PING_WAIT_S = 1


@dataclass(frozen=True)
class Step:
    """Settings of one family for one device on one side."""

    side: str
    host: Host
    device: str
    family: Family
    settings: tuple[Setting, ...]


def plan(settings: Sequence[Setting], ends: Endpoints) -> list[Step]:
    """Which settings go to which side and device (placement excluded).

    A setting without a device applies to both data interfaces; one naming a device that
    is the data interface of only one side applies to that side; any other device name
    applies on both hosts.
    """
    sides = (
        ("sender", ends.sender, ends.sender_device),
        ("receiver", ends.receiver, ends.receiver_device),
    )
    groups: dict[tuple[str, str, Family], list[Setting]] = {}
    for s in settings:
        if s.family is Family.PLACEMENT:
            continue
        only = None
        if s.device == ends.sender_device != ends.receiver_device:
            only = "sender"
        elif s.device == ends.receiver_device != ends.sender_device:
            only = "receiver"
        for side, _, data_dev in sides:
            if only in (None, side):
                groups.setdefault((side, s.device or data_dev, s.family), []).append(s)
    hosts = {side: host for side, host, _ in sides}
    return [Step(k[0], hosts[k[0]], k[1], k[2], tuple(v)) for k, v in groups.items()]


def pinning(settings: Sequence[Setting], ends: Endpoints) -> tuple[str | None, str | None]:
    """``(sender_cpus, receiver_cpus)`` from the placement settings (``None``: unpinned)."""
    sender = receiver = None
    for s in settings:
        if s.family is not Family.PLACEMENT:
            continue
        value = str(applier_for(s.family).normalize(s))
        if s.target in ("cpus", "sender", "sender_cpus"):
            sender = resolve_placement(value, ends.sender, ends.sender_device)
        if s.target in ("cpus", "receiver", "receiver_cpus"):
            receiver = resolve_placement(value, ends.receiver, ends.receiver_device)
    return sender, receiver


def check_reachable(ends: Endpoints, mtu_changed: bool) -> None:
    """Ping the receiver; with an MTU change also a full-size ping with DF set.

    Raises:
        MeasurementError: the peer does not answer (link down) or full-size frames do not
            pass (MTU mismatch); each check gives up after about a second.
    """
    base = ["ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", str(PING_WAIT_S)]
    addr = ends.receiver_address
    if ends.sender.run([*base, addr], timeout=10, check=False).returncode != 0:
        raise MeasurementError(f"peer {addr} unreachable from {ends.sender.name}")
    if mtu_changed:
        mtu = int(link_info(ends.sender, ends.sender_device).get("mtu", 1500))
        argv = [*base, "-M", "do", "-s", str(mtu - 28), addr]
        if ends.sender.run(argv, timeout=10, check=False).returncode != 0:
            raise MeasurementError(
                f"{mtu}-byte frames with DF set do not reach {addr} from {ends.sender.name}: "
                "MTU mismatch on the path"
            )


def run_workload(ends: Endpoints, workload: Workload, sender_cpus: str | None = None,
                 receiver_cpus: str | None = None) -> Sample:
    """One repeat of ``workload``: iperf3 when it has a throughput part, then sockperf when it
    has a latency part, both pinned to the same CPUs; one sample with the metrics of both
    (sockperf's summary under ``counters["sockperf"]``).

    Raises:
        MeasurementError: a benchmark failed.
    """
    parts = []
    if workload.throughput:
        parts.append(run_iperf3(ends, workload, sender_cpus, receiver_cpus))
    if workload.latency is not None:
        parts.append(run_sockperf(ends, workload.latency, sender_cpus, receiver_cpus))
    if not parts:
        raise MeasurementError(f"workload {workload.name!r} has neither a throughput nor a latency part")
    metrics: dict[str, float] = {}
    counters: dict[str, Any] = {}
    for part in parts:
        metrics |= part.metrics
        counters |= part.counters
    return Sample(metrics, parts[0].started_at, parts[-1].finished_at, counters)


def check_workload(ends: Endpoints, workload: Workload) -> None:
    """Before a trial changes anything: the workload's latency part is one sockperf runs,
    and sockperf is installed on both ends.

    Raises:
        InvalidInputError: a field of the latency part sockperf cannot take.
        MeasurementError: sockperf is missing on a host (naming the Debian package).
    """
    if workload.latency is None:
        return
    check_probe(workload.latency)
    for side, host in (("sender", ends.sender), ("receiver", ends.receiver)):
        if missing_programs(host, ["sockperf"]):
            raise MeasurementError(
                f"workload {workload.name!r} measures latency with sockperf, which is not installed on the "
                f"{side} {host.name}: install the Debian package {SOCKPERF_PACKAGE} (apt-get install "
                f"{SOCKPERF_PACKAGE})")


class Trial:
    """One transaction on a pair of endpoints.

    Args:
        ends: the two hosts, devices and the receiver's address.
        journal: where the snapshot is kept while settings are applied.
        resources: extra cleanup for a journal replay (``[{"kind": "veth_pair", ...}]``).
    """

    def __init__(
        self, ends: Endpoints, journal: Journal, resources: Sequence[dict[str, Any]] = ()
    ) -> None:
        self.ends = ends
        self.journal = journal
        self.resources = list(resources)

    def run(
        self, settings: Sequence[Setting], workload: Workload, repeats: int, seed: int
    ) -> TrialResult:
        """Apply ``settings``, benchmark ``repeats`` times, restore; see the module doc.

        Raises:
            InvalidInputError: a setting failed validation (nothing was touched).
            MeasurementError: the trial failed; the hosts have been restored.
            RestoreError: the hosts could not be restored; the journal is kept.
        """
        checked = validate_settings(settings)
        steps = plan(checked, self.ends)
        check_workload(self.ends, workload)
        with self.holding(steps):
            return self._run(steps, checked, workload, repeats, seed)

    @contextmanager
    def holding(self, steps: Sequence[Step]) -> Iterator[None]:
        """The locks of a trial that writes ``steps`` (the testbed's, and the machines' whose
        machine-wide settings it changes), with what a dead trial left there restored first."""
        with trial_locks(self.journal.lock_path, self.journal.testbed,
                         [(step.host, step.settings) for step in steps]):
            self.restore_leftover()
            yield

    def restore_leftover(self) -> None:
        """Put back what a trial that died on this testbed left (its journal), before anything
        else: holding the testbed lock, no other trial can be running there.

        Raises:
            RestoreError: the leftover could not be restored; the journal is kept.
        """
        if not self.journal.exists():
            return
        for report in replay_journal(self.journal.directory, self.journal.testbed, force=True):
            if report.errors:
                raise RestoreError(f"{self.journal.testbed}: could not restore what an earlier trial left "
                                   f"(journal kept at {report.path}): {'; '.join(report.errors)}")
            if report.restored:
                log.warning("restored settings an earlier trial left on %s: %s", self.journal.testbed,
                            "; ".join(report.restored))

    def _run(self, steps: Sequence[Step], checked: Sequence[Setting], workload: Workload, repeats: int,
             seed: int) -> TrialResult:
        entries: list[dict[str, Any]] = []
        samples: list[Sample] = []
        pins: tuple[str | None, str | None] = (None, None)
        failure: BaseException | None = None
        with SignalGuard() as guard:
            try:
                self._snapshot(steps, entries)
                samples, pins = self._apply_and_measure(steps, checked, workload, repeats)
                guard.defer()  # last statement: a signal after the work must not skip restore
            except BaseException as exc:  # restore first, decide what to raise afterwards
                guard.defer()
                failure = exc
            problems = self._restore(steps, entries)
        if problems:
            raise RestoreError(
                f"restore on {self.journal.testbed} failed (journal kept at {self.journal.path}): "
                + "; ".join(problems)
            ) from failure
        self.journal.clear()
        if guard.redeliver() or isinstance(failure, TrialInterrupted):
            raise MeasurementError(
                f"trial {failure or 'interrupted'}; settings restored"
            ) from failure
        if isinstance(failure, NictuneError):
            raise MeasurementError(f"trial failed, settings restored: {failure}") from failure
        if failure is not None:
            raise failure
        snapshot = {"entries": entries, "seed": seed}
        notes = [f"pinned: sender {pins[0] or 'no'}, receiver {pins[1] or 'no'}"]
        return TrialResult(samples=samples, snapshot=snapshot, notes=notes)

    def _snapshot(self, steps: Sequence[Step], entries: list[dict[str, Any]]) -> None:
        """Snapshot every step into ``entries``, then write the journal (durably)."""
        self.snapshot_steps(steps, entries)
        hosts = {"sender": self.ends.sender.spec(), "receiver": self.ends.receiver.spec()}
        self.journal.write({"hosts": hosts, "entries": entries, "resources": self.resources})

    def snapshot_steps(self, steps: Sequence[Step], entries: list[dict[str, Any]]) -> None:
        """Read what every step will change into ``entries`` (one entry per step, in order)."""
        for step in steps:
            snap = applier_for(step.family).snapshot(step.host, step.device, step.settings)
            entries.append(
                {"side": step.side, "family": step.family.value, "device": step.device,
                 "snapshot": snap}
            )  # fmt: skip

    def apply_steps(self, steps: Sequence[Step]) -> None:
        """Apply every step, in order."""
        for step in steps:
            applier_for(step.family).apply(step.host, step.device, step.settings)

    def verify_steps(self, steps: Sequence[Step]) -> None:
        """Read every applied step back, then check the receiver still answers (a ping; with
        an MTU change, a full-size one with DF set).

        Raises:
            MeasurementError: a value did not take, or the receiver does not answer.
        """
        for step in steps:
            applier_for(step.family).verify(step.host, step.device, step.settings)
        mtu_changed = any(
            s.family is Family.IP_LINK and s.target == "mtu" for st in steps for s in st.settings
        )
        check_reachable(self.ends, mtu_changed)

    def restore_steps(self, steps: Sequence[Step], entries: Sequence[dict[str, Any]]) -> list[str]:
        """Put every step's snapshot back, last step first; the problems met (empty: all restored)."""
        return self._restore(steps, entries)

    def _apply_and_measure(
        self,
        steps: Sequence[Step],
        settings: Sequence[Setting],
        workload: Workload,
        repeats: int,
    ) -> tuple[list[Sample], tuple[str | None, str | None]]:
        self.apply_steps(steps)
        self.verify_steps(steps)
        # Resolved after the IRQ affinity is applied: ``irq-core`` depends on it.
        tx_cpus, rx_cpus = pinning(settings, self.ends)
        pinned = parse_cpu_list(tx_cpus or "") + parse_cpu_list(rx_cpus or "")
        samples = []
        for _ in range(max(1, repeats)):
            if workload.scenario == "busy":
                with BusyLoad([self.ends.sender, self.ends.receiver], exclude=pinned):
                    samples.append(run_workload(self.ends, workload, tx_cpus, rx_cpus))
            else:
                samples.append(run_workload(self.ends, workload, tx_cpus, rx_cpus))
        return samples, (tx_cpus, rx_cpus)

    def _restore(self, steps: Sequence[Step], entries: Sequence[dict[str, Any]]) -> list[str]:
        """Restore in reverse order, then check each snapshot reads back the same."""
        problems = []
        done = list(zip(steps, entries, strict=False))
        for step, entry in reversed(done):
            applier = applier_for(step.family)
            try:
                applier.restore(step.host, step.device, entry["snapshot"])
                again = applier.snapshot(step.host, step.device, step.settings)
            except NictuneError as exc:
                problems.append(f"{step.side} {step.family.value} {step.device}: {exc}")
                continue
            if again != entry["snapshot"]:
                problems.append(
                    f"{step.side} {step.family.value} {step.device}: reads {again}, "
                    f"snapshot was {entry['snapshot']}"
                )
        return problems
