"""Appliers on a real veth pair: apply, verify, restore, and read the real values back."""

from __future__ import annotations

from pathlib import Path

import pytest

from nictune.errors import InvalidInputError, MeasurementError
from nictune.measure.appliers import (
    APPLIERS,
    Applier,
    applier_for,
    link_info,
    parse_ethtool,
    root_qdisc,
)
from nictune.measure.hosts import Host, LocalHost, sysctl_path
from nictune.measure.testbeds.veth import VethPair
from nictune.search_spaces._base import Family, Setting

F = Family


def roundtrip(host: Host, device: str, settings: list[Setting]) -> tuple[dict, dict]:
    """Snapshot, apply, verify; return (snapshot, values while applied); always restore."""
    applier: Applier = applier_for(settings[0].family)
    snap = applier.snapshot(host, device, settings)
    try:
        applier.apply(host, device, settings)
        applier.verify(host, device, settings)
        during = applier.snapshot(host, device, settings)
    finally:
        applier.restore(host, device, snap)
    assert applier.snapshot(host, device, settings) == snap
    return snap, during


@pytest.mark.netns
def test_ip_link_mtu_and_txqueuelen(veth_pair: VethPair) -> None:
    host, dev = veth_pair.sender(), veth_pair.tx
    before = link_info(host, dev)
    _, during = roundtrip(host, dev, [Setting(F.IP_LINK, "mtu", 9000),
                                      Setting(F.IP_LINK, "txqueuelen", 5000)])  # fmt: skip
    assert during == {"mtu": "9000", "txqueuelen": "5000"}
    after = link_info(host, dev)
    assert (after["mtu"], after["txqlen"]) == (before["mtu"], before["txqlen"])


@pytest.mark.netns
def test_per_namespace_sysctls(veth_pair: VethPair) -> None:
    tx, rx = veth_pair.sender(), veth_pair.receiver()
    rmem, somax = sysctl_path("net.ipv4.tcp_rmem"), sysctl_path("net.core.somaxconn")
    orig = {p: tx.read_file(p) for p in (rmem, somax)}
    outside = {p: LocalHost().read_file(p) for p in (rmem, somax)}
    settings = [Setting(F.SYSCTL, "net.ipv4.tcp_rmem", 6291456, 2),
                Setting(F.SYSCTL, "net.core.somaxconn", 1024)]  # fmt: skip
    snap, during = roundtrip(tx, veth_pair.tx, settings)
    assert during["net.ipv4.tcp_rmem"].split()[2] == "6291456"
    assert during["net.ipv4.tcp_rmem"].split()[:2] == snap["net.ipv4.tcp_rmem"].split()[:2]
    assert during["net.core.somaxconn"] == "1024"
    assert {p: tx.read_file(p) for p in orig} == orig
    # per namespace: the other namespace and the machine never saw the change
    assert {p: LocalHost().read_file(p) for p in outside} == outside
    assert rx.read_file(somax) == outside[somax]


@pytest.mark.netns
def test_multi_field_sysctl_whole_value(veth_pair: VethPair) -> None:
    host = veth_pair.sender()
    whole = Setting(F.SYSCTL, "net.ipv4.tcp_wmem", (4096, 65536, 8388608))
    _, during = roundtrip(host, veth_pair.tx, [whole])
    assert during["net.ipv4.tcp_wmem"] == "4096 65536 8388608"


@pytest.mark.netns
@pytest.mark.parametrize(
    ("key", "value"), [("net.core.rmem_max", 8388608), ("net.core.netdev_max_backlog", 2500)]
)
def test_global_sysctl_changes_the_machine_and_is_restored(
    veth_pair: VethPair, key: str, value: int
) -> None:
    path = sysctl_path(key)
    orig = LocalHost().read_file(path)
    applier = applier_for(F.SYSCTL)
    setting = [Setting(F.SYSCTL, key, value)]
    snap = applier.snapshot(veth_pair.sender(), veth_pair.tx, setting)
    try:
        applier.apply(veth_pair.sender(), veth_pair.tx, setting)
        applier.verify(veth_pair.sender(), veth_pair.tx, setting)
        # global: written in the initial namespace, seen by the machine and the other end
        assert LocalHost().read_file(path).strip() == str(value)
        assert veth_pair.receiver().read_file(path).strip() == str(value)
    finally:
        applier.restore(veth_pair.sender(), veth_pair.tx, snap)
    assert LocalHost().read_file(path) == orig


