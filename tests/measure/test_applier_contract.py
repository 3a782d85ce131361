"""Appliers: one contract over every applier of ``APPLIERS``.

Without a host (unit): every applier refuses a value with shell syntax and a value of the
wrong kind before it builds any command, naming the setting. On a real veth pair (netns),
for every family the pair can carry: snapshot, apply, verify and restore leave the pair as it
was; every command is an argv list of strings, never a shell line; and a dry run
(:class:`~nictune.measure.planning.PlanningHost`) plans exactly the changing commands the
real apply then runs. A family the pair cannot carry says why in its probe, and runs the same
round trip (unit) on :class:`FakeNic`, a host with a real NIC's files and ethtool fields kept
in memory (rings, coalescing, pause, IRQs, cpufreq): nothing runs anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from nictune.errors import HostCommandError, InvalidInputError
from nictune.measure.appliers import APPLIERS, Applier
from nictune.measure.appliers.ethtool import (
    EthtoolApplier,
    EthtoolCoalesceApplier,
    EthtoolPauseApplier,
    EthtoolRingsApplier,
)
from nictune.measure.hosts import DEFAULT_TIMEOUT, CommandResult, Host, Process
from nictune.measure.planning import PlannedState, PlanningHost, is_read_only
from nictune.measure.testbeds.veth import VethPair
from nictune.search_spaces import Family, Setting

F = Family

#: Per family: settings a veth pair carries (``None``: it carries none of this family; its
#: probe must say why), and settings every applier must refuse before any command.
CASES: dict[Family, tuple[list[Setting] | None, list[Setting]]] = {
    F.SYSCTL: ([Setting(F.SYSCTL, "net.core.somaxconn", 1024), Setting(F.SYSCTL, "net.ipv4.tcp_rmem", 6291456, 2)],
               [Setting(F.SYSCTL, "net.core.somaxconn", "1024; reboot"),
                Setting(F.SYSCTL, "net.ipv4.ip_forward", 1)]),
    F.IP_LINK: ([Setting(F.IP_LINK, "mtu", 9000), Setting(F.IP_LINK, "txqueuelen", 5000)],
                [Setting(F.IP_LINK, "mtu", "9000 && reboot"), Setting(F.IP_LINK, "address", "00:11:22:33:44:55")]),
    F.ETHTOOL_FEATURES: ([Setting(F.ETHTOOL_FEATURES, "gro", False), Setting(F.ETHTOOL_FEATURES, "tso", "off")],
                         [Setting(F.ETHTOOL_FEATURES, "gro", "off`id`"),
                          Setting(F.ETHTOOL_FEATURES, "gro;reboot", "on")]),
    F.ETHTOOL_RINGS: (None, [Setting(F.ETHTOOL_RINGS, "rx", "4096|sh"), Setting(F.ETHTOOL_RINGS, "rx", -1)]),
    F.ETHTOOL_COALESCE: (None, [Setting(F.ETHTOOL_COALESCE, "rx-usecs", "$(reboot)"),
                                Setting(F.ETHTOOL_COALESCE, "no-such-field", 8)]),
    F.ETHTOOL_PAUSE: (None, [Setting(F.ETHTOOL_PAUSE, "rx", "on;x"), Setting(F.ETHTOOL_PAUSE, "sideways", "on")]),
    F.ETHTOOL_CHANNELS: ([Setting(F.ETHTOOL_CHANNELS, "rx", 2)],
                         [Setting(F.ETHTOOL_CHANNELS, "rx", "2\n3"), Setting(F.ETHTOOL_CHANNELS, "rx", 0.5)]),
    F.SYSFS: ([Setting(F.SYSFS, "gro_flush_timeout", 20000), Setting(F.SYSFS, "napi_defer_hard_irqs", 2)],
              [Setting(F.SYSFS, "gro_flush_timeout", "1 > /etc/passwd"), Setting(F.SYSFS, "../../etc/passwd", 1)]),
    F.IRQ_AFFINITY: (None, [Setting(F.IRQ_AFFINITY, "rx", "0;reboot"), Setting(F.IRQ_AFFINITY, "rx", "0-99999")]),
    F.CPU_GOVERNOR: (None, [Setting(F.CPU_GOVERNOR, "all", "performance;x"),
                            Setting(F.CPU_GOVERNOR, "all", "turbo-mode")]),
    F.QDISC: ([Setting(F.QDISC, "root", "pfifo_fast")],
              [Setting(F.QDISC, "root", "fq; reboot"), Setting(F.QDISC, "root", "netem")]),
    F.PLACEMENT: ([Setting(F.PLACEMENT, "receiver", "1")],
                  [Setting(F.PLACEMENT, "receiver", "0;reboot"), Setting(F.PLACEMENT, "nowhere", "0")]),
}
#: Families whose settings are used when a trial starts its processes, never written to a host.
NOTHING_WRITTEN = {F.PLACEMENT}


def test_the_contract_covers_every_applier() -> None:
    assert set(CASES) == set(APPLIERS)


@pytest.mark.parametrize("family", list(CASES), ids=lambda f: f.value)
def test_an_applier_refuses_what_it_cannot_write_before_any_command(family: Family) -> None:
    applier = APPLIERS[family]
    for setting in CASES[family][1]:
        with pytest.raises(InvalidInputError) as refused:
            applier.normalize(setting)
        named = f"{refused.value} {refused.value.field}"
        assert setting.target in named or str(setting.value) in named, (setting, str(refused.value))


class RecordingHost(Host):
    """The real host, recording every command and file write it is asked for (and checking
    that each command is a list of strings: nothing reaches a shell)."""

    def __init__(self, inner: Host) -> None:
        self.inner = inner
        self.name = inner.name
        self.changes: list[tuple[str, tuple[str, ...]]] = []

    @property
    def machine(self) -> str:
        return self.inner.machine

    def local_argv(self, argv: list[str]) -> list[str]:
        return self.inner.local_argv(argv)

    def spec(self) -> dict[str, Any]:
        return self.inner.spec()

    def machine_id(self) -> str | None:
        return self.inner.machine_id()

    def file_host(self, path: str) -> Host:
        return self.inner.file_host(path)

    def run(self, argv: list[str], timeout: float = DEFAULT_TIMEOUT, check: bool = True,
            input: str | None = None) -> CommandResult:
        assert isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv), argv
        if not is_read_only(argv):
            self.changes.append(("run", tuple(argv)))
        return self.inner.run(argv, timeout=timeout, check=check, input=input)

    def spawn(self, argv: list[str]) -> Process:
        raise AssertionError(f"an applier started a process: {argv}")

    def read_file(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        return self.inner.read_file(path, timeout)

    def read_files(self, paths: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
        return self.inner.read_files(paths, timeout)

    def exists(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
        return self.inner.exists(path, timeout)

    def list_dir(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
        return self.inner.list_dir(path, timeout)

    def write_file(self, path: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.changes.append(("write", (path, text)))
        self.inner.write_file(path, text, timeout)


def _planned(applier: Applier, host: Host, device: str, settings: list[Setting]) -> list[tuple[str, tuple[str, ...]]]:
    """The changing commands a dry run of ``apply`` records."""
    state = PlannedState()
    planner = PlanningHost(host, state, "sender")
    state.phase = "apply"
    applier.apply(planner, device, settings)
    return [("run", tuple(c.argv)) if c.action == "run" else ("write", (c.path or "", c.text or ""))
            for c in state.commands if c.action in ("run", "write")]


@pytest.mark.netns
@pytest.mark.parametrize("family", list(CASES), ids=lambda f: f.value)
def test_an_applier_on_a_veth_pair_plans_what_it_runs_and_leaves_the_pair_as_it_was(
        family: Family, veth_pair: VethPair) -> None:
    applier = APPLIERS[family]
    settings = CASES[family][0]
    host, device = veth_pair.sender(), veth_pair.tx
    probe = applier.probe(host, device)
    if settings is None:  # the pair carries none of this family: its probe says why
        assert not probe.supported and probe.reason, probe
        return
    assert probe.supported, probe.reason
    recording = RecordingHost(host)
    before = applier.snapshot(recording, device, settings)
    planned = _planned(applier, host, device, settings)
    assert bool(planned) != (family in NOTHING_WRITTEN), planned
    assert recording.changes == [], "a snapshot changed something"
    try:
        applier.apply(recording, device, settings)
        applier.verify(recording, device, settings)
        assert recording.changes == planned  # the dry run showed what the apply ran
        if family not in NOTHING_WRITTEN:
            assert applier.snapshot(host, device, settings) != before
    finally:
        applier.restore(recording, device, before)
    assert applier.snapshot(host, device, settings) == before


#: Per family the veth pair cannot carry: settings that change a real NIC's values (``FakeNic``).
ON_A_NIC: dict[Family, list[Setting]] = {
    F.ETHTOOL_RINGS: [Setting(F.ETHTOOL_RINGS, "rx", 2048), Setting(F.ETHTOOL_RINGS, "tx", 1024)],
    F.ETHTOOL_COALESCE: [Setting(F.ETHTOOL_COALESCE, "rx-usecs", 8), Setting(F.ETHTOOL_COALESCE, "adaptive-rx", "on")],
    F.ETHTOOL_PAUSE: [Setting(F.ETHTOOL_PAUSE, "rx", "off"), Setting(F.ETHTOOL_PAUSE, "tx", False)],
    F.IRQ_AFFINITY: [Setting(F.IRQ_AFFINITY, "policy", "single-core")],
    F.CPU_GOVERNOR: [Setting(F.CPU_GOVERNOR, "scaling_governor", "performance")],
}


class FakeNic(Host):
    """A host with one NIC ``eth9`` (two MSI IRQs, NUMA node 0 of CPUs 0-3), its files and its
    ethtool fields in memory. ``ethtool -g/-c/-a`` print them as ethtool does, ``-G/-C/-A``
    change them; files are read and written in place. Runs nothing anywhere."""

    name = "fake:eth9"
    SHOW: ClassVar[dict[str, str]] = {"-g": "Ring", "-c": "Coalesce", "-a": "Pause"}
    SET: ClassVar[dict[str, str]] = {"-G": "-g", "-C": "-c", "-A": "-a"}

    def __init__(self) -> None:
        cpu = "/sys/devices/system/cpu"
        self.files = {"/sys/devices/system/cpu/online": "0-3\n", "/sys/class/net/eth9/device/numa_node": "0\n",
                      "/sys/devices/system/node/node0/cpulist": "0-3\n",
                      "/proc/irq/40/smp_affinity_list": "0-3\n", "/proc/irq/41/smp_affinity_list": "0-3\n",
                      f"{cpu}/cpu0/cpufreq/scaling_available_governors": "performance powersave\n",
                      **{f"{cpu}/cpu{n}/cpufreq/scaling_governor": "powersave\n" for n in range(4)}}
        self.dirs = {"/sys/class/net/eth9/device/msi_irqs": ["40", "41"]}
        self.ethtool: dict[str, dict[str, str]] = {
            "-g": {"RX": "512", "RX Mini": "n/a", "RX Jumbo": "n/a", "TX": "512"},
            "-c": {"rx-usecs": "50", "rx-frames": "0", "tx-usecs": "50", "tx-frames": "0"},
            "-a": {"Autonegotiate": "on", "RX": "on", "TX": "on"},
        }
        self.adaptive = {"adaptive-rx": "off", "adaptive-tx": "off"}
        self.argvs: list[list[str]] = []

    def local_argv(self, argv: list[str]) -> list[str]:
        return list(argv)

    def spec(self) -> dict[str, Any]:
        return {"kind": "fake"}

    def run(self, argv: list[str], timeout: float = DEFAULT_TIMEOUT, check: bool = True,
            input: str | None = None) -> CommandResult:
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), argv
        self.argvs.append(list(argv))
        if argv[:1] != ["ethtool"] or len(argv) < 3 or argv[2] != "eth9":
            raise HostCommandError(f"{self.name}: {argv} is not emulated")
        flag = argv[1]
        if flag in self.SHOW:
            return CommandResult(0, self._show(flag), "")
        if flag in self.SET:
            fields, show = argv[3:], self.SET[flag]
            labels = _SET_FAMILY[flag].targets
            for target, value in zip(fields[::2], fields[1::2], strict=True):
                if target in self.adaptive:
                    self.adaptive[target] = value
                else:
                    self.ethtool[show][labels[target][0]] = value
            return CommandResult(0, "", "")
        raise HostCommandError(f"{self.name}: {argv} is not emulated")

    def _show(self, flag: str) -> str:
        values = self.ethtool[flag]
        if flag == "-g":
            maxima = "".join(f"{k}:\t{'4096' if v != 'n/a' else v}\n" for k, v in values.items())
            current = "".join(f"{k}:\t{v}\n" for k, v in values.items())
            return f"Ring parameters for eth9:\nPre-set maximums:\n{maxima}Current hardware settings:\n{current}"
        head = f"{self.SHOW[flag]} parameters for eth9:\n"
        if flag == "-c":
            head += f"Adaptive RX: {self.adaptive['adaptive-rx']}  TX: {self.adaptive['adaptive-tx']}\n"
        return head + "".join(f"{k}: {v}\n" for k, v in values.items())

    def spawn(self, argv: list[str]) -> Process:
        raise AssertionError(f"started a process: {argv}")

    def read_file(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        if path not in self.files:
            raise HostCommandError(f"{self.name}: no file {path}")
        return self.files[path]

    def read_files(self, paths: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
        return {p: self.read_file(p) for p in paths}

    def exists(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
        return path in self.files or path in self.dirs

    def list_dir(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
        return list(self.dirs.get(path, []))

    def write_file(self, path: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        if path not in self.files or not re.fullmatch(r"[\w\-,]+\n", text):
            raise HostCommandError(f"{self.name}: cannot write {text!r} to {path}")
        self.files[path] = text


_SET_FAMILY: dict[str, type[EthtoolApplier]] = {"-G": EthtoolRingsApplier, "-C": EthtoolCoalesceApplier,
                                                "-A": EthtoolPauseApplier}


def test_the_nic_cases_are_the_families_a_veth_pair_cannot_carry() -> None:
    assert set(ON_A_NIC) == {f for f, (on_veth, _) in CASES.items() if on_veth is None}


@pytest.mark.parametrize("family", list(ON_A_NIC), ids=lambda f: f.value)
def test_an_applier_on_a_nic_plans_what_it_runs_and_leaves_the_nic_as_it_was(family: Family) -> None:
    applier, settings, nic = APPLIERS[family], ON_A_NIC[family], FakeNic()
    probe = applier.probe(nic, "eth9")
    assert probe.supported, probe.reason
    recording = RecordingHost(nic)
    before = applier.snapshot(recording, "eth9", settings)
    planned = _planned(applier, nic, "eth9", settings)
    assert planned and recording.changes == [], (planned, recording.changes)
    try:
        applier.apply(recording, "eth9", settings)
        applier.verify(recording, "eth9", settings)
        assert recording.changes == planned  # the dry run showed what the apply ran
        assert applier.snapshot(nic, "eth9", settings) != before
    finally:
        applier.restore(recording, "eth9", before)
    assert applier.snapshot(nic, "eth9", settings) == before
