"""A pair of network namespaces joined by a veth link, and the testbed built on it (``veth``,
``veth:NAME``).

``VethPair("nt0").up()`` creates namespaces ``nt0-tx`` and ``nt0-rx``, the veth link
``nt0-tx`` <-> ``nt0-rx`` (each end inside its namespace, named after it) and the
addresses 10.250.X.1/30 (sender) and 10.250.X.2/30 (receiver), X derived from the name.
The addresses exist only inside those namespaces; nothing on the machine's own
network changes.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nictune.errors import HostCommandError, InvalidInputError
from nictune.measure._base import Testbed, TrialResult, Workload
from nictune.measure.appliers import validate_settings
from nictune.measure.benchmarks.benchmark import Endpoints
from nictune.measure.hosts import Host, LocalHost, NetnsHost, host_from_spec
from nictune.measure.probing.fingerprint import cpu_model, driver_info, kernel_release
from nictune.measure.probing.probe_space import unsupported_knobs
from nictune.measure.testbeds._base import register_testbed
from nictune.measure.trial.journal import Journal, register_cleanup
from nictune.measure.trial.transaction import Trial
from nictune.search_spaces import SearchSpace, Setting

if TYPE_CHECKING:
    from nictune.measure.trial.dryrun import DryRun

_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")


def check_pair_name(name: object) -> str:
    """A veth pair name: ``^[a-z][a-z0-9]{0,7}$`` (namespace and device names derive from it).

    Raises:
        InvalidInputError: the name does not match.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise InvalidInputError(
            f"veth pair name {name!r} is not allowed; allowed: ^[a-z][a-z0-9]{{0,7}}$",
            field="name",
            allowed="^[a-z][a-z0-9]{0,7}$",
        )
    return name


@dataclass(frozen=True)
class VethPair:
    """Two namespaces and the veth link between them.

    Attributes:
        name: the pair's name; namespaces and devices are ``NAME-tx`` and ``NAME-rx``.
        host: the machine the namespaces live on.
    """

    name: str
    host: Host = field(default_factory=LocalHost)

    def __post_init__(self) -> None:
        check_pair_name(self.name)

    @property
    def tx(self) -> str:
        """Sender namespace, also the name of its veth end."""
        return f"{self.name}-tx"

    @property
    def rx(self) -> str:
        """Receiver namespace, also the name of its veth end."""
        return f"{self.name}-rx"

    @property
    def subnet(self) -> int:
        """X in 10.250.X.0/30 (1-254), a stable function of the name."""
        return zlib.crc32(self.name.encode()) % 254 + 1

    @property
    def tx_address(self) -> str:
        """The sender's address (inside its namespace)."""
        return f"10.250.{self.subnet}.1"

    @property
    def rx_address(self) -> str:
        """The receiver's address (inside its namespace)."""
        return f"10.250.{self.subnet}.2"

    def sender(self) -> NetnsHost:
        """A host for the sender namespace."""
        return NetnsHost(self.tx, self.host)

    def receiver(self) -> NetnsHost:
        """A host for the receiver namespace."""
        return NetnsHost(self.rx, self.host)

    def exists(self) -> bool:
        """Whether both namespaces exist."""
        names = list_namespaces(self.host)
        return self.tx in names and self.rx in names

    def setup_commands(self) -> list[tuple[Host, list[str]]]:
        """What :meth:`up` runs, in order: each command with the host it runs on."""
        cmds: list[tuple[Host, list[str]]] = [
            (self.host, ["ip", "netns", "add", self.tx]),
            (self.host, ["ip", "netns", "add", self.rx]),
            (self.host, ["ip", "link", "add", self.tx, "netns", self.tx, "type", "veth",
                         "peer", "name", self.rx, "netns", self.rx]),
        ]  # fmt: skip
        for ns, addr in ((self.tx, self.tx_address), (self.rx, self.rx_address)):
            host = NetnsHost(ns, self.host)
            cmds += [(host, ["ip", "addr", "add", f"{addr}/30", "dev", ns]),
                     (host, ["ip", "link", "set", "dev", ns, "up"]),
                     (host, ["ip", "link", "set", "dev", "lo", "up"])]
        return cmds

    def teardown_commands(self) -> list[tuple[Host, list[str]]]:
        """What :meth:`down` runs once :meth:`up` has made both namespaces."""
        return [(self.host, ["ip", "netns", "del", ns]) for ns in (self.tx, self.rx)]

    def up(self) -> None:
        """Create namespaces, link and addresses; on any failure remove what was made."""
        try:
            for host, argv in self.setup_commands():
                host.run(argv)
        except HostCommandError:
            self.down()
            raise

    def down(self) -> None:
        """Remove both namespaces (the veth link goes with them); missing ones are fine."""
        names = list_namespaces(self.host)
        for host, argv in self.teardown_commands():
            if argv[-1] in names:
                host.run(argv)


def remove_pair(resource: dict[str, Any]) -> str:
    """Remove the veth pair a crashed trial created (its journal's ``veth_pair`` resource)."""
    pair = VethPair(resource["name"], host_from_spec(resource.get("host") or LocalHost().spec()))
    pair.down()
    return f"removed veth pair {pair.name}"


# The crash journal removes the pairs a dead trial created through this (it knows no testbed kind).
register_cleanup("veth_pair", remove_pair)


