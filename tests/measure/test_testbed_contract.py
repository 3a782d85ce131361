"""Testbeds: one contract over every kind: the simulated model, a veth pair, and an SSH pair
(a real sshd in the receiver's namespace).

What the job loop relies on, whatever the kind: a trial gives one sample per repeat with every
metric the workload promises (but those the kind cannot measure, :data:`UNMEASURED`); the
settings a trial changed read back as they were afterwards; a value its knob does not allow is
refused before anything touches a host; the fingerprint is the same from one call to the next
and the default space is a built-in one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nictune.errors import InvalidInputError
from nictune.measure import Testbed, Workload
from nictune.measure._base import UNMEASURED
from nictune.measure.hosts import Host
from nictune.measure.testbeds import open_testbed
from nictune.measure.testbeds.pair_file import SshPairTestbed, load_pair
from nictune.measure.testbeds.veth import VethPair, VethTestbed
from nictune.search_spaces import Family, Setting, builtin_names
from tests.measure.support import global_sysctls, start_sshd

SOMAXCONN = "/proc/sys/net/core/somaxconn"
WORKLOAD = Workload("tcp", "tcp", duration_s=1, omit_s=0)


@pytest.fixture(params=["sim", pytest.param("veth", marks=pytest.mark.netns),
                        pytest.param("ssh", marks=pytest.mark.netns)])
def testbed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Testbed, list[Host]]]:
    """A testbed of each kind, and the hosts whose settings a trial changes (none for the model)."""
    if request.param == "sim":
        yield open_testbed("sim:benson-40g"), []
        return
    pair: VethPair = request.getfixturevalue("veth_pair")
    request.getfixturevalue("state_dir")  # journals in the test's directory
    if request.param == "veth":
        with VethTestbed(pair.name, port=5361) as bed:
            yield bed, [pair.sender(), pair.receiver()]
        return
    sshd = start_sshd(pair.rx, pair.rx_address, 2222, tmp_path / "sshd")
    server = next(sshd)
    text = f"""
name: contract
port: 5362
sockperf_port: 5363
sender: {{host: "netns:{pair.tx}", interface: {pair.tx}, address: {pair.tx_address}}}
receiver:
  host: ssh://root@{pair.rx_address}:2222
  key: {server.key}
  known_hosts: {server.known_hosts}
  via_netns: {pair.tx}
  interface: {pair.rx}
  address: {pair.rx_address}
"""
    path = tmp_path / "pair.yaml"
    path.write_text(text)
    try:
        with SshPairTestbed(load_pair(path)) as bed:
            yield bed, [pair.sender(), pair.receiver()]
    finally:
        next(sshd, None)


def _settings(value: int | str) -> list[Setting]:
    return [Setting(Family.SYSCTL, "net.core.somaxconn", value), Setting(Family.IP_LINK, "mtu", 9000)]


def test_a_trial_gives_every_promised_metric_per_repeat_and_leaves_the_hosts_as_they_were(
        testbed: tuple[Testbed, list[Host]]) -> None:
    bed, hosts = testbed
    before = [h.read_file(SOMAXCONN) for h in hosts]
    machine = global_sysctls()
    result = bed.measure(_settings(2222), WORKLOAD, 2, 3)
    assert len(result.samples) == 2
    promised = set(WORKLOAD.measures()) - set(UNMEASURED.get(bed.kind, {}))
    if "veth" in bed.fingerprint().values():  # an SSH pair over veth devices: no IRQs either
        promised -= set(UNMEASURED["veth"])
    for sample in result.samples:
        assert promised <= set(sample.metrics), promised - set(sample.metrics)
        assert sample.metrics["throughput_gbps"] > 0
    assert bed.simulated == (bed.kind == "sim")
    assert [h.read_file(SOMAXCONN) for h in hosts] == before
    assert global_sysctls() == machine


def test_a_value_its_knob_does_not_allow_is_refused_before_any_host_is_touched(
        testbed: tuple[Testbed, list[Host]]) -> None:
    bed, hosts = testbed
    before = [h.read_file(SOMAXCONN) for h in hosts]
    with pytest.raises(InvalidInputError) as refused:
        bed.measure(_settings("2222; reboot"), WORKLOAD, 1, 0)
    assert "somaxconn" in str(refused.value)
    assert [h.read_file(SOMAXCONN) for h in hosts] == before


def test_the_fingerprint_is_stable_and_the_default_space_is_built_in(testbed: tuple[Testbed, list[Host]]) -> None:
    bed, _ = testbed
    first = bed.fingerprint()
    assert first and first == bed.fingerprint()
    assert bed.default_space() in builtin_names()
