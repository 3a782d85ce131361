"""probe_settings on a real veth pair: what is supported, why not, and the limits."""

from __future__ import annotations

import pytest

from nictune.measure.iperf3 import Endpoints
from nictune.measure.probe import probe_settings
from nictune.measure.veth import VethPair
from nictune.search_spaces._base import Family, Setting

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