def list_namespaces(host: Host | None = None) -> list[str]:
    """Names of the network namespaces ``ip netns`` knows on ``host``."""
    out = (host or LocalHost()).run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def list_pairs(host: Host | None = None) -> list[str]:
    """Names of the veth pairs whose two namespaces exist on ``host``."""
    names = set(list_namespaces(host))
    return sorted(
        n[:-3]
        for n in names
        if n.endswith("-tx") and f"{n[:-3]}-rx" in names and _NAME_RE.match(n[:-3])
    )


class VethTestbed(Testbed):
    """A local testbed: iperf3 between the two namespaces of a :class:`VethPair`.

    The pair is created on first use and removed by :meth:`close` unless it existed
    before. Global sysctls set in a trial change this machine (and are restored).

    Args:
        name: the pair's name (``nt0`` -> testbed ``veth:nt0``).
        port: iperf3 port inside the receiver namespace.
        state_dir: journal directory (default: :func:`~nictune.measure.trial.journal.state_dir`).
        host: the machine the namespaces live on.
    """

    kind = "veth"
    simulated = False

    def __init__(
        self,
        name: str = "nt0",
        port: int = 5201,
        state_dir: Path | None = None,
        host: Host | None = None,
    ) -> None:
        self.pair = VethPair(name, host or LocalHost())
        self.name = f"veth:{name}"
        self.port = port
        self.journal = Journal(self.name, state_dir)
        self.created = False

    def ensure_up(self) -> None:
        """Create the pair if it does not exist (and remember to remove it)."""
        if not self.pair.exists():
            self.pair.up()
            self.created = True

    def endpoints(self) -> Endpoints:
        """Sender and receiver namespaces, their veth ends and the receiver's address."""
        return Endpoints(
            sender=self.pair.sender(),
            receiver=self.pair.receiver(),
            sender_device=self.pair.tx,
            receiver_device=self.pair.rx,
            receiver_address=self.pair.rx_address,
            port=self.port,
        )

    def fingerprint(self) -> dict[str, str]:
        """Kernel, driver (``veth``), CPU model; NIC ``veth``."""
        self.ensure_up()
        sender = self.pair.sender()
        return {
            "kernel": kernel_release(sender),
            "driver": driver_info(sender, self.pair.tx)["driver"],
            "nic": "veth",
            "cpu": cpu_model(sender),
        }

    def default_space(self) -> str:
        """``veth``: the knobs a veth pair supports."""
        return "veth"

    def unsupported_knobs(self, space: SearchSpace) -> dict[str, str]:
        """Probed in the pair's namespaces (:func:`~nictune.measure.probing.probe_space.unsupported_knobs`)."""
        self.ensure_up()
        return unsupported_knobs(space, self.endpoints())

    def measure(
        self, settings: list[Setting], workload: Workload, repeats: int, seed: int
    ) -> TrialResult:
        """Run one trial (see :class:`~nictune.measure.trial.transaction.Trial`)."""
        self.ensure_up()
        resources = []
        if self.created:
            resources.append(
                {"kind": "veth_pair", "name": self.pair.name, "host": self.pair.host.spec()}
            )
        return Trial(self.endpoints(), self.journal, resources).run(
            settings, workload, repeats, seed
        )

    def dry_run(
        self, trials: Sequence[tuple[str, list[Setting]]], workload: Workload, repeats: int
    ) -> DryRun:
        """Each trial planned in the pair's namespaces; a missing pair is not created: its setup
        and teardown commands are listed, and the trials their validated settings only."""
        from nictune.measure.trial.dryrun import (
            DryRun,
            TrialPlan,
            journal_notes,
            plan_trial,
            planned_commands,
            setting_dict,
        )

        run = DryRun(self.name, self.kind, False, notes=journal_notes(self.journal))
        if self.pair.exists():
            run.trials = [plan_trial(self.endpoints(), settings, workload, repeats, label)
                          for label, settings in trials]
            return run
        run.setup = planned_commands("setup", self.pair.setup_commands())
        run.teardown = planned_commands("teardown", self.pair.teardown_commands())
        run.notes.append(
            f"veth pair {self.pair.name} does not exist: a real run creates it first (setup) and removes it at "
            "the end (teardown). Without its namespaces nothing can be read now, and which commands apply and "
            "restore run depends on the values read there: create it with 'nictune testbed up --name "
            f"{self.pair.name}' (and remove it with 'nictune testbed down --name {self.pair.name}') to see them")
        hosts = {"sender": self.pair.sender().name, "receiver": self.pair.receiver().name}
        run.trials = [TrialPlan(label, [setting_dict(s) for s in validate_settings(settings)], hosts, [], repeats)
                      for label, settings in trials]
        return run

    def close(self) -> None:
        """Remove the pair if this testbed created it."""
        if self.created:
            self.pair.down()
            self.created = False


@register_testbed("veth", matches=lambda name: name == "veth" or name.startswith("veth:"),
                  names=lambda: ["veth", "veth:NAME"])
def open_veth(name: str, noise: float | None) -> VethTestbed:
    """``veth`` (the pair ``nt0``) or ``veth:NAME``; the pair is created on first use."""
    return VethTestbed(name.partition(":")[2] or "nt0")
