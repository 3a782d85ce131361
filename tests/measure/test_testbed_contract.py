"""Testbeds: one contract over every kind the registry knows (``TESTBED_KINDS``), each opened
by its name through :func:`open_testbed`: the model (``sim:PROFILE``), a veth pair
(``veth:NAME``) and an SSH pair (a pair YAML file whose receiver is a real sshd in the pair's
receiver namespace).

What the job loop relies on, whatever the kind:

- a name resolves to exactly one kind, and an unknown one is refused naming what is known;
- a trial gives one sample per repeat, in order, each with every metric the workload
  promises (but those the kind cannot measure, :data:`UNMEASURED`) and none it does not;
- the settings a trial changed read back as they were (the appliers' snapshot of both hosts,
  and every global sysctl of the machine);
- a value outside what its setting allows is refused before anything changes a host: no
  command but reads runs, no file is written, no process starts, no journal is written;
- the fingerprint is the same from one call to the next, and the default space is built in.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nictune.errors import InvalidInputError, UnknownNameError
from nictune.measure import UNMEASURED, Testbed, Workload
from nictune.measure.appliers import applier_for
from nictune.measure.hosts import Host, LocalHost, SshHost
from nictune.measure.planning import is_read_only
from nictune.measure.testbeds import TESTBED_KINDS, VethPair, kind_of, known_testbeds, open_testbed
from nictune.measure.trial.journal import Journal
from nictune.search_spaces import Family, Setting, builtin_names
from tests.measure.support import global_sysctls, start_sshd

WORKLOAD = Workload("tcp", "tcp", duration_s=1, omit_s=0)
#: What a trial applies: a per-namespace sysctl and the MTU of the data devices.
SETTINGS = [Setting(Family.SYSCTL, "net.core.somaxconn", 2222), Setting(Family.IP_LINK, "mtu", 9000)]
#: Values outside what their setting allows: an MTU above the largest, shell syntax.
REFUSED = [
    [Setting(Family.IP_LINK, "mtu", 100000)],
    [Setting(Family.SYSCTL, "net.core.somaxconn", "2222; reboot")],
]


@dataclass
class Opened:
    """A testbed of one kind, opened by name, and the hosts and devices a trial changes."""

    bed: Testbed
    ends: list[tuple[Host, str]] = field(default_factory=list)
    journal: Path | None = None

    def snapshot(self) -> list[Any]:
        """What each end's appliers read for :data:`SETTINGS`."""
        out = []
        for host, device in self.ends:
            for family in {s.family for s in SETTINGS}:
                ours = [s for s in SETTINGS if s.family == family]
                out.append(applier_for(family).snapshot(host, device, ours))
        return out


def _pair_file(pair: VethPair, path: Path, key: Path, known_hosts: Path) -> Path:
    path.write_text(f"""
name: contract
port: 5362
sockperf_port: 5363
sender: {{host: "netns:{pair.tx}", interface: {pair.tx}, address: {pair.tx_address}}}
receiver:
  host: ssh://root@{pair.rx_address}:2222
  key: {key}
  known_hosts: {known_hosts}
  via_netns: {pair.tx}
  interface: {pair.rx}
  address: {pair.rx_address}
""")
    return path


#: Per kind: what the test needs for it (``netns``: root, namespaces and the benchmark tools).
KINDS = ["sim", pytest.param("veth", marks=pytest.mark.netns), pytest.param("ssh", marks=pytest.mark.netns)]


@pytest.fixture(params=KINDS)
def opened(request: pytest.FixtureRequest, tmp_path: Path, state_dir: Path) -> Iterator[Opened]:
    """A testbed of each kind, opened by its name through the registry."""
    if request.param == "sim":
        with open_testbed("sim:benson-40g") as bed:
            yield Opened(bed)
        return
    pair: VethPair = request.getfixturevalue("veth_pair")
    ends: list[tuple[Host, str]] = [(pair.sender(), pair.tx), (pair.receiver(), pair.rx)]
    if request.param == "veth":
        with open_testbed(f"veth:{pair.name}") as bed:
            yield Opened(bed, ends, Journal(bed.name, state_dir).path)
        return
    sshd = start_sshd(pair.rx, pair.rx_address, 2222, tmp_path / "sshd")
    server = next(sshd)
    try:
        path = _pair_file(pair, tmp_path / "pair.yaml", server.key, server.known_hosts)
        with open_testbed(str(path)) as bed:
            yield Opened(bed, ends, Journal("pair:contract", state_dir).path)
    finally:
        next(sshd, None)


def test_the_contract_covers_every_kind_the_registry_knows() -> None:
    assert set(TESTBED_KINDS) == {k if isinstance(k, str) else k.values[0] for k in KINDS}


