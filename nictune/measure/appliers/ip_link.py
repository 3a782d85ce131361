"""Link attributes set with ``ip link set dev DEV mtu N`` / ``txqueuelen N``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nictune.errors import HostCommandError, MeasurementError
from nictune.measure.appliers._base import KeyValueApplier, ProbeResult
from nictune.measure.hosts import Host
from nictune.measure.validation import check_device, check_int, check_int_text, check_token
from nictune.search_spaces import Family, Setting

#: target -> (key in ``ip -j link`` output, smallest, largest value accepted here)
_TARGETS: dict[str, tuple[str, int, int]] = {
    "mtu": ("mtu", 68, 65535),
    "txqueuelen": ("txqlen", 0, 1_000_000),
}


def link_info(host: Host, device: str) -> dict[str, Any]:
    """``ip -j -d link show dev DEV`` as a dict."""
    out = host.run(["ip", "-j", "-d", "link", "show", "dev", check_device(device)]).stdout
    try:
        data = json.loads(out)
        info = data[0]
    except (ValueError, IndexError, KeyError) as exc:
        raise MeasurementError(f"{host.name}: unexpected 'ip -j link' output for {device}") from exc
    if not isinstance(info, dict):
        raise MeasurementError(f"{host.name}: unexpected 'ip -j link' output for {device}")
    return info


class IpLinkApplier(KeyValueApplier):
    """``mtu`` and ``txqueuelen`` of an interface."""

    family = Family.IP_LINK

    def normalize(self, setting: Setting) -> Any:
        """Targets ``mtu`` (68-65535) and ``txqueuelen`` (0-1000000), integer values."""
        target = check_token("ip_link target", setting.target, _TARGETS)
        _, lo, hi = _TARGETS[target]
        return check_int(target, setting.value, lo, hi)

    def read(self, host: Host, device: str, targets: Sequence[str]) -> dict[str, str]:
        """Values from ``ip -j link show``."""
        info = link_info(host, device)
        return {t: str(info.get(_TARGETS[t][0], "")) for t in targets}

    def write(self, host: Host, device: str, values: Mapping[str, str]) -> None:
        """One ``ip link set`` with every changed attribute."""
        argv = ["ip", "link", "set", "dev", check_device(device)]
        for target, value in values.items():
            check_token("ip_link target", target, _TARGETS)
            argv += [target, str(check_int_text(target, value, *_TARGETS[target][1:]))]
        host.run(argv)

    def probe(self, host: Host, device: str) -> ProbeResult:
        """Supported when the device exists; limits are its min/max MTU."""
        try:
            info = link_info(host, device)
        except HostCommandError as exc:
            return ProbeResult(False, f"device {device} not found: {exc}")
        limits = {
            "min_mtu": info.get("min_mtu", 68),
            "max_mtu": info.get("max_mtu", 65535),
            "mtu": info.get("mtu"),
            "txqueuelen": info.get("txqlen"),
        }
        return ProbeResult(True, "", limits)
