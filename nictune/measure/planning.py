"""A host that plans instead of changing anything: the seam of the dry run.

A :class:`PlanningHost` wraps a real host. Reads (file reads and the read-only show
commands of :func:`is_read_only`) go to the real host, since they change nothing and the
restore needs the values they return. Every other command and every file write is recorded
with the argv the real host would start (its :meth:`~nictune.measure.hosts.Host.local_argv`
wrapping included) and not run. So the appliers, the trial transaction and the iperf3 argv
builders run unchanged on it, and what the dry run prints is what their real run executes.

The host also keeps what the recorded writes would have left (:class:`PlannedState`), so
that a later read (the verify after an apply, the restore's "what is there now") sees the
applied values, as on the real host. That state is a model: sysctl and sysfs files hold the
text written; ``ethtool``, ``ip link`` and ``tc`` show commands get the written fields
patched into their real output.

A dry run's result (:class:`DryRun`, one :class:`TrialPlan` per trial) is defined here too,
next to the commands it lists, for the Testbed interface to name
(:mod:`nictune.measure.trial.dryrun` builds it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nictune.errors import MeasurementError
from nictune.measure.hosts import DEFAULT_TIMEOUT, CommandResult, Host, NetnsHost, Process, is_global_sysctl
from nictune.measure.hosts.netns import sysctl_key

#: Programs that only read.
_READERS = frozenset({"cat", "tail", "test", "ls", "stat", "ss", "id", "true"})
#: ``ethtool`` show flags -> the set flag that changes what they show.
_ETHTOOL_SHOW = {"-k": "-K", "-g": "-G", "-c": "-C", "-a": "-A", "-l": "-L", "-i": ""}
#: ``ip link set`` attribute -> its key in ``ip -j link show``.
_IP_LINK_KEYS = {"mtu": "mtu", "txqueuelen": "txqlen"}


def is_read_only(argv: Sequence[str]) -> bool:
    """Whether ``argv`` only reads (and so may run in a dry run). Anything not known to be
    a read counts as a change: the dry run records it and does not run it."""
    if not argv:
        return False
    prog, args = argv[0], list(argv[1:])
    if prog in _READERS:
        return True
    if prog == "ethtool":
        return len(args) == 2 and args[0] in _ETHTOOL_SHOW
    if prog == "ip":
        return ("-j" in args and "show" in args and "set" not in args) or args == ["netns", "list"]
    if prog == "tc":
        return "-j" in args and args[args.index("-j") + 1 :][:2] == ["qdisc", "show"]
    if prog == "taskset":
        return args == ["-V"]
    return False


@dataclass
class PlannedCommand:
    """One thing a trial would do on a host.

    Attributes:
        phase: ``setup``, ``snapshot``, ``apply``, ``verify``, ``check``, ``benchmark``,
            ``restore``, ``teardown``.
        side: ``sender`` or ``receiver`` (empty for testbed setup).
        host: name of the host that does it (a namespace's global sysctl: its parent).
        action: ``read`` (done now), ``run`` (a command), ``write`` (a file), ``start``
            (a background process).
        argv: the command as nictune builds it; for a file: empty.
        executed: what starts on this machine (``ip netns exec``/``ssh`` wrapping); ``None``
            when nictune reads or writes the file itself, with no command.
        path: the file read or written.
        text: what is written to the file (or fed to the command's standard input).
        ran: whether it was really run (reads only).
        namespace: the host is a network namespace (its own copy of per-namespace sysctls).
        machine: the machine the host is on.
    """

    phase: str
    side: str
    host: str
    action: str
    argv: list[str] = field(default_factory=list)
    executed: list[str] | None = None
    path: str | None = None
    text: str | None = None
    ran: bool = False
    namespace: bool = False
    machine: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class PlannedState:
    """The recorded commands of one dry run, in order, and what their writes would leave."""

    commands: list[PlannedCommand] = field(default_factory=list)
    phase: str = "snapshot"
    files: dict[tuple[str, str], str] = field(default_factory=dict)
    ethtool: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)
    links: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    qdiscs: dict[tuple[str, str], str] = field(default_factory=dict)


def _labels(set_flag: str, target: str) -> str:
    """The label ``ethtool``'s show command prints for ``target`` of ``set_flag``."""
    from nictune.measure.appliers import APPLIERS, FEATURE_ALIASES, EthtoolApplier

    for applier in APPLIERS.values():
        if isinstance(applier, EthtoolApplier) and applier.set == set_flag and target in applier.targets:
            return applier.targets[target][0]
    return FEATURE_ALIASES.get(target, target)


class PlanningHost(Host):
    """``inner`` for reads; a recorder for everything that would change it (see the module doc).

    Args:
        inner: the real host.
        state: the shared log and model state (one per dry run: both ends of a veth pair share
            the machine's global sysctls).
        side: ``sender`` or ``receiver``, for the log.
    """

    def __init__(self, inner: Host, state: PlannedState, side: str) -> None:
        self.inner = inner
        self.state = state
        self.side = side
        self.name = inner.name

    @property
    def machine(self) -> str:
        return self.inner.machine

    def local_argv(self, argv: list[str]) -> list[str]:
        return self.inner.local_argv(argv)

    def spec(self) -> dict[str, Any]:
        return self.inner.spec()

    def machine_id(self) -> str | None:
        return self.inner.machine_id()

    def file_host(self, path: str) -> Host:
        return self.inner.file_host(path)

    # ------------------------------------------------------------------ recording
    def record(self, action: str, host: Host, argv: Sequence[str] = (), *, path: str | None = None,
               text: str | None = None, ran: bool = False, executed: list[str] | None = None) -> None:
        """Append one entry to the log, on ``host`` (this host or the one a file lives on)."""
        real = host.inner if isinstance(host, PlanningHost) else host
        self.state.commands.append(PlannedCommand(
            self.state.phase, self.side, real.name, action, list(argv), executed, path, text, ran,
            isinstance(real, NetnsHost), real.machine))

    def run(self, argv: list[str], timeout: float = DEFAULT_TIMEOUT, check: bool = True,
            input: str | None = None) -> CommandResult:
        """Run a read on the real host (its output patched by the planned writes); record
        anything else and answer success without running it."""
        if is_read_only(argv):
            result = self.inner.run(argv, timeout=timeout, check=check, input=input)
            self.record("read", self, argv, executed=self.inner.local_argv(argv), ran=True)
            return CommandResult(result.returncode, self._patched(argv, result.stdout), result.stderr)
        self.record("run", self, argv, text=input, executed=self.inner.local_argv(argv))
        self._remember(argv)
        return CommandResult(0, "", "")

    def spawn(self, argv: list[str]) -> Process:
        """Never starts anything: a dry run describes benchmarks with :meth:`plan_start`."""
        raise MeasurementError(f"{self.name}: a dry run starts no process ({argv[0]})")

    def plan_start(self, argv: list[str]) -> None:
        """Record that a trial starts ``argv`` in the background here."""
        self.record("start", self, argv, executed=self.inner.local_argv(argv))

    def read_file(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        where = self.inner.file_host(path)
        planned = self.state.files.get((where.name, path))
        if planned is not None:
            return planned
        text = self.inner.read_file(path, timeout)
        self.record("read", where, path=path, ran=True)
        return text

    def read_files(self, paths: Sequence[str], timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
        return {p: self.read_file(p, timeout) for p in paths}

    def exists(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
        self.record("read", self, ["test", "-e", path], path=path, ran=True)
        return self.inner.exists(path, timeout)

    def list_dir(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
        self.record("read", self, ["ls", "-1", path], path=path, ran=True)
        return self.inner.list_dir(path, timeout)

    def write_file(self, path: str, text: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Record the write on the host that really holds ``path``, with the command it
        would run there (none when nictune writes the file itself)."""
        where = self.inner.file_host(path)
        argv = where.write_argv(path)
        self.record("write", where, argv or [], path=path, text=text,
                    executed=where.local_argv(argv) if argv else None)
        self.state.files[(where.name, path)] = text

    # ------------------------------------------------------------------ the modelled state
    def _remember(self, argv: Sequence[str]) -> None:
        """What a recorded change leaves, for later reads of the same thing."""
        args = list(argv)
        if args[:1] == ["ethtool"] and len(args) >= 3:
            fields = self.state.ethtool.setdefault((self.name, args[2], args[1]), {})
            fields.update({_labels(args[1], k): v for k, v in zip(args[3::2], args[4::2], strict=False)})
        elif args[:4] == ["ip", "link", "set", "dev"] and len(args) >= 5:
            link = self.state.links.setdefault((self.name, args[4]), {})
            link.update({_IP_LINK_KEYS[k]: int(v) for k, v in zip(args[5::2], args[6::2], strict=False)
                         if k in _IP_LINK_KEYS})
        elif args[:2] == ["tc", "qdisc"] and len(args) >= 6:
            key = (self.name, args[4])
            if args[2] == "del":  # back to the kernel's default: what the real host shows now
                self.state.qdiscs.pop(key, None)
            elif len(args) >= 7:
                self.state.qdiscs[key] = args[6]

    def _patched(self, argv: Sequence[str], out: str) -> str:
        """The real output of a show command with the planned changes in it."""
        args = list(argv)
        if args[:1] == ["ethtool"] and len(args) == 3:
            fields = self.state.ethtool.get((self.name, args[2], _ETHTOOL_SHOW.get(args[1], "")), {})
            # parse_ethtool lets a later "Label: value" line win, in the last section (the
            # current settings of -g/-l; the only one of -k/-c/-a)
            return out + "".join(f"\n{label}: {value}" for label, value in fields.items())
        if args[:1] == ["ip"] and "link" in args and "dev" in args:
            link = self.state.links.get((self.name, args[args.index("dev") + 1]))
            if link:
                data = json.loads(out)
                data[0].update(link)
                return json.dumps(data)
        if args[:1] == ["tc"] and "dev" in args:
            kind = self.state.qdiscs.get((self.name, args[args.index("dev") + 1]))
            if kind is not None:
                return json.dumps([{"kind": kind, "handle": "8001:", "root": True, "options": {}}])
        return out


# ---------------------------------------------------------------- the dry run's result
#: The phases of a trial, in the order a trial runs them.
PHASES = ("setup", "snapshot", "apply", "verify", "check", "benchmark", "restore", "teardown")
#: Families whose settings are the machine's whatever host writes them.
_MACHINE_PATHS = {"/proc/irq/": "IRQ affinity", "/sys/devices/system/cpu/": "CPU frequency governor"}


def scope(cmd: PlannedCommand) -> tuple[bool, str]:
    """``(machine_wide, what it changes)`` of a planned write or command."""
    if cmd.path is not None:
        key = sysctl_key(cmd.path)
        if key is not None:
            if is_global_sysctl(key):
                return True, f"global sysctl {key}: one value for every namespace and process on {cmd.machine}"
            if cmd.namespace:
                return False, f"sysctl {key} of namespace {cmd.host.removeprefix('netns:')} only"
            return True, f"sysctl {key} of {cmd.machine}'s own network namespace (every process in it)"
        for prefix, what in _MACHINE_PATHS.items():
            if cmd.path.startswith(prefix):
                return True, f"{what} of {cmd.machine}"
        if cmd.path.startswith("/sys/class/net/"):
            return False, f"device {cmd.path.split('/')[4]} on {cmd.host}"
    if cmd.argv[:1] in (["ethtool"], ["ip"], ["tc"]) and "dev" in cmd.argv:
        return False, f"device {cmd.argv[cmd.argv.index('dev') + 1]} on {cmd.host}"
    if cmd.argv[:1] == ["ethtool"] and len(cmd.argv) > 2:
        return False, f"device {cmd.argv[2]} on {cmd.host}"
    return False, ""


def command_dict(cmd: PlannedCommand) -> dict[str, Any]:
    """A planned command as plain data, with its scope."""
    wide, what = scope(cmd)
    return cmd.as_dict() | {"machine_wide": wide, "scope": what}


@dataclass
class TrialPlan:
    """What one trial would do.

    Attributes:
        label: which configuration (``default``, ``baseline``, ``--set ...``).
        settings: the validated settings, as the hosts get them.
        hosts: side -> host name.
        commands: every read, write, command and process in the order the trial takes them.
        repeats: how many times the benchmark would run.
        problems: what the restore would not put back (empty when the plan restores all).
        config: the configuration, knob -> value, when it comes from a space.
    """

    label: str
    settings: list[dict[str, Any]]
    hosts: dict[str, str]
    commands: list[PlannedCommand]
    repeats: int
    problems: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "config": self.config, "settings": self.settings, "hosts": self.hosts,
                "repeats": self.repeats, "problems": self.problems,
                "commands": [command_dict(c) for c in self.commands]}


@dataclass
class DryRun:
    """What a measurement (or a job's first ones) would do on a testbed; nothing was changed."""

    testbed: str
    kind: str
    simulated: bool
    trials: list[TrialPlan] = field(default_factory=list)
    setup: list[PlannedCommand] = field(default_factory=list)
    teardown: list[PlannedCommand] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": True, "testbed": self.testbed, "kind": self.kind, "simulated": self.simulated,
                "notes": self.notes, "setup": [command_dict(c) for c in self.setup],
                "trials": [t.as_dict() for t in self.trials],
                "teardown": [command_dict(c) for c in self.teardown]}



def is_write(cmd: PlannedCommand) -> bool:
    """Whether the command changes something (or starts a process): what a dry run never runs."""
    return cmd.action in ("write", "run", "start")


__all__ = ["PHASES", "DryRun", "PlannedCommand", "PlannedState", "PlanningHost", "TrialPlan", "command_dict",
           "is_read_only", "is_write", "scope"]