def test_every_name_resolves_to_one_kind_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    pair_file = tmp_path / "lab.yaml"
    pair_file.write_text("{}")
    names = {"sim:benson-40g": "sim", "sim:cai-100g": "sim", "veth": "veth", "veth:nt7": "veth",
             str(pair_file): "ssh", str(tmp_path / "lab.yml"): None, "sim:nope": None, "vethx": None,
             "pool:lab": None, "": None}
    for name, kind in names.items():
        matching = [k.kind for k in TESTBED_KINDS.values() if k.matches(name)]
        assert matching == ([kind] if kind else []), name
        if kind is None:
            with pytest.raises(UnknownNameError) as refused:
                open_testbed(name)
            assert "sim:benson-40g" in str(refused.value) and "veth:NAME" in str(refused.value)
        else:
            assert kind_of(name).kind == kind
    listed = known_testbeds()
    assert len(listed) == len(set(listed))
    for name in listed:  # each concrete name listed opens with its kind (patterns aside)
        if "NAME" not in name and "PATH" not in name:
            assert kind_of(name).kind in ("sim", "veth"), name


def test_a_trial_gives_every_promised_metric_per_repeat_and_leaves_the_hosts_as_they_were(opened: Opened) -> None:
    bed = opened.bed
    before, machine = opened.snapshot(), global_sysctls()
    result = bed.measure(SETTINGS, WORKLOAD, 2, 3)
    assert len(result.samples) == 2
    promised = set(WORKLOAD.measures()) - set(UNMEASURED.get(bed.kind, {}))
    if any(v == "veth" for k, v in bed.fingerprint().items() if k.endswith("driver")):
        promised -= set(UNMEASURED["veth"])  # an SSH pair over veth devices has no interrupts either
    for sample in result.samples:
        assert promised <= set(sample.metrics), promised - set(sample.metrics)
        assert set(sample.metrics) <= set(WORKLOAD.measures()), set(sample.metrics) - set(WORKLOAD.measures())
        assert sample.metrics["throughput_gbps"] > 0
        assert sample.started_at <= sample.finished_at
    assert result.samples[0].finished_at <= result.samples[1].started_at
    assert bed.simulated == (bed.kind == "sim")
    assert opened.snapshot() == before
    assert global_sysctls() == machine
    if opened.journal is not None:  # cleared once the restore was verified
        assert not opened.journal.exists()


@dataclass
class HostLog:
    """Every command, write and process any host is asked for."""

    changes: list[str] = field(default_factory=list)
    reads: int = 0


@pytest.fixture
def host_log(monkeypatch: pytest.MonkeyPatch) -> HostLog:
    log = HostLog()
    run, spawn, ssh_spawn, write = Host.run, Host.spawn, SshHost.spawn, LocalHost.write_file

    def logged_run(self: Host, argv: list[str], *args: Any, **kwargs: Any) -> Any:
        if is_read_only(argv):
            log.reads += 1
        else:
            log.changes.append(f"{self.name}: {argv}")
        return run(self, argv, *args, **kwargs)

    def logged_spawn(self: Host, argv: list[str], *args: Any, **kwargs: Any) -> Any:
        log.changes.append(f"{self.name}: started {argv}")
        return (ssh_spawn if isinstance(self, SshHost) else spawn)(self, argv, *args, **kwargs)  # type: ignore[arg-type]

    def logged_write(self: LocalHost, path: str, text: str, *args: Any, **kwargs: Any) -> None:
        log.changes.append(f"{self.name}: wrote {path}")
        write(self, path, text, *args, **kwargs)

    monkeypatch.setattr(Host, "run", logged_run)
    monkeypatch.setattr(Host, "spawn", logged_spawn)
    monkeypatch.setattr(SshHost, "spawn", logged_spawn)
    monkeypatch.setattr(LocalHost, "write_file", logged_write)
    return log


def test_a_value_its_setting_does_not_allow_is_refused_before_anything_changes_a_host(
        opened: Opened, host_log: HostLog) -> None:
    bed = opened.bed
    before = opened.snapshot()
    for settings in REFUSED:
        host_log.changes.clear()
        with pytest.raises(InvalidInputError) as refused:
            bed.measure([*SETTINGS[:1], *settings], WORKLOAD, 1, 0)
        assert settings[0].target in str(refused.value), refused.value
        assert host_log.changes == [], f"{settings}: {host_log.changes}"
    assert opened.snapshot() == before
    if opened.journal is not None:
        assert not opened.journal.exists()


def test_the_fingerprint_is_stable_and_the_default_space_is_built_in(opened: Opened) -> None:
    bed = opened.bed
    first = bed.fingerprint()
    assert first and all(isinstance(k, str) and isinstance(v, str) for k, v in first.items()), first
    assert first == bed.fingerprint()
    assert bed.default_space() in builtin_names()
