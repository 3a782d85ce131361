"""Root queueing discipline (``tc qdisc replace dev DEV root KIND``) and benchmark placement."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nictune.errors import HostCommandError, InvalidInputError, MeasurementError, RestoreError
from nictune.measure.appliers._base import Applier, ProbeResult, check_snapshot
from nictune.measure.hosts import Host
from nictune.measure.topology import PLACEMENT_POLICIES
from nictune.measure.validation import (
    check_cpu_list,
    check_device,
    check_token,
    invalid,
    parse_cpu_list,
)
from nictune.search_spaces import Family, Setting

#: Root qdiscs nictune may set (no parameters: the kernel's defaults for each). ``noqueue``
#: means "no qdisc": the default of virtual devices (veth), reached by deleting ours.
QDISCS = ("noqueue", "fq", "fq_codel", "pfifo_fast", "pfifo", "sfq", "cake")
#: Kinds the kernel attaches by itself (handle ``0:``); restoring them means deleting ours.
_DEFAULT_KINDS = ("noqueue", "mq", "pfifo_fast", "fq_codel", "fq", "noop")


def root_qdisc(host: Host, device: str) -> tuple[str, bool]:
    """``(kind, is_default)`` of the root qdisc; default ones have handle ``0:``."""
    out = host.run(["tc", "-j", "qdisc", "show", "dev", check_device(device), "root"]).stdout
    try:
        entries = [e for e in json.loads(out or "[]") if e.get("root")]
    except (ValueError, AttributeError) as exc:
        raise MeasurementError(f"{host.name}: unexpected 'tc -j qdisc' output") from exc
    if not entries:
        return "noqueue", True
    return str(entries[0]["kind"]), str(entries[0].get("handle", "")) == "0:"


class QdiscApplier(Applier):
    """Target ``root``; value one of :data:`QDISCS`."""

    family = Family.QDISC

    def normalize(self, setting: Setting) -> Any:
        """Target ``root``, value an allow-listed qdisc kind."""
        check_token("qdisc target", setting.target, ("root",))
        return check_token("qdisc", setting.value, QDISCS)

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Supported when ``tc`` can show the device's root qdisc."""
        try:
            kind, default = root_qdisc(host, device)
        except (HostCommandError, MeasurementError) as exc:
            return ProbeResult(False, str(exc))
        return ProbeResult(
            True,
            "a kind missing from the kernel fails at apply time",
            {"current": kind, "default": default, "kinds": list(QDISCS)},
        )

    def snapshot(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, Any]:
        """``{"root": kind, "default": "yes"|"no"}``."""
        for s in settings:
            self.normalize(s)
        kind, default = root_qdisc(host, device)
        return {"root": kind, "default": "yes" if default else "no"}

    def apply(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """``tc qdisc replace dev DEV root KIND``."""
        for s in settings:
            kind = self.normalize(s)
            dev = check_device(device)
            if kind == "noqueue":
                current, default = root_qdisc(host, dev)
                if current == "noqueue":
                    continue
                if default:
                    raise MeasurementError(
                        f"{host.name}/{dev}: noqueue is only possible where it is the device's "
                        f"default; the default here is {current}"
                    )
                host.run(["tc", "qdisc", "del", "dev", dev, "root"])
                continue
            host.run(["tc", "qdisc", "replace", "dev", dev, "root", kind])

    def verify(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """The root qdisc's kind is the one set."""
        wanted = [self.normalize(s) for s in settings]
        kind, _ = root_qdisc(host, device)
        for s, want in zip(settings, wanted, strict=True):
            if kind != want:
                raise MeasurementError(
                    f"{host.name}/{device}: root qdisc is {kind}, wanted {s.value}"
                )

    def restore(self, host: Host, device: str, snapshot: Mapping[str, Any]) -> None:
        """Delete ours to get the kernel's default back, or replace with the recorded kind."""
        snap = check_snapshot(snapshot)
        want = check_token("qdisc", snap.get("root", ""), (*QDISCS, *_DEFAULT_KINDS))
        dev = check_device(device)
        try:
            kind, default = root_qdisc(host, dev)
            if (kind, default) != (want, snap.get("default") == "yes"):
                if snap.get("default") == "yes":
                    if not default:
                        host.run(["tc", "qdisc", "del", "dev", dev, "root"])
                else:
                    host.run(["tc", "qdisc", "replace", "dev", dev, "root", want])
            kind, _ = root_qdisc(host, dev)
        except MeasurementError as exc:
            raise RestoreError(f"qdisc restore on {host.name}/{dev} failed: {exc}") from exc
        if kind != want:
            raise RestoreError(f"qdisc restore on {host.name}/{dev}: root is {kind}, wanted {want}")


#: Placement targets: which iperf3 process (``cpus``: both).
PLACEMENT_TARGETS = ("receiver", "sender", "cpus", "receiver_cpus", "sender_cpus")


class PlacementApplier(Applier):
    """Where the iperf3 processes run (``taskset -c``); nothing is written to the host.

    Values are CPU lists or a policy from
    :data:`~nictune.measure.topology.PLACEMENT_POLICIES`, resolved per host by
    :func:`~nictune.measure.topology.resolve_placement` when the trial starts.
    """

    family = Family.PLACEMENT

    def normalize(self, setting: Setting) -> Any:
        """Target from :data:`PLACEMENT_TARGETS`; value a CPU list or a policy."""
        check_token("placement target", setting.target, PLACEMENT_TARGETS)
        if isinstance(setting.value, str) and setting.value in PLACEMENT_POLICIES:
            return setting.value
        try:
            return check_cpu_list(setting.target, setting.value)
        except InvalidInputError:
            allowed = f"a CPU list such as 0 or 2-3, or one of {', '.join(PLACEMENT_POLICIES)}"
            raise invalid(setting.target, setting.value, allowed) from None

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Supported when ``taskset`` exists; limits list the online CPUs."""
        if host.run(["taskset", "-V"], check=False).returncode != 0:
            return ProbeResult(False, "taskset (util-linux) is not installed")
        online = host.read_file("/sys/devices/system/cpu/online").strip()
        return ProbeResult(True, "", {"online": online, "cpus": len(parse_cpu_list(online))})

    def snapshot(self, host: Host, device: str, settings: Sequence[Setting]) -> dict[str, Any]:
        """Nothing to record."""
        for s in settings:
            self.normalize(s)
        return {}

    def apply(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Nothing to write; the iperf3 runner pins its processes."""
        for s in settings:
            self.normalize(s)

    def verify(self, host: Host, device: str, settings: Sequence[Setting]) -> None:
        """Every CPU named is online."""
        values = [self.normalize(s) for s in settings]
        online = set(parse_cpu_list(host.read_file("/sys/devices/system/cpu/online")))
        for value in values:
            if value in PLACEMENT_POLICIES:
                continue
            missing = set(parse_cpu_list(value)) - online
            if missing:
                raise MeasurementError(f"{host.name}: CPUs {sorted(missing)} are not online")

    def restore(self, host: Host, device: str, snapshot: Mapping[str, Any]) -> None:
        """Nothing to put back."""
