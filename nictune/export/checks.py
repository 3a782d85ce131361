"""Per-family rules: which targets each family may name and the form of its values.

:func:`checked` turns one setting value into the exact text an export writes, or raises
:class:`~nictune.errors.InvalidInputError` naming the knob; every format goes through it,
for the configuration's values and for the recorded values a rollback puts back.
"""

from __future__ import annotations

import functools
from typing import Any

from nictune.errors import InvalidInputError
from nictune.export import _safe
from nictune.export.source import Item
from nictune.measure.appliers.ethtool import COALESCE_INTS
from nictune.measure.appliers.registry import APPLIERS
from nictune.measure.validation import check_sysctl_key
from nictune.search_spaces import Family, Setting, builtin_names, load_space

#: ethtool targets -> the label ``ethtool -g/-l/-a`` prints for them.
RINGS = {"rx": "RX", "rx-mini": "RX Mini", "rx-jumbo": "RX Jumbo", "tx": "TX"}
CHANNELS = {"rx": "RX", "tx": "TX", "other": "Other", "combined": "Combined"}
PAUSE = {"autoneg": "Autonegotiate", "rx": "RX", "tx": "TX"}
COALESCE_SWITCHES = {"adaptive-rx": "Adaptive RX", "adaptive-tx": "Adaptive TX"}
#: Short feature names ``ethtool -K`` takes -> the long names ``ethtool -k`` prints.
FEATURES = {
    "rx": "rx-checksumming", "tx": "tx-checksumming", "sg": "scatter-gather",
    "tso": "tcp-segmentation-offload", "ufo": "udp-fragmentation-offload",
    "gso": "generic-segmentation-offload", "gro": "generic-receive-offload",
    "lro": "large-receive-offload", "rxvlan": "rx-vlan-offload", "txvlan": "tx-vlan-offload",
    "ntuple": "ntuple-filters", "rxhash": "receive-hashing",
}  # fmt: skip
IP_LINK = {"mtu": (68, 65535), "txqueuelen": (0, 1_000_000)}

#: Families that the script and the TuneD profile write; the others become comments.
DEVICE_FAMILIES = (
    Family.IP_LINK, Family.ETHTOOL_RINGS, Family.ETHTOOL_CHANNELS, Family.ETHTOOL_PAUSE,
    Family.ETHTOOL_COALESCE, Family.ETHTOOL_FEATURES, Family.SYSFS, Family.QDISC,
)  # fmt: skip

_ETHTOOL_INT_MAX = 1 << 24


def _what(item: Item) -> str:
    return f"knob {item.knob!r} ({item.family.value} {item.target})"


@functools.cache
def allowed_module_params() -> frozenset[str]:
    """``MODULE.PARAMETER`` of every driver option a built-in space names: the only ones an
    export writes (``[modules]`` of a TuneD profile is loaded as root by every host it goes to,
    and no applier checks a module option, so a client's space may not add one)."""
    found: set[str] = set()
    for name in builtin_names():
        for knob in load_space(name).knobs.values():
            settings = [*(s for group in knob.settings.values() for s in group),
                        *([Setting(knob.family, knob.target, knob.default)] if knob.target else [])]
            found.update(s.target for s in settings if s.family is Family.MODULE_PARAM)
    return frozenset(found)


def _applier_rules(item: Item) -> None:
    """The measurement's own check of the item's family, target and value (the appliers'
    allow-lists and value ranges): an export writes nothing a measurement would refuse.

    Raises:
        InvalidInputError: naming the knob, what it sets and what is allowed.
    """
    applier = APPLIERS.get(item.family)
    if applier is None:
        return
    try:
        applier.normalize(Setting(item.family, item.target, item.value, item.index, item.device))
    except InvalidInputError as exc:
        raise InvalidInputError(f"{_what(item)} cannot be exported: {exc}", field=_what(item),
                                allowed=exc.allowed) from None


