"""Reading search spaces from YAML (built-in package data or a user's file) and validating them.

Every error names the knob and the field at fault, e.g. ``knob 'poll_usecs': field 'when'
refers to unknown knob 'rx_mod'``.
"""

from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path
from typing import Any

from nictune.errors import ConfigurationError, InvalidInputError, SpaceDefinitionError, UnknownNameError
from nictune.search_spaces._base import BOTTLENECKS, DIRECTIONS, Condition, Family, Knob, Relief, Setting, split_target
from nictune.search_spaces.constraints import Constraint
from nictune.search_spaces.knobs import KNOB_TYPES, BoolKnob, ChoiceKnob, FloatKnob, IntKnob
from nictune.search_spaces.limits import (
    MAX_CHOICES,
    MAX_CONSTRAINT_CHARS,
    MAX_CONSTRAINTS,
    MAX_KNOBS,
    MAX_MAGNITUDE,
    MAX_PROFILES,
    MAX_SETTINGS_PER_VALUE,
)
from nictune.search_spaces.profiles import ProfileInfo, is_long_form, parse_profile
from nictune.search_spaces.space import SearchSpace
from nictune.yamlfile import not_a_mapping, parse_yaml

_NAME = re.compile(r"^[a-z][a-z0-9_.]{0,63}$")
_SPACE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_COMMON = {"type", "default", "unit", "description", "family", "target", "device", "when", "settings", "relieves"}
_TYPE_FIELDS: dict[str, set[str]] = {
    "int": {"low", "high", "step", "power_of_two", "log"},
    "float": {"low", "high", "log"},
    "choice": {"choices"},
    "bool": set(),
}
_TOP = {"name", "description", "testbed", "knobs", "constraints", "limits", "profiles"}
_TARGET_INDEX = re.compile(r"\[([0-9]+)\]$")
#: The profile every space has without defining it: the knob defaults.
_RESERVED_PROFILES = {"default"}


def _fail(msg: str, field: str | None = None, allowed: str | None = None) -> SpaceDefinitionError:
    """A definition error. The allowed values go into the message too: the CLI prints only it."""
    if allowed and "allowed:" not in msg:
        msg = f"{msg}; allowed: {allowed}"
    return SpaceDefinitionError(msg, field=field, allowed=allowed)


def _shown(raw: Any, limit: int = 60) -> str:
    """``repr(raw)`` cut to ``limit`` characters, for messages."""
    text = repr(raw)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reason(exc: Exception, name: str) -> str:
    """The text of a knob's own error without its leading ``knob 'NAME': `` (said once by the caller)."""
    text = str(exc)
    prefix = f"knob {name!r}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def _target(name: str, raw: Any, what: str) -> str:
    """A setting target: a non-empty string, optionally ending in ``[index]``."""
    if not isinstance(raw, str) or not raw.strip():
        raise _fail(f"knob {name!r}: {what} must be a non-empty string, not {_shown(raw)}", field=name,
                    allowed="a target such as net.core.rmem_max or net.ipv4.tcp_rmem[2]")
    if "[" in raw or "]" in raw:
        base, _, _ = raw.partition("[")
        if not base or not _TARGET_INDEX.search(raw) or raw.count("[") != 1:
            raise _fail(f"knob {name!r}: {what} {raw!r} has a bad field index", field=name,
                        allowed="a target optionally ending in [N] with N a whole number, e.g. "
                        "net.ipv4.tcp_rmem[2]")
    return raw


