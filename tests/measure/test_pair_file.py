"""Pair files: validation, checks and a real trial with the receiver reached over SSH."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from nictune.errors import InvalidInputError, MeasurementError
from nictune.measure._base import LATENCY_METRICS, LatencyProbe, Workload
from nictune.measure.benchmarks.workloads import WORKLOADS
from nictune.measure.hosts import SshHost
from nictune.measure.testbeds.pair_file import SshPairTestbed, check_pair, load_pair
from nictune.measure.testbeds.veth import VethPair
from nictune.search_spaces._base import Family, Setting
from tests.measure.support import SshServer, leftover_processes, start_sshd


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pair.yaml"
    path.write_text(text)
    return path


GOOD = """
name: lab
port: 5401
sender: {host: local, interface: eth0, address: 192.168.9.1}
receiver: {host: netns:lab-rx, interface: eth1, address: 192.168.9.2}
"""


def test_load_a_valid_file(tmp_path: Path) -> None:
    spec = load_pair(write(tmp_path, GOOD))
    assert (spec.name, spec.port) == ("lab", 5401)
    assert spec.sender.host == "local" and spec.receiver.interface == "eth1"
    assert spec.sockperf_port is None  # sockperf takes the port after iperf3's
    assert load_pair(write(tmp_path, GOOD + "sockperf_port: 6000\n")).sockperf_port == 6000


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("sender: {host: local, interface: eth0, address: 1.2.3.4}", "receiver"),
        (GOOD.replace("port: 5401", "port: 80"), "port"),
        (GOOD.replace("port: 5401", "port: '5401'"), "port"),
        (GOOD.replace("interface: eth1", "interface: eth1-name-too-long"), "receiver.interface"),
        (GOOD.replace("host: local", "host: ftp://x"), "sender.host"),
        (GOOD.replace("host: local", "host: ssh://root@h"), "sender.key"),
        (GOOD.replace("address: 192.168.9.2", "address: eleven"), "receiver.address"),
        (GOOD + "extra: 1\n", "extra"),
        (GOOD + "sockperf_port: 80\n", "sockperf_port"),
        (GOOD + "sockperf_port: 5401\n", "sockperf_port"),  # iperf3's
        (GOOD.replace("interface: eth0,", "interface: eth0, colour: red,"), "sender.colour"),
        ("[1, 2]", "file"),  # a list, not a mapping: the file as a whole
    ],
)
def test_errors_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        load_pair(write(tmp_path, text))
    assert err.value.field == field, str(err.value)


def test_missing_key_file_is_reported(tmp_path: Path) -> None:
    text = GOOD.replace("host: local,", "host: 'ssh://root@h:2200', key: nokey,")
    with pytest.raises(InvalidInputError, match="existing file") as err:
        load_pair(write(tmp_path, text))
    assert err.value.field == "sender.key"


def test_every_problem_is_reported_with_its_line(tmp_path: Path) -> None:
    # Three independent problems: the port (line 3), the sender's host (line 4), the receiver's
    # address (line 5; the flow mappings are one line each).
    text = GOOD.replace("port: 5401", "port: 80").replace("host: local", "host: ftp://x")
    text = text.replace("address: 192.168.9.2", "address: eleven")
    path = write(tmp_path, text)

    with pytest.raises(InvalidInputError) as err:
        load_pair(path)

    assert str(err.value).splitlines() == [
        f"{path}:3: port: 80 is not valid; allowed: an integer from 1024 to 65535",
        f"{path}:4: sender.host: 'ftp://x' is not valid; allowed: local, netns:NAME or ssh://user@host[:port]",
        f"{path}:5: receiver.address: 'eleven' is not valid; allowed: an IPv4 or IPv6 address",
    ]
    assert [p.field for p in err.value.problems] == ["port", "sender.host", "receiver.address"]
    assert (err.value.field, err.value.allowed) == ("port", "an integer from 1024 to 65535")


def test_a_missing_side_and_an_unknown_field_are_both_named(tmp_path: Path) -> None:
    path = write(tmp_path, "sender: {host: local, interface: eth0, address: 1.2.3.4}\ncolour: red\n")

    with pytest.raises(InvalidInputError) as err:
        load_pair(path)

    assert str(err.value).splitlines() == [
        f"{path}:1: receiver: is missing; allowed: a mapping with host, interface and address",
        f"{path}:2: colour: unknown field 'colour'; allowed: name, port, sockperf_port, sender, receiver",
    ]


@pytest.fixture
def ssh_receiver(veth_pair: VethPair, tmp_path: Path) -> Iterator[SshServer]:
    """A real sshd in the receiver namespace, listening on the pair's receiver address."""
    yield from start_sshd(veth_pair.rx, veth_pair.rx_address, 2222, tmp_path / "sshd")


