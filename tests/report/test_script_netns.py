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

    res = netns.run("sh", str(apply), env={"DEV": netns.dev})
    assert res.returncode == 0, res.stdout + res.stderr
    after = netns.link()
    assert (after["mtu"], after["txqlen"]) == (9000, 5000)
    assert netns.feature("tcp-segmentation-offload") == "off"

    again = netns.run("sh", str(apply), env={"DEV": netns.dev})  # idempotent: nothing left to change
    assert again.returncode == 0, again.stderr
    assert "->" not in again.stdout and again.stdout.count("already") == 3

    res = netns.run("sh", str(back), env={"DEV": netns.dev})
    assert res.returncode == 0, res.stdout + res.stderr
    restored = netns.link()
    assert (restored["mtu"], restored["txqlen"]) == (1500, 1000)
    assert netns.feature("tcp-segmentation-offload") == "on"
    assert "search space's default of knob tso" in back.read_text()
    assert netns.run("sh", str(back), env={"DEV": netns.dev}).returncode == 0


def test_script_refuses_a_bad_dev_before_touching_anything(netns: Netns, tmp_path: Path) -> None:
    apply = write_export(_source(netns.dev), "script", tmp_path / "a.sh").files["apply script"]
    for bad in (f"{netns.dev};ip link set {netns.dev} mtu 1280", "$(id)", "nosuchdev0"):
        res = netns.run("sh", str(apply), env={"DEV": bad})
        assert res.returncode in (1, 2), res.stdout
        assert netns.link()["mtu"] == 1500


def test_a_simulated_jobs_script_reports_what_veth_cannot_do(jobs: Jobs, netns: Netns, tmp_path: Path) -> None:
    """The benson-40g best configuration on a veth: rings and pause are unsupported there, so
    the script says FAILED for them and exits 1, but still sets the rest; the rollback
    puts mtu and txqueuelen back to the space's defaults."""
    src = load_source(jobs.engine, jobs.ga)
    files = write_export(src, "script", tmp_path / "b.sh").files
    res = netns.run("sh", str(files["apply script"]), env={"DEV": netns.dev})
    assert res.returncode == 1 and "FAILED" in res.stderr
    assert netns.link()["mtu"] == src.config["mtu"]
    netns.run("sh", str(files["rollback script"]), env={"DEV": netns.dev})
    assert (netns.link()["mtu"], netns.link()["txqlen"]) == (1500, 1000)


def test_no_namespace_left_behind() -> None:
    leftovers = [n for n in _namespaces() if n.startswith(PREFIX)]
    assert not leftovers, leftovers
