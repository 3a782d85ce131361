"""The dry run: it plans exactly what a real trial then runs, and changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from nictune.errors import InvalidInputError
from nictune.measure._base import LatencyProbe, Workload
from nictune.measure.benchmarks.iperf3 import Endpoints
from nictune.measure.benchmarks.workloads import WORKLOADS
from nictune.measure.hosts import LocalHost, NetnsHost, sysctl_path
from nictune.measure.planning import PlannedCommand, is_read_only
from nictune.measure.testbeds.veth import VethPair, list_namespaces
from nictune.measure.trial.dryrun import is_write, plan_trial
from nictune.measure.trial.journal import Journal
from nictune.measure.trial.transaction import Trial
from nictune.search_spaces._base import Family, Setting
from tests.measure.support import global_sysctls, leftover_processes, unique_name, wait_no_processes

F = Family
REPO = Path(__file__).resolve().parents[2]
RMEM_MAX = sysctl_path("net.core.rmem_max")
#: Set ``ethtool -K``-style flags that change a device.
_ETHTOOL_SET = ("-K", "-G", "-C", "-A", "-L")


class RecordingLocalHost(LocalHost):
    """This machine, recording every command started on it (a namespace host's too: they are
    wrapped by their parent's ``local_argv``) and every file nictune writes itself."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, ...]] = []

    def local_argv(self, argv: list[str]) -> list[str]:
        self.log.append(tuple(argv))
        return super().local_argv(argv)

    def write_file(self, path: str, text: str, timeout: float = 15.0) -> None:
        self.log.append(("<write>", path, text))
        super().write_file(path, text, timeout)


def changes(argv: tuple[str, ...]) -> bool:
    """Whether a recorded command changes something or is traffic (the test's own list, not
    the dry run's :func:`is_read_only`)."""
    inner = argv[4:] if argv[:3] == ("ip", "netns", "exec") else argv
    return (inner[:1] in (("<write>",), ("dd",), ("ping",), ("iperf3",), ("sockperf",))
            or inner[:2] == ("taskset", "-c")
            or inner[:3] == ("ip", "link", "set") or inner[:3] in (("tc", "qdisc", "replace"), ("tc", "qdisc", "del"))
            or (inner[:1] == ("ethtool",) and inner[1] in _ETHTOOL_SET))


def as_executed(cmd: PlannedCommand) -> tuple[str, ...]:
    """A planned write as the recording host sees it run."""
    if cmd.executed is None:
        return ("<write>", cmd.path or "", cmd.text or "")
    return tuple(cmd.executed)


def host_state(pair: VethPair) -> dict[str, object]:
    """Global sysctls, the pair's per-namespace ones and link attributes, the namespace list."""
    per_ns = {}
    for host, dev in ((pair.sender(), pair.tx), (pair.receiver(), pair.rx)):
        for key in ("net.core.somaxconn", "net.ipv4.tcp_rmem"):
            per_ns[f"{host.name} {key}"] = host.read_file(sysctl_path(key))
        per_ns[f"{host.name} link"] = host.run(["ip", "-d", "link", "show", "dev", dev]).stdout
        per_ns[f"{host.name} qdisc"] = host.run(["tc", "qdisc", "show", "dev", dev]).stdout
        per_ns[f"{host.name} features"] = host.run(["ethtool", "-k", dev]).stdout
    return {"global": global_sysctls(), "ns": per_ns, "namespaces": sorted(list_namespaces())}


def test_read_only_commands_are_told_apart() -> None:
    assert is_read_only(["ethtool", "-k", "eth0"]) and is_read_only(["ip", "-j", "-d", "link", "show", "dev", "x"])
    assert is_read_only(["tc", "-j", "qdisc", "show", "dev", "x", "root"])
    for argv in (["ethtool", "-K", "eth0", "gro", "on"], ["ip", "link", "set", "dev", "x", "mtu", "9000"],
                 ["tc", "qdisc", "del", "dev", "x", "root"], ["dd", "of=/proc/sys/x"], ["ping", "10.0.0.1"],
                 ["iperf3", "-c", "x"], ["rm", "-rf", "/"], []):
        assert not is_read_only(argv), argv


@pytest.mark.netns
def test_dry_run_prints_the_commands_a_real_trial_runs(veth_pair: VethPair) -> None:
    rmem_max = int(LocalHost().read_file(RMEM_MAX)) + 4096  # surely not the current value
    settings = [Setting(F.IP_LINK, "mtu", 4000), Setting(F.SYSCTL, "net.core.rmem_max", rmem_max),
                Setting(F.SYSCTL, "net.core.somaxconn", 1111), Setting(F.SYSCTL, "net.ipv4.tcp_rmem", 6291456, 2),
                Setting(F.QDISC, "root", "pfifo"), Setting(F.ETHTOOL_FEATURES, "gro", "on"),
                Setting(F.PLACEMENT, "receiver", "0")]
    workload = Workload("tcp", "tcp", duration_s=1, omit_s=0)

    def ends(parent: LocalHost) -> Endpoints:
        return Endpoints(NetnsHost(veth_pair.tx, parent), NetnsHost(veth_pair.rx, parent), veth_pair.tx,
                         veth_pair.rx, veth_pair.rx_address, port=5371)

    before = host_state(veth_pair)
    plan = plan_trial(ends(LocalHost()), settings, workload, 1)
    assert host_state(veth_pair) == before and not leftover_processes()
    assert plan.problems == []

    recorder = RecordingLocalHost()
    Trial(ends(recorder), Journal("veth:dry-test")).run(settings, workload, 1, 0)
    executed = [argv for argv in recorder.log if changes(argv)]
    planned = [as_executed(c) for c in plan.commands if is_write(c)]
    # A dd writes its text on standard input, which local_argv does not see: compare its argv.
    assert planned == executed
    phases = [c.phase for c in plan.commands if is_write(c)]
    assert phases == sorted(phases, key=["apply", "check", "benchmark", "restore"].index)
    flat = [" ".join(a) for a in executed]
    for expected in ("ip link set dev", "tc qdisc replace", "ethtool -K", "dd of=/proc/sys/net/core/somaxconn",
                     "taskset -c 0 iperf3 -s", "iperf3 -c", "<write> /proc/sys/net/core/rmem_max"):
        assert any(expected in line for line in flat), expected
    assert host_state(veth_pair) == before


@pytest.mark.netns
def test_dry_run_lists_sockperf_after_iperf3_as_the_trial_runs_them(veth_pair: VethPair) -> None:
    settings = [Setting(F.SYSCTL, "net.core.somaxconn", 1111), Setting(F.PLACEMENT, "cpus", "0")]
    workload = replace(WORKLOADS["tcp+latency"], duration_s=1, omit_s=0,
                       latency=LatencyProbe("ping-pong", "tcp", 64, duration_s=1))

    def ends(parent: LocalHost) -> Endpoints:
        return Endpoints(NetnsHost(veth_pair.tx, parent), NetnsHost(veth_pair.rx, parent), veth_pair.tx,
                         veth_pair.rx, veth_pair.rx_address, port=5375)

    plan = plan_trial(ends(LocalHost()), settings, workload, 1)
    recorder = RecordingLocalHost()
    Trial(ends(recorder), Journal("veth:dry-test")).run(settings, workload, 1, 0)
    executed = [argv for argv in recorder.log if changes(argv)]
    assert [as_executed(c) for c in plan.commands if is_write(c)] == executed
    bench = [" ".join(c.argv) for c in plan.commands if c.phase == "benchmark"]
    assert [line.split()[3:5] for line in bench] == [["iperf3", "-s"], ["iperf3", "-c"], ["sockperf", "server"],
                                                    ["sockperf", "ping-pong"]]
    assert bench[2].startswith("taskset -c 0 ") and bench[2].endswith("-p 5376 --tcp") and "--full-rtt" in bench[3]
    # A latency-only workload starts no iperf3.
    plan = plan_trial(ends(LocalHost()), [], WORKLOADS["latency"], 1)
    assert [c.argv[0] for c in plan.commands if c.phase == "benchmark"] == ["sockperf", "sockperf"]
    assert not wait_no_processes(5)


def test_dry_run_refuses_a_latency_part_sockperf_cannot_take() -> None:
    local = LocalHost()
    ends = Endpoints(local, local, "lo", "lo", "127.0.0.1", port=5377)
    with pytest.raises(InvalidInputError) as err:
        plan_trial(ends, [], replace(WORKLOADS["latency"], latency=LatencyProbe(duration_s=2.5)), 1)
    assert err.value.field == "latency.duration_s"


def _cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "250", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=REPO)


