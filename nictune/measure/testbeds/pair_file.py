"""A real sender/receiver pair described in a YAML file, and the testbed built on it (the
file's path names it).

```yaml
name: lab-40g                  # optional, defaults to the file name
port: 5201                     # iperf3 port on the receiver
sockperf_port: 5202            # optional: sockperf's port there (default: port + 1)
sender:
  host: ssh://root@10.0.0.1:22 # or "local", or "netns:NAME" (a namespace here)
  key: ~/.ssh/nictune_ed25519  # private key (ssh hosts only)
  known_hosts: ~/.ssh/known_hosts   # optional; host key checking stays on
  interface: ens1f0            # data interface
  address: 192.168.50.1        # its address on the data network
receiver:
  host: ssh://root@10.0.0.2
  key: ~/.ssh/nictune_ed25519
  interface: ens1f0
  address: 192.168.50.2
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nictune.errors import HostCommandError, InvalidInputError, MeasurementError
from nictune.measure._base import Testbed, TrialResult, Workload
from nictune.measure.benchmarks.benchmark import Endpoints, missing_programs
from nictune.measure.hosts import Host, LocalHost, NetnsHost, SshHost
from nictune.measure.probing.fingerprint import host_fingerprint
from nictune.measure.probing.probe_space import unsupported_knobs
from nictune.measure.testbeds._base import register_testbed
from nictune.measure.testbeds.pair_schema import SSH_URL, PairFile
from nictune.measure.trial.journal import Journal
from nictune.measure.trial.transaction import Trial
from nictune.search_spaces import SearchSpace, Setting
from nictune.yamlfile import not_a_mapping, parse_yaml, validated

if TYPE_CHECKING:
    from nictune.measure.trial.dryrun import DryRun

#: Programs a pair host needs (sockperf only for a workload with a latency part: a trial
#: checks it then).
TOOLS = ("iperf3", "ethtool", "ip", "tc", "taskset", "ping", "ss")


@dataclass(frozen=True)
class PairEnd:
    """One side of a pair file.

    Attributes:
        host: ``local``, ``netns:NAME`` or ``ssh://user@host[:port]``.
        interface: the data interface.
        address: the interface's address on the data network.
        key: SSH private key file.
        known_hosts: SSH known_hosts file (the user's by default).
        via_netns: run the ssh client inside this local namespace (a management network
            kept in a namespace).
    """

    host: str
    interface: str
    address: str
    key: str | None = None
    known_hosts: str | None = None
    via_netns: str | None = None

    def connect(self) -> Host:
        """A :class:`Host` for this side."""
        if self.host == "local":
            return LocalHost()
        if self.host.startswith("netns:"):
            return NetnsHost(self.host[len("netns:") :])
        m = SSH_URL.match(self.host)
        assert m is not None  # checked by load_pair
        return SshHost(
            m.group("host").strip("[]"),
            m.group("user"),
            port=int(m.group("port") or 22),
            key=self.key,
            known_hosts=self.known_hosts,
            client=NetnsHost(self.via_netns) if self.via_netns else None,
        )


@dataclass(frozen=True)
class PairSpec:
    """A validated pair file."""

    name: str
    port: int
    sender: PairEnd
    receiver: PairEnd
    path: str = ""
    sockperf_port: int | None = None


def load_pair(path: str | Path) -> PairSpec:
    """Read and validate a pair file (:class:`~nictune.measure.testbeds.pair_schema.PairFile`).

    Raises:
        InvalidInputError: not a YAML mapping (field ``path`` or ``file``), or listing every
            problem, one a line (``FILE:LINE: receiver.interface: ...``); its field is the
            first one's path (``receiver.interface`` ...).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"pair file {p}: {exc.strerror}", field="path") from exc
    except UnicodeDecodeError:
        raise InvalidInputError(f"pair file {p}: not a UTF-8 text file", field="path") from None
    try:
        data = parse_yaml(text, f"pair file {p}")
    except InvalidInputError as exc:
        raise InvalidInputError(str(exc), field="path", allowed=exc.allowed) from None
    if not isinstance(data, dict):
        raise not_a_mapping(f"pair file {p}", data, "a mapping with sender and receiver")
    spec = validated(PairFile, data, source=str(p), text=text, context={"base": p.parent.resolve()})
    ends = [PairEnd(end.host, end.interface, end.address, end.key, end.known_hosts, end.via_netns)
            for end in (spec.sender, spec.receiver)]
    return PairSpec(spec.name or p.stem, spec.port, ends[0], ends[1], str(p), spec.sockperf_port)


def _check_side(side: str, host: Host, end: PairEnd) -> list[str]:
    problems = []
    try:
        if isinstance(host, SshHost):
            host.open()
        host.run(["true"], timeout=20)
    except HostCommandError as exc:
        return [f"{side}: not reachable: {exc}"]
    missing = missing_programs(host, TOOLS)
    if missing:
        problems.append(f"{side}: missing programs: {', '.join(missing)}")
    if host.run(["id", "-u"], check=False).stdout.strip() != "0":
        problems.append(f"{side}: not root (writing sysctls and ethtool settings needs root)")
    addrs = host.run(["ip", "-o", "addr", "show", "dev", end.interface], check=False)
    if addrs.returncode != 0:
        problems.append(f"{side}: interface {end.interface} does not exist")
    elif f" {end.address}/" not in addrs.stdout:
        problems.append(f"{side}: {end.interface} does not have address {end.address}")
    return problems


def check_pair(spec: PairSpec) -> dict[str, str]:
    """Check reachability, tools, privileges and addresses; return the fingerprint.

    Raises:
        MeasurementError: listing every problem found.
    """
    sender, receiver = spec.sender.connect(), spec.receiver.connect()
    try:
        return _check_pair(spec, sender, receiver)
    finally:
        sender.close()
        receiver.close()


def _check_pair(spec: PairSpec, sender: Host, receiver: Host) -> dict[str, str]:
    problems = _check_side("sender", sender, spec.sender)
    problems += _check_side("receiver", receiver, spec.receiver)
    if not problems:
        ping = ["ping", "-n", "-q", "-c", "2", "-i", "0.2", "-W", "1", spec.receiver.address]
        if sender.run(ping, timeout=10, check=False).returncode != 0:
            problems.append(f"sender cannot ping receiver address {spec.receiver.address}")
    if problems:
        raise MeasurementError(f"pair {spec.name}: " + "; ".join(problems))
    out: dict[str, str] = {}
    for side, host, end in (("sender", sender, spec.sender), ("receiver", receiver, spec.receiver)):
        for key, value in host_fingerprint(host, end.interface).items():
            out[f"{side}.{key}"] = value
    return out


class SshPairTestbed(Testbed):
    """Two real hosts from a pair file, measured with the same trial transaction as veth."""

    kind = "ssh"
    simulated = False

    def __init__(self, spec: PairSpec, state_dir: Path | None = None) -> None:
        self.spec = spec
        self.name = spec.path or spec.name
        self.journal = Journal(self.journal_key, state_dir)
        self._fingerprint: dict[str, str] | None = None
        self._ends: Endpoints | None = None

    @property
    def journal_key(self) -> str:
        """``pair:NAME``: the pair's journals and lock are its name's, whichever file opened it."""
        return f"pair:{self.spec.name}"

    def endpoints(self) -> Endpoints:
        """Sender and receiver hosts (SSH connections opened once and kept until
        :meth:`close`) and the data interfaces from the file."""
        if self._ends is None:
            sender, receiver = self.spec.sender.connect(), self.spec.receiver.connect()
            for host in (sender, receiver):
                if isinstance(host, SshHost):
                    host.open()
            self._ends = Endpoints(
                sender=sender,
                receiver=receiver,
                sender_device=self.spec.sender.interface,
                receiver_device=self.spec.receiver.interface,
                receiver_address=self.spec.receiver.address,
                port=self.spec.port,
                sockperf_port=self.spec.sockperf_port,
            )
        return self._ends

    def close(self) -> None:
        """Close the SSH connections."""
        if self._ends is not None:
            self._ends.sender.close()
            self._ends.receiver.close()
            self._ends = None

    def fingerprint(self) -> dict[str, str]:
        """From :func:`check_pair` (checked once per testbed object)."""
        if self._fingerprint is None:
            self._fingerprint = check_pair(self.spec)
        return dict(self._fingerprint)

    def default_space(self) -> str:
        """``linux-nic``: the generic space for a Linux host with a real NIC."""
        return "linux-nic"

    def unsupported_knobs(self, space: SearchSpace) -> dict[str, str]:
        """Probed on both hosts (:func:`~nictune.measure.probing.probe_space.unsupported_knobs`)."""
        return unsupported_knobs(space, self.endpoints())

    def measure(
        self, settings: list[Setting], workload: Workload, repeats: int, seed: int
    ) -> TrialResult:
        """Run one trial (see :class:`~nictune.measure.trial.transaction.Trial`)."""
        return Trial(self.endpoints(), self.journal).run(settings, workload, repeats, seed)

    def dry_run(
        self, trials: Sequence[tuple[str, list[Setting]]], workload: Workload, repeats: int
    ) -> DryRun:
        """Each trial planned on the two hosts (reads run over SSH; nothing else does)."""
        from nictune.measure.trial.dryrun import DryRun, journal_notes, plan_trial

        run = DryRun(self.name, self.kind, False, notes=journal_notes(self.journal))
        run.trials = [plan_trial(self.endpoints(), settings, workload, repeats, label)
                      for label, settings in trials]
        return run


def describe_pair(spec: PairSpec) -> dict[str, Any]:
    """Plain data for ``testbed show``."""
    return {
        "name": spec.name,
        "port": spec.port,
        "sockperf_port": spec.sockperf_port,
        "sender": vars(spec.sender),
        "receiver": vars(spec.receiver),
    }


@register_testbed("ssh", matches=lambda name: name.endswith((".yaml", ".yml")) and Path(name).is_file(),
                  names=lambda: ["PATH/TO/pair.yaml"])
def open_pair(name: str, noise: float | None) -> SshPairTestbed:
    """A pair YAML file (:func:`load_pair`)."""
    return SshPairTestbed(load_pair(name))
