"""Which knob targets a testbed's hosts support (for ``nictune spaces probe``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from nictune.errors import NictuneError
from nictune.measure.appliers import applier_for
from nictune.measure.benchmarks.benchmark import Endpoints
from nictune.measure.hosts import Host
from nictune.search_spaces import Family, Setting, split_target


class ProbeRow(NamedTuple):
    """One target's answer: supported on every host, why not, and each host's limits."""

    target: str
    supported: bool
    reason: str
    limits: dict[str, Any]
    family: str = ""


def _sides(
    testbed_hosts: Endpoints | Mapping[str, tuple[Host, str]],
) -> dict[str, tuple[Host, str]]:
    if isinstance(testbed_hosts, Endpoints):
        return {
            "sender": (testbed_hosts.sender, testbed_hosts.sender_device),
            "receiver": (testbed_hosts.receiver, testbed_hosts.receiver_device),
        }
    return dict(testbed_hosts)


def probe_settings(
    testbed_hosts: Endpoints | Mapping[str, tuple[Host, str]],
    knob_targets: Iterable[tuple[Family | str, str] | Setting],
) -> list[ProbeRow]:
    """Probe each ``(family, target)`` on every host; nothing is changed on the hosts.

    Args:
        testbed_hosts: the testbed's endpoints, or ``{side: (host, device)}``.
        knob_targets: ``(family, target)`` pairs (``"net.ipv4.tcp_rmem[2]"`` allowed) or
            settings.

    Returns:
        One :class:`ProbeRow` per target, in order; ``limits`` is keyed by side.
    """
    sides = _sides(testbed_hosts)
    rows = []
    for item in knob_targets:
        if isinstance(item, Setting):
            family, target = item.family, item.target
        else:
            family, target = Family(item[0]), split_target(item[1])[0]
        try:
            applier = applier_for(family)
        except NictuneError as exc:
            rows.append(ProbeRow(target, False, str(exc), {}, family.value))
            continue
        supported, reasons, limits = True, [], {}
        for side, (host, device) in sides.items():
            try:
                res = applier.probe_target(host, device, target)
            except NictuneError as exc:
                supported = False
                reasons.append(f"{side}: {exc}")
                continue
            supported = supported and res.supported
            if res.reason:
                reasons.append(f"{side}: {res.reason}")
            limits[side] = res.limits
        rows.append(ProbeRow(target, supported, "; ".join(reasons), limits, family.value))
    return rows
