"""Trials of other runs wait for the testbed and for the machine-wide settings a trial changes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from nictune.measure.hosts import LocalHost, NetnsHost, SshHost
from nictune.measure.locks import changes_machine, machine_lock_path, trial_locks
from nictune.search_spaces._base import Family, Setting

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
            time.sleep(0.3)
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
