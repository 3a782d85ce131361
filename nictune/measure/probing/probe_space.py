"""Fit a search space to a real testbed: drop what its hosts cannot do, start from what they have.

``nictune spaces probe --testbed T`` runs :func:`probe_space`: every knob's settings are
probed on both hosts (nothing is changed); a knob that a host does not support leaves the
space with the reason; each remaining knob's default becomes the receiver's current value,
so the space's default configuration is this untuned host.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from nictune.errors import NictuneError
from nictune.measure.appliers import applier_for
from nictune.measure.benchmarks.benchmark import Endpoints
from nictune.measure.probing.probe import probe_settings
from nictune.search_spaces import Knob, SearchSpace, Setting, Value
from nictune.search_spaces.profiles import profile_definition


@dataclass
class KnobProbe:
    """What the probe found for one knob."""

    knob: str
    supported: bool
    reason: str
    current: Value | None = None


def _matches(setting: Setting, snapshot: dict[str, Any]) -> bool:
    raw = snapshot.get(setting.target)
    if raw is None:
        return False
    text = str(raw)
    if setting.index is not None:
        fields = text.split()
        if setting.index >= len(fields):
            return False
        text = fields[setting.index]
    want = setting.value
    if isinstance(want, bool):
        return text.lower() in (("on", "1", "true") if want else ("off", "0", "false"))
    if isinstance(want, tuple):
        return text.split() == [str(v) for v in want]
    return text == str(want)


def _current_value(knob: Knob, ends: Endpoints) -> Value | None:
    """The knob value whose settings the receiver has now, if one can be told."""
    host, device = ends.receiver, ends.receiver_device
    probe_settings_for = knob.to_settings(knob.default)
    if not probe_settings_for:
        return None
    snapshot: dict[str, Any] = {}
    try:
        for s in probe_settings_for:
            snapshot.update(applier_for(s.family).snapshot(host, device, [s]))
    except NictuneError:
        return None
    candidates = knob.values()
    if candidates is not None:
        for value in candidates:
            if all(_matches(s, snapshot) for s in knob.to_settings(value)):
                return value
    # An integer knob (or a choice list without the host's value): read the one setting.
    if len(probe_settings_for) == 1:
        s = probe_settings_for[0]
        raw = str(snapshot.get(s.target, ""))
        if s.index is not None:
            parts = raw.split()
            raw = parts[s.index] if s.index < len(parts) else ""
        try:
            return knob.parse(raw)
        except NictuneError:
            if knob.kind == "choice":
                return _outside_choices(s, raw)
    return None


def _outside_choices(setting: Setting, raw: str) -> Value | None:
    """A value the host has that the knob's choices lack (a veth pair's ``noqueue`` qdisc
    against ``fq_codel, fq, pfifo_fast``), if its applier would write it: the fitted space
    adds it, so that its default configuration is the host as it is."""
    value: Value = int(raw) if raw.lstrip("-").isdigit() else raw
    if value == "":
        return None
    try:
        applier_for(setting.family).normalize(dataclasses.replace(setting, value=value))
    except NictuneError:
        return None
    return value


def probe_knobs(space: SearchSpace, ends: Endpoints, *, read_current: bool = True) -> list[KnobProbe]:
    """Whether the hosts of ``ends`` support each knob of ``space`` (every setting of every
    value, on both hosts), and with ``read_current`` the receiver's current value of each
    supported one. Nothing is changed on the hosts. A knob whose condition names a knob
    left out is left out too."""
    results: list[KnobProbe] = []
    dropped: set[str] = set()
    for knob in space.knobs.values():
        if knob.condition and knob.condition.knob in dropped:
            dropped.add(knob.name)
            results.append(KnobProbe(knob.name, False, f"depends on {knob.condition.knob}, which was left out"))
            continue
        settings = [s for v in (knob.values() or [knob.default]) for s in knob.to_settings(v)]
        unique = list({(s.family, s.target): s for s in settings}.values())
        bad = [r for r in probe_settings(ends, unique) if not r.supported]
        if bad:
            dropped.add(knob.name)
            results.append(KnobProbe(knob.name, False, "; ".join(f"{r.target}: {r.reason}" for r in bad)))
            continue
        results.append(KnobProbe(knob.name, True, "", _current_value(knob, ends) if read_current else None))
    return results


def unsupported_knobs(space: SearchSpace, ends: Endpoints) -> dict[str, str]:
    """The knobs of ``space`` the hosts of ``ends`` cannot set, each with the reason
    (:func:`probe_knobs`; nothing is changed)."""
    return {r.knob: r.reason for r in probe_knobs(space, ends, read_current=False) if not r.supported}


def _fitted_profile(space: SearchSpace, name: str, dropped: set[str]) -> dict[str, Any]:
    """Profile ``name`` without the knobs the hosts cannot set; a profile with provenance
    lists them with what it cannot express."""
    values = space.profiles[name]
    info = space.profile_info.get(name)
    if info is not None:
        lost = tuple(f"{k} {values[k]} (knob left out: the hosts cannot set it)" for k in values if k in dropped)
        info = dataclasses.replace(info, not_expressed=info.not_expressed + lost)
    return profile_definition({k: v for k, v in values.items() if k not in dropped}, info)


def probe_space(space: SearchSpace, ends: Endpoints) -> tuple[dict[str, Any], list[KnobProbe]]:
    """A copy of ``space``'s definition fitted to the hosts of ``ends``, and what was found."""
    results = probe_knobs(space, ends)
    definition = copy.deepcopy(space.definition)
    knobs_def: dict[str, Any] = definition["knobs"]
    dropped = {r.knob for r in results if not r.supported}
    for r in results:
        if r.supported and r.current is not None:
            knob, spec = space.knobs[r.knob], knobs_def[r.knob]
            if knob.kind == "choice" and r.current not in spec["choices"]:
                spec["choices"] = sorted([*spec["choices"], r.current], key=lambda v: (str(type(v)), v))
            spec["default"] = r.current
    for name in dropped:
        knobs_def.pop(name, None)
    definition["constraints"] = [c.expression for c in space.constraints if not (c.names & dropped)]
    definition["profiles"] = {p: _fitted_profile(space, p, dropped) for p in space.profiles}
    definition["name"] = f"{space.name}-probed"
    return definition, results
