"""probe_settings on a real veth pair: what is supported, why not, and the limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from nictune.measure.benchmarks.iperf3 import Endpoints
from nictune.measure.probing.probe import probe_settings
from nictune.measure.probing.probe_space import unsupported_knobs
from nictune.measure.testbeds.veth import VethPair, VethTestbed
from nictune.search_spaces import load_space
from nictune.search_spaces._base import Family, Setting
from tests.measure.support import unique_name

F = Family


@pytest.mark.netns
def test_probe_veth_targets(veth_pair: VethPair) -> None:
    ends = Endpoints(veth_pair.sender(), veth_pair.receiver(), veth_pair.tx, veth_pair.rx,
                     veth_pair.rx_address)  # fmt: skip
    rows = probe_settings(ends, [
        (F.SYSCTL, "net.ipv4.tcp_rmem[2]"),
        (F.SYSCTL, "net.core.rmem_max"),
        (F.SYSCTL, "net.core.no_such_knob"),
        (F.IP_LINK, "mtu"),
        (F.ETHTOOL_FEATURES, "gro"),
        (F.ETHTOOL_FEATURES, "lro"),
        (F.ETHTOOL_RINGS, "rx"),
        (F.ETHTOOL_CHANNELS, "rx"),
        (F.SYSFS, "gro_flush_timeout"),
        (F.IRQ_AFFINITY, "policy"),
        (F.MODULE_PARAM, "mlx4_core.high_rate_steer"),
        Setting(F.QDISC, "root", "fq"),
    ])  # fmt: skip
    got = {(r.family, r.target): r for r in rows}
    assert len(rows) == 12

    rmem = got[("sysctl", "net.ipv4.tcp_rmem")]
    assert rmem.supported and rmem.limits["receiver"]["fields"] == 3
    global_key = got[("sysctl", "net.core.rmem_max")]
    assert global_key.supported and "global" in global_key.reason
    assert not got[("sysctl", "net.core.no_such_knob")].supported
    assert got[("ip_link", "mtu")].limits["sender"]["max_mtu"] >= 9000
    assert got[("ethtool_features", "gro")].supported
    lro = got[("ethtool_features", "lro")]
    assert not lro.supported and "fixed" in lro.reason
    assert not got[("ethtool_rings", "rx")].supported
    assert got[("ethtool_channels", "rx")].limits["sender"]["rx_max"] >= 1
    assert got[("sysfs", "gro_flush_timeout")].supported
    irq = got[("irq_affinity", "policy")]
    assert not irq.supported and "no IRQs" in irq.reason
    assert not got[("module_param", "mlx4_core.high_rate_steer")].supported
    assert got[("qdisc", "root")].supported


@pytest.mark.netns
def test_unsupported_knobs_of_a_space_on_a_veth_pair(veth_pair: VethPair) -> None:
    ends = Endpoints(veth_pair.sender(), veth_pair.receiver(), veth_pair.tx, veth_pair.rx,
                     veth_pair.rx_address)  # fmt: skip
    before = probe_settings(ends, [(F.SYSCTL, "net.core.rmem_max"), (F.IP_LINK, "mtu")])
    missing = unsupported_knobs(load_space("linux-nic"), ends)
    # Coalescing, rings, channels, pause frames and IRQs: veth has none of them; the
    # conditional knobs of the interrupt mode go with it.
    assert set(missing) == {"rx_mode", "poll_usecs", "watermark_frames", "busy_poll_usecs", "rx_ring", "tx_ring",
                            "channels", "pause", "irq_affinity"}, missing
    assert "ethtool -g" in missing["rx_ring"] and "no IRQs" in missing["irq_affinity"]
    assert missing["poll_usecs"] == "depends on rx_mode, which was left out"
    # The veth space is what a veth pair supports; nothing was changed by asking.
    assert unsupported_knobs(load_space("veth"), ends) == {}
    assert probe_settings(ends, [(F.SYSCTL, "net.core.rmem_max"), (F.IP_LINK, "mtu")]) == before


@pytest.mark.netns
def test_a_veth_testbed_creates_its_pair_to_probe_and_removes_it(state_dir: Path) -> None:
    bed = VethTestbed(unique_name(), state_dir=state_dir)
    assert not bed.pair.exists()
    try:
        assert "rx_ring" in bed.unsupported_knobs(load_space("linux-nic"))
        assert bed.pair.exists()
    finally:
        bed.close()
    assert not bed.pair.exists()
