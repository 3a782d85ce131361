"""Reading search spaces from YAML (built-in package data or a user's file) and validating them.

Every error names the knob and the field at fault, e.g. ``knob 'poll_usecs': field 'when'
refers to unknown knob 'rx_mod'``.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from nictune.errors import ConfigurationError, SpaceDefinitionError, UnknownNameError
from nictune.search_spaces._base import Condition, Family, Knob, Setting, split_target
from nictune.search_spaces.constraints import Constraint
from nictune.search_spaces.knobs import KNOB_TYPES, BoolKnob, ChoiceKnob, FloatKnob, IntKnob
from nictune.search_spaces.space import SearchSpace

_NAME = re.compile(r"^[a-z][a-z0-9_.]{0,63}$")
_SPACE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_COMMON = {"type", "default", "unit", "description", "family", "target", "device", "when", "settings"}
_TYPE_FIELDS: dict[str, set[str]] = {
    "int": {"low", "high", "step", "power_of_two", "log"},
    "float": {"low", "high", "log"},
    "choice": {"choices"},
    "bool": set(),
}
_TOP = {"name", "description", "testbed", "knobs", "constraints", "limits", "profiles"}


def _fail(msg: str, field: str | None = None, allowed: str | None = None) -> SpaceDefinitionError:
    return SpaceDefinitionError(msg, field=field, allowed=allowed)


def builtin_names() -> list[str]:
    """Names of the spaces shipped with nictune."""
    folder = resources.files("nictune.search_spaces") / "builtin"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_space(name_or_path: str) -> SearchSpace:
    """A built-in space by name, or a space from a YAML/JSON file path.

    Raises:
        UnknownNameError: neither a built-in name nor an existing file.
        SpaceDefinitionError: the definition is malformed.
    """
    if name_or_path in builtin_names():
        text = (resources.files("nictune.search_spaces") / "builtin" / f"{name_or_path}.yaml").read_text()
        return space_from_yaml(text, source=f"built-in space {name_or_path!r}")
    path = Path(name_or_path)
    if path.is_file():
        return space_from_yaml(path.read_text(), source=str(path))
    raise UnknownNameError("space", name_or_path, builtin_names())


def space_from_yaml(text: str, source: str = "space") -> SearchSpace:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _fail(f"{source}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise _fail(f"{source}: expected a mapping with 'name' and 'knobs'")
    return space_from_dict(data)


def _settings(name: str, family: Family, raw: Any, device: str | None) -> dict[Any, list[Setting]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(f"knob {name!r}: field 'settings' must map each value to {{target: value}}",
                    field=name)
    out: dict[Any, list[Setting]] = {}
    for value, targets in raw.items():
        if not isinstance(targets, dict):
            raise _fail(f"knob {name!r}: settings for {value!r} must be a mapping target -> value",
                        field=name)
        items: list[Setting] = []
        for key, setting_value in targets.items():
            fam = family
            target = str(key)
            if ":" in target:
                fam_name, _, target = target.partition(":")
                try:
                    fam = Family(fam_name)
                except ValueError:
                    raise _fail(f"knob {name!r}: settings use unknown family {fam_name!r}",
                                field=name, allowed=", ".join(f.value for f in Family)) from None
            base, index = split_target(target)
            v = tuple(setting_value) if isinstance(setting_value, list) else setting_value
            items.append(Setting(fam, base, v, index, device))
        out[value] = items
    return out


def _knob(name: str, spec: Any) -> Knob:
    if not _NAME.match(str(name)):
        raise _fail(f"knob {name!r}: name must match {_NAME.pattern}", field=str(name))
    if not isinstance(spec, dict):
        raise _fail(f"knob {name!r}: definition must be a mapping", field=name)
    kind = spec.get("type")
    if kind not in KNOB_TYPES:
        raise _fail(f"knob {name!r}: field 'type' is {kind!r}", field=name,
                    allowed=", ".join(KNOB_TYPES))
    allowed_fields = _COMMON | _TYPE_FIELDS[kind]
    unknown = set(spec) - allowed_fields
    if unknown:
        raise _fail(f"knob {name!r}: unknown field {sorted(unknown)[0]!r}", field=name,
                    allowed=", ".join(sorted(allowed_fields)))
    if "default" not in spec:
        raise _fail(f"knob {name!r}: field 'default' is missing (the value an untuned host has)",
                    field=name)
    try:
        family = Family(spec.get("family", "sysctl"))
    except ValueError:
        raise _fail(f"knob {name!r}: field 'family' is {spec.get('family')!r}", field=name,
                    allowed=", ".join(f.value for f in Family)) from None
    device = spec.get("device")
    common: dict[str, Any] = {
        "name": name,
        "default": spec["default"],
        "unit": str(spec.get("unit", "")),
        "description": str(spec.get("description", "")).strip(),
        "family": family,
        "target": spec.get("target"),
        "device": device,
        "settings": _settings(name, family, spec.get("settings"), device),
    }
    knob: Knob
    if kind == "int":
        for f in ("low", "high"):
            if not isinstance(spec.get(f), int) or isinstance(spec.get(f), bool):
                raise _fail(f"knob {name!r}: field {f!r} must be an integer", field=name)
        step = spec.get("step", 1)
        if not isinstance(step, int) or step < 1:
            raise _fail(f"knob {name!r}: field 'step' must be a positive integer", field=name)
        if spec["low"] > spec["high"]:
            raise _fail(f"knob {name!r}: field 'low' ({spec['low']}) is above 'high' ({spec['high']})",
                        field=name)
        knob = IntKnob(**common, low=spec["low"], high=spec["high"], step=step,
                       power_of_two=bool(spec.get("power_of_two", False)), log=bool(spec.get("log", False)))
        if knob.power_of_two and knob.cardinality() == 0:
            raise _fail(f"knob {name!r}: no power of two between low and high", field=name)
    elif kind == "float":
        try:
            low, high = float(spec["low"]), float(spec["high"])
        except (KeyError, TypeError, ValueError):
            raise _fail(f"knob {name!r}: fields 'low' and 'high' must be numbers", field=name) from None
        if low > high:
            raise _fail(f"knob {name!r}: field 'low' is above 'high'", field=name)
        knob = FloatKnob(**common, low=low, high=high, log=bool(spec.get("log", False)))
    elif kind == "choice":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _fail(f"knob {name!r}: field 'choices' must be a non-empty list", field=name)
        if len(set(map(str, choices))) != len(choices):
            raise _fail(f"knob {name!r}: field 'choices' has duplicates", field=name)
        if any(isinstance(c, bool) or not isinstance(c, str | int) for c in choices):
            raise _fail(f"knob {name!r}: choices must be strings or integers", field=name)
        knob = ChoiceKnob(**common, choices=list(choices))
    else:
        knob = BoolKnob(**common)
    try:
        knob.default = knob.parse(spec["default"])
    except ConfigurationError as exc:
        raise _fail(f"knob {name!r}: field 'default': {exc}", field=name, allowed=knob.allowed()) from None
    if knob.settings:
        try:
            knob.settings = {knob.parse(v): s for v, s in knob.settings.items()}
        except ConfigurationError as exc:
            raise _fail(f"knob {name!r}: field 'settings': {exc}", field=name,
                        allowed=knob.allowed()) from None
    if knob.target is None and not knob.settings:
        raise _fail(f"knob {name!r}: needs a 'target' or 'settings' (what it changes on a host)",
                    field=name)
    return knob


def _condition(name: str, raw: Any, known: dict[str, Knob]) -> Condition:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise _fail(f"knob {name!r}: field 'when' must be one 'parent: value' or 'parent: [values]'",
                    field=name)
    (parent, vals), = raw.items()
    if parent not in known or parent == name:
        raise _fail(f"knob {name!r}: field 'when' refers to unknown knob {parent!r}", field=name,
                    allowed=", ".join(k for k in known if k != name))
    values = vals if isinstance(vals, list) else [vals]
    parsed = []
    for v in values:
        try:
            parsed.append(known[parent].parse(v))
        except ConfigurationError:
            raise _fail(f"knob {name!r}: field 'when' uses {v!r}, not a value of {parent!r}",
                        field=name, allowed=known[parent].allowed()) from None
    return Condition(parent, tuple(parsed))


def _parents_first(knobs: dict[str, Knob]) -> dict[str, Knob]:
    """Knobs reordered so that every parent comes before the knobs that depend on it."""
    ordered: dict[str, Knob] = {}

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in ordered:
            return
        if name in trail:
            raise _fail(f"knob {name!r}: field 'when' forms a cycle ({' -> '.join((*trail, name))})",
                        field=name)
        cond = knobs[name].condition
        if cond is not None:
            visit(cond.knob, (*trail, name))
        ordered[name] = knobs[name]

    for name in knobs:
        visit(name, ())
    return ordered


def space_from_dict(data: dict[str, Any]) -> SearchSpace:
    """Build and validate a space from its plain-data definition.

    Raises:
        SpaceDefinitionError: naming the knob and field at fault.
    """
    unknown = set(data) - _TOP
    if unknown:
        raise _fail(f"space: unknown field {sorted(unknown)[0]!r}", field=sorted(unknown)[0],
                    allowed=", ".join(sorted(_TOP)))
    name = data.get("name")
    if not isinstance(name, str) or not _SPACE_NAME.match(name):
        raise _fail(f"space: field 'name' must match {_SPACE_NAME.pattern}", field="name")
    raw_knobs = data.get("knobs")
    if not isinstance(raw_knobs, dict) or not raw_knobs:
        raise _fail(f"space {name!r}: field 'knobs' must be a non-empty mapping", field="knobs")
    built: dict[str, Knob] = {}
    for kname, spec in raw_knobs.items():
        built[str(kname)] = _knob(str(kname), spec)
    for kname, spec in raw_knobs.items():
        if isinstance(spec, dict) and "when" in spec:
            built[str(kname)].condition = _condition(str(kname), spec["when"], built)
    knobs = _parents_first(built)
    limits = data.get("limits") or {}
    if not isinstance(limits, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in limits.values()
    ):
        raise _fail(f"space {name!r}: field 'limits' must map names to numbers", field="limits")
    constraints = []
    for expr in data.get("constraints") or []:
        c = Constraint.parse(str(expr))
        missing = c.names - set(knobs) - set(limits)
        if missing:
            raise _fail(f"constraint {expr!r}: unknown name {sorted(missing)[0]!r}",
                        field="constraints", allowed=", ".join([*knobs, *limits]))
        constraints.append(c)
    profiles = data.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise _fail(f"space {name!r}: field 'profiles' must map profile names to knob values",
                    field="profiles")
    space = SearchSpace(
        name,
        list(knobs.values()),
        description=str(data.get("description", "")).strip(),
        testbed=data.get("testbed"),
        constraints=constraints,
        limits=limits,
        profiles={},
        definition=data,
    )
    try:
        space.default()
    except ConfigurationError as exc:
        raise _fail(f"space {name!r}: the knob defaults are not a valid configuration: {exc}",
                    field="default") from None
    for pname, pvalues in profiles.items():
        if not isinstance(pvalues, dict):
            raise _fail(f"profile {pname!r}: must map knob names to values", field=str(pname))
        try:
            parsed = {k: space.knob(k).parse(v) for k, v in pvalues.items()}
            space.profiles[str(pname)] = parsed
            space.configuration(base=str(pname))
        except (ConfigurationError, UnknownNameError) as exc:
            raise _fail(f"profile {pname!r}: {exc}", field=str(pname)) from None
    return space
