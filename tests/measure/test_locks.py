"""Trials of other runs wait for the testbed and for the machine-wide settings a trial changes."""

from __future__ import annotations

import json
import logging
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nictune.errors import HostCommandError
from nictune.measure.hosts import LocalHost, NetnsHost, SshHost
from nictune.measure.trial.locks import changes_machine, machine_lock_path, trial_locks
from nictune.search_spaces._base import Family, Setting
from tests.measure.support import SshServer

pytestmark = pytest.mark.system  # runs nictune in subprocesses


RMEM_MAX = Setting(Family.SYSCTL, "net.core.rmem_max", 16777216)  # one per machine
TCP_RMEM = Setting(Family.SYSCTL, "net.ipv4.tcp_rmem", 16777216, index=2)  # one per namespace
MTU = Setting(Family.IP_LINK, "mtu", 9000)
GOVERNOR = Setting(Family.CPU_GOVERNOR, "governor", "performance")


def test_what_counts_as_changing_the_machine() -> None:
    ns = NetnsHost("nt-x")
    assert changes_machine(ns, [MTU, RMEM_MAX]) and changes_machine(ns, [GOVERNOR])
    assert not changes_machine(ns, [MTU, TCP_RMEM]) and not changes_machine(ns, [])
    assert changes_machine(LocalHost(), [MTU]) and changes_machine(SshHost("10.0.0.1", user="root"), [TCP_RMEM])
    assert ns.machine == LocalHost().machine  # a namespace's machine is its parent's


def overlaps(tmp_path: Path, runs: list[tuple[str, list[Setting]]]) -> bool:
    """Run one locked 'trial' per (testbed, settings) in threads; whether two were ever inside at once."""
    inside: list[int] = []
    overlap = threading.Event()
    guard = threading.Lock()

    def trial(n: int, testbed: str, settings: list[Setting]) -> None:
        with trial_locks(tmp_path / f"{testbed}.lock", testbed, [(NetnsHost(f"{testbed}-rx"), settings)],
                         directory=tmp_path):
            with guard:
                inside.append(n)
                if len(inside) > 1:
                    overlap.set()
            overlap.wait(0.6)  # stay inside until another trial joins (if it can), at most 0.6 s
            with guard:
                inside.remove(n)

    threads = [threading.Thread(target=trial, args=(n, *run)) for n, run in enumerate(runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return overlap.is_set()


def test_trials_on_one_testbed_take_turns(tmp_path: Path) -> None:
    assert not overlaps(tmp_path, [("nt-a", [MTU]), ("nt-a", [TCP_RMEM]), ("nt-a", [])])


def test_testbeds_of_one_machine_take_turns_only_for_machine_wide_settings(tmp_path: Path) -> None:
    assert not overlaps(tmp_path, [("nt-a", [MTU, RMEM_MAX]), ("nt-b", [RMEM_MAX]), ("nt-c", [GOVERNOR])])
    assert overlaps(tmp_path, [("nt-a", [MTU, TCP_RMEM]), ("nt-b", [MTU])])
    assert machine_lock_path(LocalHost().machine, tmp_path).exists()


def test_controllers_driving_one_ssh_machine_take_turns(sshd_netns: SshServer, tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Two controllers (their own lock files, their own testbeds) trialling on one SSH host:
    the second waits on the lock held on that machine, and says so."""
    events: list[str] = []
    inside = threading.Event()

    def controller(name: str, hold: float) -> None:
        own = tmp_path / name
        with trial_locks(own / "testbed.lock", f"ssh-{name}", [(sshd_netns.host(), [TCP_RMEM])], directory=own):
            events.append(f"{name} in")
            inside.set()
            time.sleep(hold)
            events.append(f"{name} out")

    caplog.set_level(logging.WARNING, logger="nictune")
    first = threading.Thread(target=controller, args=("a", 2.0))
    first.start()
    assert inside.wait(30)
    second = threading.Thread(target=controller, args=("b", 0.0))
    second.start()
    first.join(30)
    second.join(30)
    assert events == ["a in", "a out", "b in", "b out"]
    assert any("nictune's lock on that machine" in r.getMessage() and sshd_netns.host().machine in r.getMessage()
               for r in caplog.records)


def line_within(proc: subprocess.Popen[str], seconds: float) -> str | None:
    """The next line ``proc`` prints within ``seconds``, or ``None``."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    return proc.stdout.readline().strip() if ready else None


def test_a_dead_controller_leaves_no_lock_on_the_machine(sshd_netns: SshServer) -> None:
    child = (
        "import json, sys, time\n"
        "from nictune.measure.hosts import host_from_spec\n"
        "with host_from_spec(json.loads(sys.argv[1])).machine_lock():\n"
        "    print('held', flush=True)\n"
        "    time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", child, json.dumps(sshd_netns.host().spec())],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert line_within(proc, 30) == "held"
        waiting = subprocess.Popen([sys.executable, "-c", child, json.dumps(sshd_netns.host().spec())],
                                   stdout=subprocess.PIPE, text=True)
        try:
            assert line_within(waiting, 3.0) is None  # the lock is held on the machine
            proc.kill()  # the controller dies holding it: its ssh client dies with it
            proc.wait(10)
            assert line_within(waiting, 30) == "held"
        finally:
            waiting.kill()
            waiting.wait(10)
    finally:
        proc.kill()
        proc.wait(10)


def test_an_unreachable_ssh_machine_is_a_clear_error(sshd_netns: SshServer) -> None:
    host = SshHost(sshd_netns.address, "root", port=sshd_netns.port + 1, key=str(sshd_netns.key),
                   known_hosts=str(sshd_netns.known_hosts), client=NetnsHost(sshd_netns.namespace))
    with pytest.raises(HostCommandError, match=r"cannot take nictune's lock on the machine: .*refused"), \
            host.machine_lock():
        pass


def test_one_machine_reached_at_two_names_is_locked_once(sshd_netns: SshServer, tmp_path: Path) -> None:
    """A trial whose two hosts are one machine (two addresses) must not wait for itself."""
    known = tmp_path / "known_hosts"
    line = sshd_netns.known_hosts.read_text().strip()
    known.write_text(f"{line}\n{line.replace('[127.0.0.1]', '[localhost]', 1)}\n")
    hosts = [SshHost(name, "root", port=sshd_netns.port, key=str(sshd_netns.key), known_hosts=str(known),
                     client=NetnsHost(sshd_netns.namespace)) for name in ("127.0.0.1", "localhost")]
    assert hosts[0].machine != hosts[1].machine and hosts[0].machine_id() == hosts[1].machine_id() != ""
    done = threading.Event()

    def trial() -> None:
        with trial_locks(tmp_path / "t.lock", "two-names", [(h, [TCP_RMEM]) for h in hosts], directory=tmp_path):
            done.set()

    threading.Thread(target=trial, daemon=True).start()
    assert done.wait(30), "the trial waited for its own lock"