def _finite(raw: Any) -> float | None:
    """``raw`` as a float when it is a finite number (not a bool), else ``None``."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    try:
        value = float(raw)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _within_magnitude(name: str, field: str, value: float) -> None:
    """Refuse a bound whose magnitude is above :data:`MAX_MAGNITUDE`."""
    if abs(value) > MAX_MAGNITUDE:
        raise _fail(f"knob {name!r}: field {field!r} ({_shown(value, 30)}) is beyond the largest magnitude "
                    f"a knob may have, 2**53 = {MAX_MAGNITUDE}", field=name,
                    allowed=f"-{MAX_MAGNITUDE} <= {field} <= {MAX_MAGNITUDE}")


def _flag(name: str, spec: dict[str, Any], key: str) -> bool:
    """A boolean field of a knob (``power_of_two``, ``log``): true or false, nothing else."""
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise _fail(f"knob {name!r}: field {key!r} must be true or false, not {_shown(value)}",
                    field=name, allowed="true, false")
    return value


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
    if path.is_dir():
        raise _fail(f"{path} is a directory, not a space file", field="space",
                    allowed=f"a built-in space ({', '.join(builtin_names())}) or a YAML or JSON file")
    if path.is_file():
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise _fail(f"{path}: cannot read ({exc.strerror or exc})", field="file",
                        allowed="a readable YAML or JSON file") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(f"{path}: not a UTF-8 text file", field="file",
                        allowed="a YAML or JSON text file in UTF-8") from None
        return space_from_yaml(text, source=str(path))
    raise UnknownNameError("space", name_or_path, builtin_names())


def space_from_yaml(text: str, source: str = "space") -> SearchSpace:
    try:
        data = parse_yaml(text, source)
    except InvalidInputError as exc:
        raise _fail(str(exc), field=exc.field, allowed=exc.allowed) from None
    if not isinstance(data, dict):
        bad = not_a_mapping(source, data, "a mapping with 'name' and 'knobs'")
        raise _fail(str(bad), field=bad.field)
    return space_from_dict(data)


def _settings(name: str, family: Family, raw: Any, device: str | None) -> dict[Any, list[Setting]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(f"knob {name!r}: field 'settings' must map each value to {{target: value}}",
                    field=name)
    if len(raw) > MAX_CHOICES:
        raise _fail(f"knob {name!r}: field 'settings' maps {len(raw)} values; at most {MAX_CHOICES}",
                    field=name, allowed=f"at most {MAX_CHOICES} values")
    out: dict[Any, list[Setting]] = {}
    for value, targets in raw.items():
        if not isinstance(targets, dict):
            raise _fail(f"knob {name!r}: settings for {value!r} must be a mapping target -> value",
                        field=name)
        if len(targets) > MAX_SETTINGS_PER_VALUE:
            raise _fail(f"knob {name!r}: settings for {_shown(value)} name {len(targets)} targets; "
                        f"at most {MAX_SETTINGS_PER_VALUE}", field=name,
                        allowed=f"at most {MAX_SETTINGS_PER_VALUE} targets a value")
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
            base, index = split_target(_target(name, target, f"settings for {value!r}: target"))
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
    if not isinstance(kind, str) or kind not in KNOB_TYPES:
        problem = "is missing" if kind is None else f"is {_shown(kind)}"
        raise _fail(f"knob {name!r}: field 'type' {problem}", field=name,
                    allowed=", ".join(KNOB_TYPES))
    allowed_fields = _COMMON | _TYPE_FIELDS[kind]
    unknown = set(spec) - allowed_fields
    if unknown:
        raise _fail(f"knob {name!r}: unknown field {sorted(map(str, unknown))[0]!r}", field=name,
                    allowed=", ".join(sorted(allowed_fields)))
    if "default" not in spec:
        raise _fail(f"knob {name!r}: field 'default' is missing (the value an untuned host has)",
                    field=name)
    raw_family = spec.get("family", "sysctl")
    try:
        if not isinstance(raw_family, str):
            raise ValueError(raw_family)
        family = Family(raw_family)
    except ValueError:
        raise _fail(f"knob {name!r}: field 'family' is {_shown(raw_family)}", field=name,
                    allowed=", ".join(f.value for f in Family)) from None
    device = spec.get("device")
    if device is not None and (not isinstance(device, str) or not device.strip()):
        raise _fail(f"knob {name!r}: field 'device' must be an interface name, not {_shown(device)}",
                    field=name, allowed="an interface name such as eth0, or leave it out")
    target = spec.get("target")
    if target is not None:
        target = _target(name, target, "field 'target'")
    common: dict[str, Any] = {
        "name": name,
        "default": spec["default"],
        "unit": str(spec.get("unit", "")),
        "description": str(spec.get("description", "")).strip(),
        "family": family,
        "target": target,
        "device": device,
        "settings": _settings(name, family, spec.get("settings"), device),
    }
    knob: Knob
    if kind == "int":
        for f in ("low", "high"):
            if not isinstance(spec.get(f), int) or isinstance(spec.get(f), bool):
                raise _fail(f"knob {name!r}: field {f!r} must be an integer", field=name)
            _within_magnitude(name, f, spec[f])
        step = spec.get("step", 1)
        if not isinstance(step, int) or isinstance(step, bool) or step < 1 or step > MAX_MAGNITUDE:
            raise _fail(f"knob {name!r}: field 'step' must be a positive integer", field=name,
                        allowed=f"an integer from 1 to {MAX_MAGNITUDE} (2**53)")
        if spec["low"] > spec["high"]:
            raise _fail(f"knob {name!r}: field 'low' ({spec['low']}) is above 'high' ({spec['high']})",
                        field=name)
        knob = IntKnob(**common, low=spec["low"], high=spec["high"], step=step,
                       power_of_two=_flag(name, spec, "power_of_two"), log=_flag(name, spec, "log"))
        if knob.power_of_two and knob.cardinality() == 0:
            raise _fail(f"knob {name!r}: no power of two between low and high", field=name)
    elif kind == "float":
        low, high = _finite(spec.get("low")), _finite(spec.get("high"))
        if low is None or high is None:
            raise _fail(f"knob {name!r}: fields 'low' and 'high' must be finite numbers", field=name)
        _within_magnitude(name, "low", low)
        _within_magnitude(name, "high", high)
        if low > high:
            raise _fail(f"knob {name!r}: field 'low' is above 'high'", field=name)
        knob = FloatKnob(**common, low=low, high=high, log=_flag(name, spec, "log"))
    elif kind == "choice":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _fail(f"knob {name!r}: field 'choices' must be a non-empty list", field=name)
        if len(choices) > MAX_CHOICES:
            raise _fail(f"knob {name!r}: field 'choices' lists {len(choices)} values; a knob may have at most "
                        f"{MAX_CHOICES}", field=name, allowed=f"at most {MAX_CHOICES} choices")
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
        raise _fail(f"knob {name!r}: field 'default': {_reason(exc, name)}", field=name,
                    allowed=knob.allowed()) from None
    if knob.settings:
        try:
            knob.settings = {knob.parse(v): s for v, s in knob.settings.items()}
        except ConfigurationError as exc:
            raise _fail(f"knob {name!r}: field 'settings': {_reason(exc, name)}", field=name,
                        allowed=knob.allowed()) from None
    if knob.target is None and not knob.settings:
        raise _fail(f"knob {name!r}: needs a 'target' or 'settings' (what it changes on a host)",
                    field=name)
    knob.relieves = _relieves(knob, spec.get("relieves"))
    return knob


def _relieves(knob: Knob, raw: Any) -> tuple[Relief, ...]:
    """The ``relieves`` field: ``{metric: value}``, or ``{metric: up|down}`` for an ordered knob."""
    if raw is None:
        return ()
    name = knob.name
    metrics = ", ".join(BOTTLENECKS)
    if not isinstance(raw, dict) or not raw:
        raise _fail(f"knob {name!r}: field 'relieves' must map bottleneck counters to a value or direction, "
                    f"not {_shown(raw)}", field=name, allowed=f"a mapping such as {{ring_drops: up}} of {metrics}")
    out = []
    for metric, how in raw.items():
        if metric not in BOTTLENECKS:
            raise _fail(f"knob {name!r}: field 'relieves' names unknown counter {_shown(metric)}", field=name,
                        allowed=metrics)
        if knob.ordered and how in DIRECTIONS:
            out.append(Relief(str(metric), direction=str(how)))
            continue
        try:
            out.append(Relief(str(metric), value=knob.parse(how)))
        except ConfigurationError:
            allowed = ("up, down or " if knob.ordered else "") + knob.allowed()
            raise _fail(f"knob {name!r}: field 'relieves': {metric}: {_shown(how)} is no value of the knob"
                        + (" nor a direction" if knob.ordered else ""), field=name, allowed=allowed) from None
    return tuple(out)


def _condition(name: str, raw: Any, known: dict[str, Knob]) -> Condition:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise _fail(f"knob {name!r}: field 'when' must be one 'parent: value' or 'parent: [values]'",
                    field=name)
    (parent, vals), = raw.items()
    others = ", ".join(k for k in known if k != name)
    if parent == name:
        raise _fail(f"knob {name!r}: field 'when' refers to the knob itself; a knob cannot depend "
                    "on itself", field=name, allowed="another knob of the space")
    if parent not in known:
        raise _fail(f"knob {name!r}: field 'when' refers to unknown knob {_shown(parent)}", field=name,
                    allowed=others)
    values = vals if isinstance(vals, list) else [vals]
    if len(values) > MAX_CHOICES:
        raise _fail(f"knob {name!r}: field 'when' lists {len(values)} values of {parent!r}; at most {MAX_CHOICES}",
                    field=name, allowed=f"at most {MAX_CHOICES} values")
    if not values:
        raise _fail(f"knob {name!r}: field 'when' {parent}: no values given (the knob could never "
                    "be active)", field=name, allowed=known[parent].allowed())
    parsed = []
    for v in values:
        try:
            parsed.append(known[parent].parse(v))
        except ConfigurationError:
            raise _fail(f"knob {name!r}: field 'when' uses {_shown(v)}, not a value of {parent!r}",
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
    if not isinstance(data, dict):
        raise _fail("space: expected a mapping with 'name' and 'knobs'", field="space",
                    allowed="a mapping with 'name', 'knobs' and optionally "
                    + ", ".join(sorted(_TOP - {"name", "knobs"})))
    unknown = set(data) - _TOP
    if unknown:
        raise _fail(f"space: unknown field {sorted(map(str, unknown))[0]!r}", field=sorted(map(str, unknown))[0],
                    allowed=", ".join(sorted(_TOP)))
    name = data.get("name")
    if not isinstance(name, str) or not _SPACE_NAME.match(name):
        raise _fail(f"space: field 'name' must match {_SPACE_NAME.pattern}", field="name")
    raw_knobs = data.get("knobs")
    if not isinstance(raw_knobs, dict) or not raw_knobs:
        raise _fail(f"space {name!r}: field 'knobs' must be a non-empty mapping", field="knobs")
    # Caps first, on the plain data: nothing is built for a definition that is too large.
    if len(raw_knobs) > MAX_KNOBS:
        raise _fail(f"space {name!r}: field 'knobs' has {len(raw_knobs)} knobs; a space may have at most "
                    f"{MAX_KNOBS}", field="knobs", allowed=f"at most {MAX_KNOBS} knobs")
    raw_constraints = data.get("constraints")
    if isinstance(raw_constraints, list) and len(raw_constraints) > MAX_CONSTRAINTS:
        raise _fail(f"space {name!r}: field 'constraints' has {len(raw_constraints)} items; a space may have at "
                    f"most {MAX_CONSTRAINTS}", field="constraints", allowed=f"at most {MAX_CONSTRAINTS} constraints")
    raw_profiles = data.get("profiles")
    if isinstance(raw_profiles, dict) and len(raw_profiles) > MAX_PROFILES:
        raise _fail(f"space {name!r}: field 'profiles' has {len(raw_profiles)} profiles; a space may have at most "
                    f"{MAX_PROFILES}", field="profiles", allowed=f"at most {MAX_PROFILES} profiles")
    built: dict[str, Knob] = {}
    for kname, spec in raw_knobs.items():
        built[str(kname)] = _knob(str(kname), spec)
    for kname, spec in raw_knobs.items():
        if isinstance(spec, dict) and "when" in spec:
            built[str(kname)].condition = _condition(str(kname), spec["when"], built)
    knobs = _parents_first(built)
    limits = data.get("limits") or {}
    if not isinstance(limits, dict) or any(_finite(v) is None for v in limits.values()):
        raise _fail(f"space {name!r}: field 'limits' must map names to numbers", field="limits",
                    allowed="a mapping of names to finite numbers, e.g. {ring_max: 8192}")
    testbed = data.get("testbed")
    if testbed is not None and not isinstance(testbed, str):
        raise _fail(f"space {name!r}: field 'testbed' must be a testbed name, not {_shown(testbed)}",
                    field="testbed", allowed="a testbed such as veth or sim:benson-40g, or leave it out")
    raw_constraints = data.get("constraints")
    if raw_constraints is None:
        raw_constraints = []
    example = "a list of strings such as 'rx_ring <= ring_max' (one '- a <= b' per line)"
    if not isinstance(raw_constraints, list):
        raise _fail(f"space {name!r}: field 'constraints' must be a list of comparisons (strings), "
                    f"not {_shown(raw_constraints)}", field="constraints", allowed=example)
    constraints = []
    for expr in raw_constraints:
        if not isinstance(expr, str):
            raise _fail(f"space {name!r}: field 'constraints': item {_shown(expr)} is not a comparison "
                        "(a string)", field="constraints", allowed=example)
        if len(expr) > MAX_CONSTRAINT_CHARS:
            raise _fail(f"space {name!r}: field 'constraints': {_shown(expr, 40)} is {len(expr)} characters long; "
                        f"at most {MAX_CONSTRAINT_CHARS}", field="constraints",
                        allowed=f"a comparison of at most {MAX_CONSTRAINT_CHARS} characters")
        c = Constraint.parse(expr)
        missing = c.names - set(knobs) - set(limits)
        if missing:
            raise _fail(f"constraint {expr!r}: unknown name {sorted(missing)[0]!r}",
                        field="constraints", allowed=", ".join([*knobs, *limits]))
        constraints.append(c)
    profiles = data.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise _fail(f"space {name!r}: field 'profiles' must map profile names to knob values",
                    field="profiles")
    for pname in profiles:
        if str(pname) in _RESERVED_PROFILES:
            raise _fail(f"profile {str(pname)!r}: the name is reserved (it is the knob defaults); "
                        "give the profile another name", field=str(pname),
                        allowed="any profile name except 'default'")
    space = SearchSpace(
        name,
        list(knobs.values()),
        description=str(data.get("description", "")).strip(),
        testbed=testbed,
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
            raise _fail(f"profile {pname!r}: must map knob names to values", field=str(pname),
                        allowed="knob: value pairs, or the long form with 'values' (and 'stock', "
                        "'description', 'source', 'not_expressed', 'notes')")
        info: ProfileInfo | None = None
        if is_long_form(pvalues, space.knobs):
            pvalues, info = parse_profile(str(pname), pvalues)
            space.profile_info[str(pname)] = info
        try:
            parsed = {k: space.knob(k).parse(v) for k, v in pvalues.items()}
            space.profiles[str(pname)] = parsed
            space.configuration(base=str(pname))
        except (ConfigurationError, UnknownNameError) as exc:
            raise _fail(f"profile {pname!r}: {exc}", field=str(pname)) from None
    return space