@pytest.mark.netns
def test_cli_dry_run_on_veth_prints_the_sections_and_changes_nothing(veth_pair: VethPair, tmp_path: Path) -> None:
    before = host_state(veth_pair)
    res = _cli("measure", "--dry-run", "-t", f"veth:{veth_pair.name}", "-s", "mtu=9000", "-s", "qdisc=pfifo_fast")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for section in ("DRY RUN", f"sender: netns:{veth_pair.tx}", f"receiver: netns:{veth_pair.rx}",
                    "snapshot reads", "apply:", "benchmark (x3", "restore:", "machine-wide changes:"):
        assert section in out, section
    assert out.index("snapshot reads (") < out.index("apply:") < out.index("benchmark (x") < out.index("restore:")
    assert f"ip netns exec {veth_pair.tx} ip link set dev {veth_pair.tx} mtu 9000" in out
    assert f"ip netns exec {veth_pair.rx} iperf3 -s -1 -p 5201" in out and "(in the background)" in out

    db = tmp_path / "jobs.db"
    res = _cli("optimize", "--dry-run", "--json", "-o", "throughput", "-t", f"veth:{veth_pair.name}",
               "--db", f"sqlite:///{db}")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["dry_run"] and doc["kind"] == "veth" and 1 <= len(doc["trials"]) <= 2
    assert doc["trials"][0]["label"] == "default" and doc["trials"][0]["commands"]
    assert {c["phase"] for c in doc["trials"][0]["commands"]} >= {"snapshot", "benchmark"}
    assert not db.exists()  # no job stored
    assert host_state(veth_pair) == before
    assert not wait_no_processes(2.0)


