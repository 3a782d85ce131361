"""The exported script and its rollback, run for real on a veth pair in a network namespace.

The namespace (``ntr`` + random hex) and its veth pair are created by the fixture and
removed in its ``finally``; the machine outside the namespace is never touched.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nictune.export import ExportSource, load_source, write_export
from nictune.search_spaces import space_from_dict
from tests.report.conftest import Jobs

PREFIX = "ntr"


def _why_not() -> str:
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    return ""


pytestmark = [pytest.mark.netns, pytest.mark.skipif(bool(_why_not()), reason=_why_not() or "ok")]


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [n["name"] for n in json.loads(out or "[]")]


@dataclass
class Netns:
    name: str
    dev: str
    peer: str

    def run(self, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        cmd = ["ip", "netns", "exec", self.name]
        if env:
            cmd += ["env", *(f"{k}={v}" for k, v in env.items())]
        return subprocess.run([*cmd, *argv], capture_output=True, text=True, timeout=30)

    def link(self) -> dict[str, object]:
        out = self.run("ip", "-j", "link", "show", "dev", self.dev)
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout)[0])

    def feature(self, long_name: str) -> str:
        out = self.run("ethtool", "-k", self.dev).stdout
        m = re.search(rf"^{re.escape(long_name)}: (\w+)", out, re.M)
        assert m, out
        return m.group(1)


@pytest.fixture
def netns() -> Iterator[Netns]:
    tag = secrets.token_hex(4)
    ns = Netns(f"{PREFIX}{tag}", f"{PREFIX}{tag}a", f"{PREFIX}{tag}b")
    subprocess.run(["ip", "netns", "add", ns.name], check=True)
    try:
        made = ns.run("ip", "link", "add", ns.dev, "type", "veth", "peer", "name", ns.peer)
        assert made.returncode == 0, made.stderr
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns.name], check=False)
        assert ns.name not in _namespaces(), f"namespace {ns.name} left behind"


VETH_SPACE = {"name": "veth-export", "knobs": {
    "mtu": {"type": "int", "low": 1500, "high": 9000, "step": 500, "default": 1500,
            "family": "ip_link", "target": "mtu"},
    "txqueuelen": {"type": "choice", "choices": [1000, 5000, 10000], "default": 1000,
                   "family": "ip_link", "target": "txqueuelen"},
    "tso": {"type": "bool", "default": True, "family": "ethtool_features", "target": "tso"},
    "rmem_max": {"type": "choice", "choices": [212992, 4194304], "default": 212992, "target": "net.core.rmem_max"},
}}


def _source(dev: str) -> ExportSource:
    """A trial as a real testbed records it: the host's mtu and txqueuelen in the snapshot,
    nothing recorded for tso (so its rollback value is the space's default, on)."""
    space = space_from_dict(VETH_SPACE)
    snapshot = {"entries": [
        {"side": "receiver", "family": "ip_link", "device": dev, "snapshot": {"mtu": "1500", "txqueuelen": "1000"}},
        {"side": "receiver", "family": "sysctl", "device": dev, "snapshot": {"net.core.rmem_max": "212992"}},
    ], "seed": 1}
    config = space.configuration({"mtu": 9000, "txqueuelen": 5000, "tso": False, "rmem_max": 4194304}).as_dict()
    return ExportSource(
        job_id=1, trial=3, is_best=True, testbed="veth", simulated=False, workload="tcp",
        objectives=["throughput"], constraints=[], engine="ga", space=space, config=config,
        config_hash="f" * 64, metrics={"throughput_gbps": 20.0}, gain={"text": "throughput +10%"},
        snapshot=snapshot, device=dev)


def test_script_applies_and_rollback_restores_on_a_real_veth(netns: Netns, tmp_path: Path) -> None:
    src = _source(netns.dev)
    files = write_export(src, "script", tmp_path / "tune-apply.sh").files
    apply, back = files["apply script"], files["rollback script"]
    assert f"e.g. DEV={netns.dev} sh" in apply.read_text()  # the recorded data interface, as the example
    unset = netns.run("env", "-u", "DEV", "sh", str(apply))  # no DEV: nothing is touched
    assert unset.returncode == 2 and "set DEV to the interface to tune" in unset.stderr
    before = netns.link()
    assert (before["mtu"], before["txqlen"], netns.feature("tcp-segmentation-offload")) == (1500, 1000, "on")

    state = tmp_path / "state" / "job1.state"
    env = {"DEV": netns.dev, "STATE": str(state)}
    res = netns.run("sh", str(apply), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    after = netns.link()
    assert (after["mtu"], after["txqlen"]) == (9000, 5000)
    assert netns.feature("tcp-segmentation-offload") == "off"
    recorded = dict(line.split() for line in state.read_text().splitlines())
    assert recorded == {"ip_link:DEV:mtu": "1500", "ip_link:DEV:txqueuelen": "1000", "ethtool_features:DEV:tso": "on"}

    again = netns.run("sh", str(apply), env=env)  # idempotent: nothing left to change, the record kept
    assert again.returncode == 0, again.stderr
    assert "->" not in again.stdout and again.stdout.count("already") == 3
    assert dict(line.split() for line in state.read_text().splitlines()) == recorded

    res = netns.run("sh", str(back), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    restored = netns.link()
    assert (restored["mtu"], restored["txqlen"]) == (1500, 1000)
    assert netns.feature("tcp-segmentation-offload") == "on"
    assert not state.exists()  # every value is back: the record is gone
    # Without a record the rollback changes nothing, unless told to write the testbed's values.
    none = netns.run("sh", str(back), env=env)
    assert none.returncode == 1 and "no record of the values" in none.stderr
    assert "search space's default of knob tso" in back.read_text()
    assert netns.run("sh", str(back), env={**env, "FALLBACK": "testbed"}).returncode == 0


def test_the_rollback_puts_back_this_hosts_own_values_not_the_testbeds(netns: Netns, tmp_path: Path) -> None:
    """A host whose MTU (1400) and txqueuelen (700) differ from what the measured testbed had
    (1500, 1000): the rollback restores 1400 and 700."""
    for attribute, value in (("mtu", "1400"), ("txqueuelen", "700")):
        assert netns.run("ip", "link", "set", "dev", netns.dev, attribute, value).returncode == 0
    files = write_export(_source(netns.dev), "script", tmp_path / "t.sh").files
    env = {"DEV": netns.dev, "STATE": str(tmp_path / "t.state")}
    try:
        assert netns.run("sh", str(files["apply script"]), env=env).returncode == 0
        assert (netns.link()["mtu"], netns.link()["txqlen"]) == (9000, 5000)
        res = netns.run("sh", str(files["rollback script"]), env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert (netns.link()["mtu"], netns.link()["txqlen"]) == (1400, 700)
        assert netns.feature("tcp-segmentation-offload") == "on"
    finally:  # the fixture's other tests expect the namespace's own values
        for attribute, value in (("mtu", "1500"), ("txqueuelen", "1000")):
            netns.run("ip", "link", "set", "dev", netns.dev, attribute, value)
        netns.run("ethtool", "-K", netns.dev, "tso", "on")


def test_script_refuses_a_bad_dev_before_touching_anything(netns: Netns, tmp_path: Path) -> None:
    apply = write_export(_source(netns.dev), "script", tmp_path / "a.sh").files["apply script"]
    for bad in (f"{netns.dev};ip link set {netns.dev} mtu 1280", "$(id)", "nosuchdev0"):
        res = netns.run("sh", str(apply), env={"DEV": bad})
        assert res.returncode in (1, 2), res.stdout
        assert netns.link()["mtu"] == 1500


def test_a_simulated_jobs_script_reports_what_veth_cannot_do(jobs: Jobs, netns: Netns, tmp_path: Path) -> None:
    """The benson-40g best configuration on a veth: rings and pause are unsupported there, so
    the script says FAILED for them and exits 1, but still sets the rest; the rollback
    puts mtu and txqueuelen back to the host's own values."""
    src = load_source(jobs.engine, jobs.ga)
    files = write_export(src, "script", tmp_path / "b.sh").files
    env = {"DEV": netns.dev, "STATE": str(tmp_path / "b.state")}
    res = netns.run("sh", str(files["apply script"]), env=env)
    assert res.returncode == 1 and "FAILED" in res.stderr
    assert netns.link()["mtu"] == src.config["mtu"]
    netns.run("sh", str(files["rollback script"]), env=env)
    assert (netns.link()["mtu"], netns.link()["txqlen"]) == (1500, 1000)


def test_no_namespace_left_behind() -> None:
    leftovers = [n for n in _namespaces() if n.startswith(PREFIX)]
    assert not leftovers, leftovers


def test_a_root_qdisc_goes_back_to_the_kernels_own(netns: Netns, tmp_path: Path) -> None:
    """The veth's root qdisc is the kernel's (noqueue, handle 0:): apply sets pfifo_fast (this
    kernel has no sch_fq), the rollback deletes ours rather than installing a named root qdisc."""
    space = space_from_dict({"name": "qdisc-export", "knobs": {
        "qdisc": {"type": "choice", "choices": ["fq_codel", "pfifo_fast"], "default": "fq_codel", "family": "qdisc",
                  "target": "root"}}})
    src = ExportSource(
        job_id=2, trial=1, is_best=True, testbed="veth", simulated=False, workload="tcp", objectives=["throughput"],
        constraints=[], engine="ga", space=space, config=space.configuration({"qdisc": "pfifo_fast"}).as_dict(),
        config_hash="e" * 64, metrics={"throughput_gbps": 20.0}, gain={"text": "+1%"}, snapshot=None, device=netns.dev)
    files = write_export(src, "script", tmp_path / "q.sh").files
    env = {"DEV": netns.dev, "STATE": str(tmp_path / "q.state")}

    def root() -> str:
        shown = netns.run("tc", "qdisc", "show", "dev", netns.dev, "root")
        assert shown.returncode == 0, shown.stderr
        return " ".join(shown.stdout.split()[:3])

    assert netns.run("ip", "link", "set", netns.dev, "up").returncode == 0  # a down link has no root qdisc shown
    before = root()
    assert before.endswith(" 0:"), before  # the kernel's own
    assert netns.run("sh", str(files["apply script"]), env=env).returncode == 0
    assert root().startswith("qdisc pfifo_fast ")
    assert (tmp_path / "q.state").read_text().split() == ["qdisc:DEV:root", "default"]
    res = netns.run("sh", str(files["rollback script"]), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert root() == before