@pytest.mark.netns
def test_ssh_pair_check_and_trial(
    veth_pair: VethPair, ssh_receiver: SshServer, tmp_path: Path
) -> None:
    text = f"""
name: sshpair
port: 5402
sockperf_port: 5410
sender: {{host: "netns:{veth_pair.tx}", interface: {veth_pair.tx}, address: {veth_pair.tx_address}}}
receiver:
  host: ssh://root@{veth_pair.rx_address}:2222
  key: {ssh_receiver.key}
  known_hosts: {ssh_receiver.known_hosts}
  via_netns: {veth_pair.tx}
  interface: {veth_pair.rx}
  address: {veth_pair.rx_address}
"""
    spec = load_pair(write(tmp_path, text))
    fingerprint = check_pair(spec)
    assert fingerprint["receiver.driver"] == "veth" and fingerprint["sender.kernel"]
    assert fingerprint["receiver.numa_node"] == "-1"

    rx = veth_pair.receiver()
    before = rx.read_file("/proc/sys/net/core/somaxconn")
    with SshPairTestbed(spec) as tb:
        result = tb.measure(
            [Setting(Family.SYSCTL, "net.core.somaxconn", 2222)],
            Workload("tcp", "tcp", duration_s=1, omit_s=0), 1, 0,
        )  # fmt: skip
        receiver = tb.endpoints().receiver
        assert isinstance(receiver, SshHost) and receiver.multiplexed
        # sockperf's server runs over SSH too, on the file's port, and is stopped there.
        latency = replace(WORKLOADS["latency"], latency=LatencyProbe(duration_s=1))
        (sample,) = tb.measure([], latency, 1, 0).samples
    assert result.samples[0].metrics["throughput_gbps"] > 0
    assert set(sample.metrics) == set(LATENCY_METRICS) and sample.metrics["latency_p50_us"] > 0
    assert rx.read_file("/proc/sys/net/core/somaxconn") == before
    assert not [p for p in leftover_processes() if "sockperf" in p]  # (the test's sshd still runs)


@pytest.mark.netns
def test_check_pair_lists_problems(veth_pair: VethPair, tmp_path: Path) -> None:
    text = f"""
sender: {{host: "netns:{veth_pair.tx}", interface: {veth_pair.tx}, address: 10.9.9.9}}
receiver: {{host: "netns:{veth_pair.rx}", interface: nosuchdev, address: {veth_pair.rx_address}}}
"""
    with pytest.raises(MeasurementError) as err:
        check_pair(load_pair(write(tmp_path, text)))
    assert "does not have address 10.9.9.9" in str(err.value)
    assert "nosuchdev does not exist" in str(err.value)


def test_a_pair_opened_by_its_file_path_recovers_the_journal_its_trials_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial on a pair journals under ``pair:NAME``; opening the pair by its file's path
    (what the CLI does) looks there too, so a crashed run's leftovers are restored at once."""
    from nictune.measure.testbeds import open_testbed

    monkeypatch.setenv("NICTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NICTUNE_LOCK_DIR", str(tmp_path))
    path = write(tmp_path, GOOD)
    left = SshPairTestbed(load_pair(path)).journal  # where a trial on this pair journals
    left.write({"testbed": "pair:lab", "hosts": {}, "entries": []})  # a dead run's, nothing applied yet
    assert left.exists()
    bed = open_testbed(str(path))
    assert (bed.name, bed.journal_key) == (str(path), "pair:lab")
    assert not left.exists()  # replayed and cleared when the testbed opened
