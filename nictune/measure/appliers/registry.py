"""Which applier writes each :class:`~nictune.search_spaces.Family` on a real host."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nictune.errors import InvalidInputError
from nictune.measure.appliers._base import Applier
from nictune.measure.appliers.ethtool import (
    EthtoolChannelsApplier,
    EthtoolCoalesceApplier,
    EthtoolFeaturesApplier,
    EthtoolPauseApplier,
    EthtoolRingsApplier,
)
from nictune.measure.appliers.files import CpuGovernorApplier, IrqAffinityApplier, SysfsApplier
from nictune.measure.appliers.ip_link import IpLinkApplier
from nictune.measure.appliers.qdisc import PlacementApplier, QdiscApplier
from nictune.measure.appliers.sysctl import SysctlApplier
from nictune.measure.validation import check_device
from nictune.search_spaces import Family, Knob, SearchSpace, Setting, Value, load_space, space_from_dict
from nictune.search_spaces.knobs import FloatKnob, IntKnob

#: Family -> the applier for it. Families missing here (module parameters, PF_RING, the
#: simulator's platform properties) cannot be set on a running host by nictune.
APPLIERS: dict[Family, Applier] = {
    a.family: a
    for a in (
        SysctlApplier(),
        IpLinkApplier(),
        EthtoolFeaturesApplier(),
        EthtoolRingsApplier(),
        EthtoolCoalesceApplier(),
        EthtoolPauseApplier(),
        EthtoolChannelsApplier(),
        SysfsApplier(),
        IrqAffinityApplier(),
        CpuGovernorApplier(),
        QdiscApplier(),
        PlacementApplier(),
    )
}

#: Why the families without an applier are not supported.
UNSUPPORTED: dict[Family, str] = {
    Family.MODULE_PARAM: "module parameters need a driver reload; nictune does not change them",
    Family.PF_RING: "PF_RING is not part of the kernel; nictune has no applier for it",
    Family.PLATFORM: "a property of the machine (simulator only), not a setting",
}


def applier_for(family: Family) -> Applier:
    """The applier of ``family``.

    Raises:
        InvalidInputError: nictune cannot set this family on a real host.
    """
    try:
        return APPLIERS[Family(family)]
    except (KeyError, ValueError):
        why = UNSUPPORTED.get(family, "unknown family")
        raise InvalidInputError(
            f"settings of family {family!s} cannot be applied to a real host: {why}",
            field=str(family),
            allowed=", ".join(f.value for f in APPLIERS),
        ) from None


def validate_settings(settings: Iterable[Setting]) -> list[Setting]:
    """Check every setting's family, device, target and value; nothing touches a host.

    Raises:
        InvalidInputError: the first offending setting, naming its target and allowed form.
    """
    out = []
    for s in settings:
        applier = applier_for(s.family)
        if s.device is not None:
            check_device(s.device)
        applier.normalize(s)
        out.append(s)
    return out


def _values_to_check(knob: Knob) -> list[Value]:
    """The values whose settings show whether a host would take every value of ``knob``: each
    listed value of a choice or switch; of a range (an appliers' rule for a number is a range
    too), its bounds, its default and the values it maps to settings of their own."""
    if isinstance(knob, IntKnob | FloatKnob):
        return list(dict.fromkeys([knob.default, knob.decode(0.0), knob.decode(1.0), *knob.settings]))
    values = knob.values()
    if values is None:
        values = [knob.default, knob.decode(0.0), knob.decode(1.0)]
    return list(dict.fromkeys(values))


def check_space(space: SearchSpace) -> dict[str, str]:
    """Check every setting each knob of ``space`` stands for as a measurement would, before
    anything touches a host: its family, device, target and value (every listed value, or the
    bounds, the default and the mapped values of a range).

    Returns:
        the knobs only the simulator can set (their family has no applier), with why.

    Raises:
        InvalidInputError: the first knob value whose setting a real host would refuse,
            naming the knob, the value and the setting.
    """
    sim_only: dict[str, str] = {}
    for name, knob in space.knobs.items():
        for value in _values_to_check(knob):
            for setting in knob.to_settings(value):
                if setting.family in UNSUPPORTED:
                    sim_only.setdefault(name, UNSUPPORTED[setting.family])
                    continue
                try:
                    validate_settings([setting])
                except InvalidInputError as exc:
                    raise InvalidInputError(f"knob {name!r} = {value!r}: {exc}", field=f"knobs.{name}",
                                            allowed=exc.allowed) from None
    return sim_only


def load_checked_space(source: str | Mapping[str, Any]) -> tuple[SearchSpace, dict[str, str]]:
    """A space that passed every check there is, whatever testbed it is meant for: the one
    check ``nictune spaces validate``, a ``--space`` of the CLI and a service's submission share.

    The definition is checked (and capped, see :mod:`nictune.search_spaces.limits`) before any
    knob is built, then every setting each knob stands for against the appliers' rules
    (:func:`check_space`).

    Args:
        source: a built-in space's name, a space file's path, or a definition (plain data).

    Returns:
        the space, and the knobs only a simulated testbed can set (with why).

    Raises:
        SpaceDefinitionError: the definition is malformed or above a cap.
        InvalidInputError: a knob value a real host would refuse (field ``knobs.NAME``).
    """
    space = load_space(source) if isinstance(source, str) else space_from_dict(dict(source))
    return space, check_space(space)