@pytest.mark.netns
def test_dry_run_of_a_missing_pair_lists_its_setup_and_creates_nothing() -> None:
    name = unique_name()
    before = sorted(list_namespaces())
    res = _cli("measure", "--dry-run", "-t", f"veth:{name}", "-s", "mtu=9000")
    assert res.returncode == 0, res.stderr
    assert f"ip netns add {name}-tx" in res.stdout and "testbed setup (not run)" in res.stdout
    assert "does not exist" in res.stdout and "setting ip_link mtu = 9000" in res.stdout
    assert sorted(list_namespaces()) == before


@pytest.mark.netns
def test_dry_run_refuses_a_bad_value_like_a_real_run() -> None:
    res = _cli("measure", "--dry-run", "-t", f"veth:{unique_name()}", "-s", "mtu=1234567")
    assert res.returncode == 2 and "mtu" in res.stderr


@pytest.mark.system
def test_sim_dry_run_says_nothing_runs(tmp_path: Path) -> None:
    res = _cli("measure", "--dry-run", "-t", "sim:benson-40g", "-s", "mtu=9000")
    assert res.returncode == 0, res.stderr
    assert "is a simulated testbed, a model: nothing runs on any host" in res.stdout
    assert "setting ip_link mtu = 9000  (modelled)" in res.stdout
    assert "snapshot reads" not in res.stdout and "read-only" not in res.stdout
    db = tmp_path / "jobs.db"
    res = _cli("optimize", "--dry-run", "--json", "-o", "throughput", "--db", f"sqlite:///{db}", "--seed", "1")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["simulated"] and all(t["commands"] == [] for t in doc["trials"])
    assert [t["label"] for t in doc["trials"]][:1] == ["default"]
    assert "nothing runs on any host" in doc["notes"][0]
    assert not db.exists()