@pytest.mark.netns
def test_verify_reports_a_value_that_did_not_take(veth_pair: VethPair) -> None:
    host, applier = veth_pair.sender(), applier_for(F.SYSCTL)
    setting = [Setting(F.SYSCTL, "net.core.somaxconn", 777)]
    with pytest.raises(MeasurementError, match="somaxconn"):
        applier.verify(host, veth_pair.tx, setting)


@pytest.mark.netns
def test_ethtool_features_channels_sysfs_qdisc(veth_pair: VethPair) -> None:
    host, dev = veth_pair.sender(), veth_pair.tx
    _, during = roundtrip(host, dev, [Setting(F.ETHTOOL_FEATURES, "gro", True),
                                      Setting(F.ETHTOOL_FEATURES, "tso", "off")])  # fmt: skip
    assert during == {"gro": "on", "tso": "off"}
    _, during = roundtrip(host, dev, [Setting(F.ETHTOOL_CHANNELS, "rx", 2)])
    assert during == {"rx": "2"}
    _, during = roundtrip(host, dev, [Setting(F.SYSFS, "gro_flush_timeout", 20000),
                                      Setting(F.SYSFS, "napi_defer_hard_irqs", 2),
                                      Setting(F.SYSFS, "queues/rx-0/rps_cpus", "1")])  # fmt: skip
    assert during["gro_flush_timeout"] == "20000" and during["napi_defer_hard_irqs"] == "2"
    before = root_qdisc(host, dev)
    _, during = roundtrip(host, dev, [Setting(F.QDISC, "root", "pfifo_fast")])
    assert during["root"] == "pfifo_fast"
    assert root_qdisc(host, dev) == before


@pytest.mark.netns
def test_probes_say_what_veth_cannot_do(veth_pair: VethPair) -> None:
    host, dev = veth_pair.sender(), veth_pair.tx
    probes = {f: a.probe(host, dev) for f, a in APPLIERS.items()}
    assert probes[F.SYSCTL].supported and probes[F.IP_LINK].supported
    assert probes[F.IP_LINK].limits["max_mtu"] >= 9000
    assert probes[F.ETHTOOL_CHANNELS].limits["rx_max"] >= 1
    assert not probes[F.IRQ_AFFINITY].supported and "no IRQs" in probes[F.IRQ_AFFINITY].reason
    for fam in (F.ETHTOOL_RINGS, F.ETHTOOL_COALESCE, F.ETHTOOL_PAUSE):
        assert not probes[fam].supported and "not supported" in probes[fam].reason.lower()
    gov = probes[F.CPU_GOVERNOR]
    if not Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists():
        assert not gov.supported and "cpufreq" in gov.reason


def test_every_family_but_the_unsettable_has_an_applier() -> None:
    assert set(Family) - set(APPLIERS) == {F.MODULE_PARAM, F.PF_RING, F.PLATFORM}
    with pytest.raises(InvalidInputError, match="module parameters"):
        applier_for(F.MODULE_PARAM)


def test_parse_ethtool_coalesce_and_rings_text() -> None:
    coalesce = """Coalesce parameters for eth2:
Adaptive RX: on  TX: off
stats-block-usecs: n/a
rx-usecs: 50
rx-frames: n/a
"""
    got = parse_ethtool(coalesce)[""]
    assert got["adaptive-rx"] == "on" and got["adaptive-tx"] == "off"
    assert got["rx-usecs"] == "50" and got["rx-frames"] == "n/a"
    rings = """Ring parameters for eth2:
Pre-set maximums:
RX:\t\t8192
RX Mini:\tn/a
TX:\t\t8192
Current hardware settings:
RX:\t\t1024
RX Mini:\tn/a
TX:\t\t512
"""
    sections = parse_ethtool(rings)
    assert sections["pre-set maximums"]["RX"] == "8192"
    assert sections["current hardware settings"]["TX"] == "512"