def target(item: Item) -> str:
    """The item's target, checked for its family."""
    what = _what(item)
    fam = item.family
    if fam is Family.SYSCTL:
        key = _safe.matching(what, item.target, _safe.SYSCTL_KEY_RE, "a sysctl key such as net.core.rmem_max")
        try:
            return check_sysctl_key(key)  # the sysctl applier's allow-list
        except InvalidInputError as exc:
            raise InvalidInputError(f"{what} cannot be exported: {exc}", field=what, allowed=exc.allowed) from None
    if fam is Family.IP_LINK:
        return _safe.one_of(what, item.target, list(IP_LINK))
    if fam is Family.ETHTOOL_RINGS:
        return _safe.one_of(what, item.target, list(RINGS))
    if fam is Family.ETHTOOL_CHANNELS:
        return _safe.one_of(what, item.target, list(CHANNELS))
    if fam is Family.ETHTOOL_PAUSE:
        return _safe.one_of(what, item.target, list(PAUSE))
    if fam is Family.ETHTOOL_COALESCE:
        return _safe.one_of(what, item.target, [*COALESCE_SWITCHES, *COALESCE_INTS])
    if fam is Family.ETHTOOL_FEATURES:
        return _safe.matching(what, item.target, _safe.FEATURE_RE, "an ethtool feature name such as gro")
    if fam is Family.SYSFS:
        return _safe.matching(what, item.target, _safe.SYSFS_RE, "a path under /sys/class/net/DEV/")
    if fam is Family.CPU_GOVERNOR:
        return _safe.one_of(what, item.target, ["scaling_governor", "governor"])
    if fam is Family.QDISC:
        return _safe.one_of(what, item.target, ["root"])
    if fam is Family.MODULE_PARAM:
        module, _, param = item.target.partition(".")
        _safe.matching(what, module, _safe.MODULE_RE, "MODULE.PARAMETER")
        _safe.matching(what, param, _safe.MODULE_RE, "MODULE.PARAMETER")
        allowed = allowed_module_params()
        if item.target not in allowed:
            raise _safe.refuse(what, item.target, "a driver option of a built-in space: " + ", ".join(sorted(allowed)))
        return item.target
    return _safe.token(what, item.target)


_OWN: Any = object()


def checked(item: Item, value: Any = _OWN) -> str:
    """``value`` (the item's own value by default) as the text written for the item's family.

    Raises:
        InvalidInputError: the target or the value is not acceptable.
    """
    v = item.value if value is _OWN else value
    what = _what(item)
    tgt = target(item)
    if value is _OWN:
        _applier_rules(item)
    fam = item.family
    if fam is Family.SYSCTL:
        if isinstance(v, tuple | list):
            if not v or len(v) > 16:
                raise _safe.refuse(what, v, "1 to 16 integers")
            return " ".join(_safe.integer(what, x, -(2**63), 2**63 - 1) for x in v)
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, str) and " " in v.strip():  # a whole multi-field line read from a host
            return " ".join(_safe.integer(what, x, -(2**63), 2**63 - 1) for x in v.split())
        return _safe.token(what, v)
    if fam is Family.IP_LINK:
        lo, hi = IP_LINK[tgt]
        return _safe.integer(what, v, lo, hi)
    if fam in (Family.ETHTOOL_RINGS, Family.ETHTOOL_CHANNELS):
        return _safe.integer(what, v, 0, _ETHTOOL_INT_MAX)
    if fam in (Family.ETHTOOL_PAUSE, Family.ETHTOOL_FEATURES):
        return _safe.on_off(what, v)
    if fam is Family.ETHTOOL_COALESCE:
        if tgt in COALESCE_SWITCHES:
            return _safe.on_off(what, v)
        return _safe.integer(what, v, 0, _ETHTOOL_INT_MAX)
    if fam is Family.MODULE_PARAM:
        return "1" if v is True else "0" if v is False else _safe.integer(what, v, 0, 2**31 - 1)
    return _safe.token(what, v)


def device(item: Item) -> str | None:
    """The item's own device (checked), or ``None`` for the data interface."""
    if item.device is None:
        return None
    return _safe.device(f"knob {item.knob!r} device", item.device)


__all__ = [
    "CHANNELS",
    "COALESCE_INTS",
    "COALESCE_SWITCHES",
    "DEVICE_FAMILIES",
    "FEATURES",
    "IP_LINK",
    "PAUSE",
    "RINGS",
    "allowed_module_params",
    "checked",
    "device",
    "target",
]
