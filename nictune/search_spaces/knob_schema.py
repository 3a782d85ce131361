"""The models of a knob in a space file: one a type (``int``, ``float``, ``choice``, ``bool``),
told apart by the knob's ``type``.

A knob model checks its own fields (types, bounds, targets, settings, caps) and then its
values against the knob it stands for: the default, the values ``settings`` and ``relieves``
name (by the knob's own ``parse``, the rule a configuration's values meet too). What refers to
other knobs (``when``) is the space's to check (:mod:`nictune.search_spaces.schema`).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, PlainValidator, PrivateAttr, model_validator
from pydantic_core import PydanticCustomError

from nictune.errors import InvalidInputError
from nictune.locations import Checked, problem, raise_all, shown
from nictune.search_spaces._base import BOTTLENECKS, DIRECTIONS, Family, Knob, Relief, Setting, Value, split_target
from nictune.search_spaces.knobs import BoolKnob, ChoiceKnob, FloatKnob, IntKnob
from nictune.search_spaces.limits import MAX_CHOICES, MAX_MAGNITUDE, MAX_SETTINGS_PER_VALUE

_TARGET_INDEX = re.compile(r"\[([0-9]+)\]$")
_FAMILIES = ", ".join(f.value for f in Family)
_TARGET = "a target such as net.core.rmem_max or net.ipv4.tcp_rmem[2]"
_METRICS = ", ".join(BOTTLENECKS)


def why(exc: InvalidInputError) -> str:
    """An error's message without its leading ``knob 'NAME': `` and its trailing allowed values
    (a problem says both in its own place)."""
    text = str(exc)
    if text.startswith("knob ") and ": " in text:
        text = text.split(": ", 1)[1]
    tail = f"; allowed: {exc.allowed}"
    return text[: -len(tail)] if exc.allowed and text.endswith(tail) else text


def _text(raw: Any) -> str:
    return str(raw)


def _family(raw: Any) -> Family:
    if isinstance(raw, str) and raw in {f.value for f in Family}:
        return Family(raw)
    raise problem(f"{shown(raw)} is not an applier family", _FAMILIES)


def check_target(raw: Any) -> str:
    """A setting target: a non-empty string, optionally ending in ``[index]``."""
    if not isinstance(raw, str) or not raw.strip():
        raise problem(f"must be a non-empty string, not {shown(raw)}", _TARGET)
    if ("[" in raw or "]" in raw) and (raw.startswith("[") or not _TARGET_INDEX.search(raw) or raw.count("[") != 1):
        raise problem(f"{raw!r} has a bad field index",
                      "a target optionally ending in [N] with N a whole number, e.g. net.ipv4.tcp_rmem[2]")
    return raw


def _target(raw: Any) -> str | None:
    return None if raw is None else check_target(raw)


def _device(raw: Any) -> str | None:
    if raw is not None and (not isinstance(raw, str) or not raw.strip()):
        raise problem(f"must be an interface name, not {shown(raw)}", "an interface name such as eth0, or leave it out")
    return raw


def _when(raw: Any) -> dict[Any, Any]:
    """``parent: value`` or ``parent: [values]`` (whether the parent and the values exist is
    the space's to check)."""
    if not isinstance(raw, dict) or len(raw) != 1:  # null too: leave the field out for no condition
        raise problem(f"must be one 'parent: value' or 'parent: [values]', not {shown(raw)}",
                      "a mapping such as {rx_mode: timer} or {rx_mode: [timer, adaptive]}")
    ((parent, values),) = raw.items()
    if isinstance(values, list) and len(values) > MAX_CHOICES:
        raise problem(f"lists {len(values)} values of {parent!r}; at most {MAX_CHOICES}",
                      f"at most {MAX_CHOICES} values")
    return raw


def _settings(raw: Any) -> dict[Any, Any] | None:
    """``value: {target: setting value}``; a target may start with ``family:``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise problem(f"must map each value to {{target: value}}, not {shown(raw)}",
                      "a mapping such as {true: {net.core.busy_poll: 50}}")
    if len(raw) > MAX_CHOICES:
        raise problem(f"maps {len(raw)} values; at most {MAX_CHOICES}", f"at most {MAX_CHOICES} values")
    found: list[tuple[tuple[Any, ...], PydanticCustomError, Any]] = []
    for value, targets in raw.items():
        if not isinstance(targets, dict):
            found.append(((value,), problem(f"must be a mapping target -> value, not {shown(targets)}",
                                            "a mapping such as {net.core.rmem_max: 4194304}"), targets))
            continue
        if len(targets) > MAX_SETTINGS_PER_VALUE:
            found.append(((value,), problem(f"names {len(targets)} targets; at most {MAX_SETTINGS_PER_VALUE}",
                                            f"at most {MAX_SETTINGS_PER_VALUE} targets a value"), targets))
            continue
        for key in targets:
            family, _, target = str(key).partition(":") if ":" in str(key) else ("", "", str(key))
            try:
                if family:
                    _family(family)
                check_target(target)
            except PydanticCustomError as exc:
                found.append(((value, key), exc, key))
    raise_all("settings", found)
    return raw


def _relieves(raw: Any) -> dict[Any, Any] | None:
    """``counter: value`` or ``counter: up|down`` (whether the value is one of the knob's is
    the knob's to check)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw:
        raise problem(f"must map bottleneck counters to a value or direction, not {shown(raw)}",
                      f"a mapping such as {{ring_drops: up}} of {_METRICS}")
    raise_all("relieves", [((metric,), problem(f"names unknown counter {shown(metric)}", _METRICS), metric)
                           for metric in raw if metric not in BOTTLENECKS])
    return raw


def _bound(value: int | float) -> int | float:
    if abs(value) > MAX_MAGNITUDE:
        raise problem(f"{shown(value, 30)} is beyond the largest magnitude a knob may have, 2**53 = {MAX_MAGNITUDE}",
                      f"a number from -{MAX_MAGNITUDE} to {MAX_MAGNITUDE}")
    return value


def _step(value: int) -> int:
    if not 1 <= value <= MAX_MAGNITUDE:
        raise problem(f"must be a positive integer, not {value}", f"an integer from 1 to {MAX_MAGNITUDE} (2**53)")
    return value


def _choices(raw: list[Any]) -> list[Any]:
    if not raw:
        raise problem("must be a non-empty list", "a list of strings or integers")
    if len(raw) > MAX_CHOICES:
        raise problem(f"lists {len(raw)} values; a knob may have at most {MAX_CHOICES}",
                      f"at most {MAX_CHOICES} choices")
    bad = [c for c in raw if isinstance(c, bool) or not isinstance(c, str | int)]
    if bad:
        raise problem(f"choices must be strings or integers, not {shown(bad[0])}", "strings or integers")
    if len(set(map(str, raw))) != len(raw):
        raise problem("has duplicates", "distinct values")
    return raw


def _allowed(text: str) -> Any:
    return Field(json_schema_extra={"allowed": text})


_Bool = Annotated[bool, _allowed("true, false")]
_IntBound = Annotated[int, AfterValidator(_bound), _allowed(f"an integer from -{MAX_MAGNITUDE} to {MAX_MAGNITUDE}")]
_FloatBound = Annotated[float, Field(allow_inf_nan=False), AfterValidator(_bound),
                        _allowed(f"a finite number from -{MAX_MAGNITUDE} to {MAX_MAGNITUDE}")]


class KnobSpec(Checked):
    """What every knob has, whatever its type."""

    model_config = ConfigDict(extra="forbid", strict=True)

    default: Any = _allowed("the value an untuned host has, one of the knob's values")
    unit: Annotated[str, PlainValidator(_text)] = ""
    description: Annotated[str, PlainValidator(_text)] = ""
    family: Annotated[Family, PlainValidator(_family)] = Family.SYSCTL
    target: Annotated[str | None, PlainValidator(_target)] = None
    device: Annotated[str | None, PlainValidator(_device)] = None
    when: Annotated[dict[Any, Any] | None, PlainValidator(_when)] = None
    settings: Annotated[dict[Any, Any] | None, PlainValidator(_settings)] = None
    relieves: Annotated[dict[Any, Any] | None, PlainValidator(_relieves)] = None

    _default: Value | None = PrivateAttr(default=None)
    _values: dict[Any, Value] = PrivateAttr(default_factory=dict)
    _relief: tuple[Relief, ...] = PrivateAttr(default=())

    def _shape(self, name: str) -> Knob:
        """The knob of this type and range, without the values the file names."""
        raise NotImplementedError

    def _own(self) -> list[tuple[tuple[str | int, ...], Any, Any]]:
        """Problems between this type's own fields (a range whose low is above its high)."""
        return []

    @model_validator(mode="after")
    def _check_values(self) -> KnobSpec:
        """The default, the values of ``settings`` and of ``relieves`` are the knob's values."""
        found = self._own()
        if found:
            raise_all("knob", found)
        knob = self._shape("?")
        try:
            self._default = knob.parse(self.default)
        except InvalidInputError as exc:
            found.append((("default",), problem(why(exc), knob.allowed()), self.default))
        for value in self.settings or {}:
            try:
                self._values[value] = knob.parse(value)
            except InvalidInputError as exc:
                found.append((("settings", value), problem(why(exc), knob.allowed()), value))
        if self.target is None and not self.settings:
            found.append(((), problem("needs a 'target' or 'settings' (what it changes on a host)", _TARGET), None))
        reliefs = []
        for metric, how in (self.relieves or {}).items():
            if knob.ordered and how in DIRECTIONS:
                reliefs.append(Relief(str(metric), direction=str(how)))
                continue
            try:
                reliefs.append(Relief(str(metric), value=knob.parse(how)))
            except InvalidInputError:
                allowed = ("up, down or " if knob.ordered else "") + knob.allowed()
                found.append((("relieves", metric), problem(
                    f"{shown(how)} is no value of the knob" + (" nor a direction" if knob.ordered else ""), allowed),
                    how))
        self._relief = tuple(reliefs)
        raise_all("knob", found)
        return self

    def to_knob(self, name: str) -> Knob:
        """The knob ``name`` of a space (its condition is the space's to set)."""
        knob = self._shape(name)
        knob.default = self._default
        knob.settings = {self._values[value]: self._targets(targets)
                         for value, targets in (self.settings or {}).items()}
        knob.relieves = self._relief
        return knob

    def _common(self, name: str) -> dict[str, Any]:
        return {"name": name, "default": self.default, "unit": self.unit, "description": self.description.strip(),
                "family": self.family, "target": self.target, "device": self.device}

    def _targets(self, targets: dict[Any, Any]) -> list[Setting]:
        out = []
        for key, value in targets.items():
            family, target = self.family, str(key)
            if ":" in target:
                prefix, _, target = target.partition(":")
                family = Family(prefix)
            base, index = split_target(target)
            out.append(Setting(family, base, tuple(value) if isinstance(value, list) else value, index, self.device))
        return out


class IntKnobSpec(KnobSpec):
    """``type: int``: every ``step``-th integer from ``low`` to ``high``, or the powers of two there."""

    type: Literal["int"]
    low: _IntBound
    high: _IntBound
    step: Annotated[int, AfterValidator(_step), _allowed(f"an integer from 1 to {MAX_MAGNITUDE} (2**53)")] = 1
    power_of_two: _Bool = False
    log: _Bool = False

    def _own(self) -> list[tuple[tuple[str | int, ...], Any, Any]]:
        if self.low > self.high:
            return [(("low",), problem(f"{self.low} is above high ({self.high})", f"at most {self.high}"),
                     self.low)]
        if self.power_of_two and self._shape("?").cardinality() == 0:
            return [(("power_of_two",), problem(f"no power of two between low ({self.low}) and high ({self.high})",
                                                "a range that holds a power of two"), True)]
        return []

    def _shape(self, name: str) -> Knob:
        return IntKnob(**self._common(name), low=self.low, high=self.high, step=self.step,
                       power_of_two=self.power_of_two, log=self.log)


class FloatKnobSpec(KnobSpec):
    """``type: float``: a number from ``low`` to ``high``."""

    type: Literal["float"]
    low: _FloatBound
    high: _FloatBound
    log: _Bool = False

    def _own(self) -> list[tuple[tuple[str | int, ...], Any, Any]]:
        if self.low > self.high:
            return [(("low",), problem(f"{self.low:g} is above high ({self.high:g})", f"at most {self.high:g}"),
                     self.low)]
        return []

    def _shape(self, name: str) -> Knob:
        return FloatKnob(**self._common(name), low=float(self.low), high=float(self.high), log=self.log)


class ChoiceKnobSpec(KnobSpec):
    """``type: choice``: one of ``choices`` (strings or integers)."""

    type: Literal["choice"]
    choices: Annotated[list[Any], AfterValidator(_choices), _allowed("a list of strings or integers")]

    def _shape(self, name: str) -> Knob:
        return ChoiceKnob(**self._common(name), choices=list(self.choices))


class BoolKnobSpec(KnobSpec):
    """``type: bool``: on or off."""

    type: Literal["bool"]

    def _shape(self, name: str) -> Knob:
        return BoolKnob(**self._common(name))


#: A knob of a space file, by its ``type``.
AnyKnobSpec = Annotated[IntKnobSpec | FloatKnobSpec | ChoiceKnobSpec | BoolKnobSpec, Field(discriminator="type")]


def finite(raw: Any) -> bool:
    """Whether ``raw`` is a finite number (not a bool)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return False
    try:
        return math.isfinite(float(raw))
    except OverflowError:
        return False


__all__ = ["AnyKnobSpec", "KnobSpec", "check_target", "finite", "why"]
