"""Locks that keep two trials from changing the same settings at the same time.

A trial snapshots settings, applies its own and restores the snapshot. Two trials
overlapping on the same settings would snapshot each other's values and leave the wrong
ones behind, so every trial (:class:`~nictune.measure.trial.transaction.Trial`), whichever
process runs it (a CLI job, the service, a Celery worker), holds:

* the **testbed lock** (a file next to the testbed's journal): one trial per testbed at a
  time, so its journal is never overwritten by another run's;
* a **machine lock** for every machine whose machine-wide settings it changes: global
  sysctls, the CPU governor, module parameters and IRQ affinity of a namespace's parent, or
  anything on a host that is not a namespace. Two veth testbeds share the machine's
  ``net.core.rmem_max``; trials that change only per-namespace settings run side by side.

Locks are ``flock(2)`` locks on this machine, taken in a fixed order (testbed, then
machines by name) and released by the kernel when a process dies, so a killed run never
leaves one held. A machine reached over SSH may have more than one controller driving it, so
its trial also holds a lock on that machine itself (:meth:`SshHost.machine_lock`, taken
after the local ones, in the order of the machines' ``/etc/machine-id``), which the remote
side releases when the controller's ssh session ends. A trial that has to wait says so in
the log.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

from nictune.measure.hosts import Host, NetnsHost, is_global_sysctl
from nictune.search_spaces import Family, Setting
from nictune.settings import CommonSettings

log = logging.getLogger(__name__)

#: Families whose settings on a namespace are its parent machine's, not the namespace's.
MACHINE_FAMILIES = frozenset({Family.CPU_GOVERNOR, Family.MODULE_PARAM, Family.IRQ_AFFINITY})


def lock_dir() -> Path:
    """Where machine locks live: ``$NICTUNE_LOCK_DIR``, else ``/run/lock``, else the temp dir."""
    configured = CommonSettings().lock_dir
    if configured is not None:
        return configured
    return Path("/run/lock") if os.access("/run/lock", os.W_OK) else Path(tempfile.gettempdir())


def machine_lock_path(machine: str, directory: Path | None = None) -> Path:
    """The lock file of one machine (``nictune-machine-<name>.lock``)."""
    safe = re.sub(r"[^A-Za-z0-9_.@-]", "_", machine).strip(".") or "machine"
    return (directory or lock_dir()) / f"nictune-machine-{safe}.lock"


def changes_machine(host: Host, settings: Iterable[Setting]) -> bool:
    """Whether writing ``settings`` on ``host`` changes what other testbeds on its machine see."""
    settings = list(settings)
    if not isinstance(host, NetnsHost):
        return bool(settings)
    return any((s.family is Family.SYSCTL and is_global_sysctl(s.target)) or s.family in MACHINE_FAMILIES
               for s in settings)


@contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing); ``what`` names it in the log."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("waiting for another nictune trial on %s to finish", what)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def testbed_locks(testbed_lock: Path, testbed: str, hosts: Iterable[Host],
                  directory: Path | None = None) -> Iterator[None]:
    """The testbed lock at ``testbed_lock``, then the lock file of the machine of each of
    ``hosts`` in name order, then the locks on the remote machines themselves."""
    machines: dict[str, Host] = {}
    for host in hosts:
        machines.setdefault(host.machine, host)
    with ExitStack() as stack:
        stack.enter_context(exclusive(testbed_lock, testbed))
        for machine in sorted(machines):
            stack.enter_context(exclusive(machine_lock_path(machine, directory), f"machine {machine}"))
        # Two controllers may name one machine differently (and one controller may reach it
        # at two addresses): order and take them by what the machine says it is.
        ids = {name: ident for name, host in machines.items() if (ident := host.machine_id()) is not None}
        held: set[str] = set()
        for name in sorted(ids, key=lambda n: (ids[n], n)):
            if ids[name] and ids[name] in held:
                continue  # the same machine as one already locked: waiting would be for ourselves
            held.add(ids[name])
            stack.enter_context(machines[name].machine_lock())
        yield


def trial_locks(testbed_lock: Path, testbed: str, writes: Iterable[tuple[Host, Iterable[Setting]]],
                directory: Path | None = None) -> AbstractContextManager[None]:
    """The testbed lock at ``testbed_lock``, then the lock of every machine whose machine-wide
    settings ``writes`` (host, settings) change, in name order."""
    hosts = [host for host, settings in writes if changes_machine(host, settings)]
    return testbed_locks(testbed_lock, testbed, hosts, directory)
