"""Helpers for the real-measurement tests (namespaces, leak checks, a real sshd)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nictune.measure.benchmarks.busy import BUSY_LOOP
from nictune.measure.hosts import GLOBAL_SYSCTLS, NetnsHost, SshHost, sysctl_path
from nictune.search_spaces._base import Family, Setting

NEEDED = ("ip", "iperf3", "ethtool", "tc", "ping", "taskset", "ss")


def netns_usable() -> str:
    """Empty when netns tests can run, else why not."""
    if os.geteuid() != 0:
        return "needs root"
    missing = [t for t in NEEDED if shutil.which(t) is None]
    return f"missing programs: {', '.join(missing)}" if missing else ""


def unique_name(prefix: str = "ntt") -> str:
    """``ntt`` + 5 random characters: a valid veth pair name, unique per call."""
    return prefix + secrets.token_hex(3)[:8 - len(prefix)]


def global_sysctls() -> dict[str, str]:
    """Current values of every global sysctl this kernel has (read in the initial namespace)."""
    out = {}
    for key in GLOBAL_SYSCTLS:
        try:
            out[key] = Path(sysctl_path(key)).read_text()
        except OSError:
            continue
    return out


def leftover_processes() -> list[str]:
    """iperf3 and sockperf processes, busy loops, test sshds and SSH master connections still running."""
    busy = "\0".join(BUSY_LOOP)
    ours = (busy, "nictune-ssh-", "/pytest-of-")
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            comm = (proc / "comm").read_text().strip()
            cmdline = (proc / "cmdline").read_text()
        except OSError:
            continue
        if comm in ("iperf3", "sockperf") or (comm in ("sh", "ssh", "sshd") and any(o in cmdline for o in ours)):
            found.append(f"{proc.name} {cmdline.replace(chr(0), ' ')}")
    return found


def wait_no_processes(timeout: float = 10.0) -> list[str]:
    """Wait for iperf3/sockperf/busy processes to go; the ones still there after ``timeout``."""
    deadline = time.monotonic() + timeout
    while (left := leftover_processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@dataclass
class SshServer:
    """A real sshd inside a namespace, and how to reach it."""

    namespace: str
    address: str
    port: int
    key: Path
    known_hosts: Path

    def host(self) -> SshHost:
        """An :class:`SshHost` whose client runs inside the namespace."""
        return SshHost(
            self.address,
            "root",
            port=self.port,
            key=str(self.key),
            known_hosts=str(self.known_hosts),
            client=NetnsHost(self.namespace),
        )


def start_sshd(namespace: str, address: str, port: int, workdir: Path) -> Iterator[SshServer]:
    """Run sshd in ``namespace`` on ``address:port`` with keys made in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    hostkey, userkey = workdir / "host_key", workdir / "id_ed25519"
    for key in (hostkey, userkey):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
        )
    (workdir / "authorized_keys").write_text(userkey.with_suffix(".pub").read_text())
    host_pub = hostkey.with_suffix(".pub").read_text().split()
    known = workdir / "known_hosts"
    known.write_text(f"[{address}]:{port} {host_pub[0]} {host_pub[1]}\n")
    config = workdir / "sshd_config"
    config.write_text(
        f"ListenAddress {address}:{port}\nHostKey {hostkey}\nPidFile {workdir}/sshd.pid\n"
        f"AuthorizedKeysFile {workdir}/authorized_keys\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        "StrictModes no\nLogLevel ERROR\n"
    )
    privsep = Path("/run/sshd")
    made_privsep = not privsep.exists()
    if made_privsep:
        privsep.mkdir(mode=0o755)
    ns = NetnsHost(namespace)
    sshd = ns.spawn(["/usr/sbin/sshd", "-D", "-e", "-f", str(config)])
    try:
        deadline = time.monotonic() + 10
        while not ns.run(["ss", "-Hltn", "sport", "=", f":{port}"]).stdout.strip():
            if sshd.poll() is not None or time.monotonic() > deadline:
                res = sshd.stop()
                pytest.fail(f"sshd did not start: {res.stderr}")
            time.sleep(0.05)
        yield SshServer(namespace, address, port, userkey, known)
    finally:
        sshd.stop()
        if made_privsep:
            privsep.rmdir()


#: What the crash and signal tests apply: an MTU, a global and a per-namespace sysctl.
CRASH_SETTINGS = [
    Setting(Family.IP_LINK, "mtu", 4000),
    Setting(Family.SYSCTL, "net.core.rmem_max", 7340032),
    Setting(Family.SYSCTL, "net.core.somaxconn", 1111),
]


def iperf3_clients(port: int) -> list[int]:
    """Pids of iperf3 clients talking to ``port``."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if (proc / "comm").read_text().strip() != "iperf3":
                continue
            args = (proc / "cmdline").read_text().split("\0")
        except OSError:
            continue
        if "-c" in args and str(port) in args:
            pids.append(int(proc.name))
    return pids
