"""The ``busy`` scenario: a spinning shell loop on every CPU the benchmark does not use."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import TracebackType

from nictune.measure.hosts import Host, Process
from nictune.measure.topology import online_cpus

#: The busy loop: a constant argv, nothing from the user in it.
BUSY_LOOP = ("sh", "-c", "while :; do :; done")


def busy_commands(hosts: Sequence[Host], exclude: Iterable[int] = ()) -> list[tuple[Host, list[str]]]:
    """The busy loops of the ``busy`` scenario: one ``taskset``-pinned loop per CPU of each
    machine among ``hosts`` (hosts on one machine share them), except the CPUs ``exclude``."""
    skip = set(exclude)
    machines = list({h.machine: h for h in hosts}.values())
    return [(host, ["taskset", "-c", str(cpu), *BUSY_LOOP])
            for host in machines for cpu in online_cpus(host) if cpu not in skip]


class BusyLoad:
    """Context manager: start busy loops on ``hosts``' CPUs except ``exclude``; always stop.

    Hosts on the same machine (namespaces of one veth pair) get one set of loops.
    When the benchmark is not pinned (``exclude`` empty) every CPU gets a loop: the
    benchmark then competes with them, which is what ``busy`` means for an unpinned run.
    """

    def __init__(self, hosts: Sequence[Host], exclude: Iterable[int] = ()) -> None:
        self.hosts = list({h.machine: h for h in hosts}.values())
        self.exclude = set(exclude)
        self.processes: list[Process] = []

    def start(self) -> None:
        """Start one loop per CPU, pinned with ``taskset``."""
        for host, argv in busy_commands(self.hosts, self.exclude):
            self.processes.append(host.spawn(argv))

    def stop(self) -> None:
        """Stop every loop (SIGTERM, then SIGKILL)."""
        while self.processes:
            self.processes.pop().stop(grace=1.0)

    def __enter__(self) -> BusyLoad:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
