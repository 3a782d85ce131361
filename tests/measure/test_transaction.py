"""The trial transaction on a real veth pair: success, fast failure, crash and signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nictune.errors import MeasurementError
from nictune.measure._base import Workload
from nictune.measure.hosts import LocalHost, sysctl_path
from nictune.measure.testbeds.veth import VethPair, VethTestbed
from nictune.measure.trial.journal import Journal, replay_journal
from nictune.search_spaces._base import Family, Setting
from tests.measure.support import CRASH_SETTINGS, iperf3_clients, wait_no_processes

pytestmark = pytest.mark.netns
F = Family
REPO = Path(__file__).resolve().parents[2]
RMEM_MAX = sysctl_path("net.core.rmem_max")
SOMAXCONN = sysctl_path("net.core.somaxconn")


def state(pair: VethPair) -> dict[str, str]:
    """What the crash settings touch, read from the real hosts."""
    tx, rx = pair.sender(), pair.receiver()
    ends = ((tx, pair.tx), (rx, pair.rx))
    mtu = [h.read_file(f"/sys/class/net/{d}/mtu").strip() for h, d in ends]
    return {
        "mtu": ",".join(mtu),
        "rmem_max": LocalHost().read_file(RMEM_MAX).strip(),
        "somaxconn": tx.read_file(SOMAXCONN).strip() + "," + rx.read_file(SOMAXCONN).strip(),
    }


@pytest.fixture
def guarded_rmem_max() -> Iterator[str]:
    """The global value the tests change; put back whatever happens."""
    orig = LocalHost().read_file(RMEM_MAX)
    try:
        yield orig.strip()
    finally:
        if LocalHost().read_file(RMEM_MAX) != orig:
            LocalHost().write_file(RMEM_MAX, orig)


def test_success_path_restores_everything(
    veth_pair: VethPair, state_dir: Path, guarded_rmem_max: str
) -> None:
    before = state(veth_pair)
    tb = VethTestbed(veth_pair.name, port=5321)
    settings = [*CRASH_SETTINGS, Setting(F.SYSCTL, "net.ipv4.tcp_rmem", 6291456, 2),
                Setting(F.PLACEMENT, "receiver", "numa-local")]  # fmt: skip
    result = tb.measure(settings, Workload("tcp", "tcp", duration_s=1, omit_s=0), 2, 7)
    assert len(result.samples) == 2
    assert all(s.metrics["throughput_gbps"] > 0 for s in result.samples)
    assert result.snapshot["seed"] == 7 and "receiver" in result.notes[0]
    assert state(veth_pair) == before
    assert not Journal(tb.name, state_dir).exists()
    assert not tb.created  # the pair existed before: close() leaves it alone
    tb.close()
    assert veth_pair.exists()


def test_busy_scenario_trial(veth_pair: VethPair) -> None:
    tb = VethTestbed(veth_pair.name, port=5327)
    wl = Workload("udp", "udp", length=1400, bitrate_gbps=0.2, duration_s=1, omit_s=0,
                  scenario="busy")  # fmt: skip
    result = tb.measure([Setting(F.PLACEMENT, "cpus", "0")], wl, 1, 0)
    assert result.samples[0].metrics["throughput_gbps"] > 0
    assert "sender 0, receiver 0" in result.notes[0]
    assert not wait_no_processes(3)


def test_testbed_creates_and_removes_its_pair(state_dir: Path) -> None:
    from tests.measure.support import unique_name

    with VethTestbed(unique_name(), port=5322) as tb:
        assert tb.fingerprint()["driver"] == "veth" and tb.default_space() == "veth"
        assert tb.created and tb.pair.exists()
    assert not tb.pair.exists()


def test_mtu_mismatch_fails_fast_and_restores(veth_pair: VethPair) -> None:
    before = state(veth_pair)
    tb = VethTestbed(veth_pair.name, port=5323)
    one_side = [Setting(F.IP_LINK, "mtu", 9000, device=veth_pair.tx)]
    t0 = time.monotonic()
    with pytest.raises(MeasurementError, match="MTU mismatch") as err:
        tb.measure(one_side, Workload("tcp", "tcp", duration_s=20, omit_s=0), 3, 0)
    assert time.monotonic() - t0 < 6  # the benchmark alone would take 60 s
    assert "restored" in str(err.value)
    assert state(veth_pair) == before
    assert not wait_no_processes(2)


def test_failed_apply_restores_what_was_applied(veth_pair: VethPair) -> None:
    before = state(veth_pair)
    tb = VethTestbed(veth_pair.name, port=5324)
    settings = [Setting(F.IP_LINK, "mtu", 4000), Setting(F.ETHTOOL_CHANNELS, "rx", 64)]
    with pytest.raises(MeasurementError, match="ethtool -L"):
        tb.measure(settings, Workload("tcp", "tcp", duration_s=1, omit_s=0), 1, 0)
    assert state(veth_pair) == before


def start_child(pair: VethPair, port: int, duration: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.measure.trial_child", pair.name, str(port), str(duration)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def wait_benchmark(child: subprocess.Popen[bytes], port: int) -> None:
    """Wait until the child's iperf3 client runs (i.e. settings are applied)."""
    deadline = time.monotonic() + 20
    while not iperf3_clients(port):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            _, err = child.communicate()
            pytest.fail(f"benchmark never started: {err.decode()[-2000:]}")
        time.sleep(0.05)
    time.sleep(0.3)


def test_crash_mid_benchmark_is_repaired_by_replay(
    veth_pair: VethPair, state_dir: Path, guarded_rmem_max: str
) -> None:
    before = state(veth_pair)
    child = start_child(veth_pair, 5325, 30)
    try:
        wait_benchmark(child, 5325)
        applied = state(veth_pair)
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert applied == {"mtu": "4000,4000", "rmem_max": "7340032", "somaxconn": "1111,1111"}
    assert not wait_no_processes(5), "iperf3 must die with its parent"
    assert state(veth_pair) == applied  # the crash left the settings behind
    journal = Journal(f"veth:{veth_pair.name}", state_dir)
    assert journal.exists()

    reports = replay_journal(state_dir)
    assert len(reports) == 1 and reports[0].ok, reports
    restored = "\n".join(reports[0].restored)
    assert "ip_link" in restored and "net.core.rmem_max" in restored and "somaxconn" in restored
    assert state(veth_pair) == before
    assert not journal.exists()
    assert replay_journal(state_dir) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_benchmark_restores_then_delivers(
    veth_pair: VethPair, state_dir: Path, guarded_rmem_max: str, signum: int
) -> None:
    before = state(veth_pair)
    child = start_child(veth_pair, 5326, 30)
    try:
        wait_benchmark(child, 5326)
        t0 = time.monotonic()
        child.send_signal(signum)
        code = child.wait(15)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert time.monotonic() - t0 < 10
    assert code == -signum  # the signal is delivered again after the restore
    assert state(veth_pair) == before
    assert not Journal(f"veth:{veth_pair.name}", state_dir).exists()
    assert not wait_no_processes(5)
