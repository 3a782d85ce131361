"""The model of a space file (or of a space posted to the service as JSON).

Each field is checked on its own (types, names, caps: :mod:`nictune.search_spaces.limits`),
each knob by its own model (:mod:`nictune.search_spaces.knob_schema`); the caps on the number
of knobs, constraints and profiles are checked before any of them is. What relates the parts
(a knob's ``when`` names another knob, no cycle of them, the names of the constraints, the
values of the profiles, a default configuration that meets the constraints) is checked once
every knob is well-formed, and builds the :class:`~nictune.search_spaces.space.SearchSpace`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from nictune.errors import InvalidInputError
from nictune.locations import Checked, problem, raise_all, relocated, shown
from nictune.search_spaces._base import Condition, Knob, Value
from nictune.search_spaces.constraints import Constraint
from nictune.search_spaces.knob_schema import AnyKnobSpec, KnobSpec, finite, why
from nictune.search_spaces.limits import MAX_CONSTRAINT_CHARS, MAX_CONSTRAINTS, MAX_KNOBS, MAX_PROFILES
from nictune.search_spaces.profiles import ProfileInfo, ProfileSpec, is_long_form
from nictune.search_spaces.space import SearchSpace

_NAME = re.compile(r"^[a-z][a-z0-9_.]{0,63}$")
_SPACE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
#: The profile every space has without defining it: the knob defaults.
RESERVED_PROFILES = ("default",)
_EXAMPLE = "a list of strings such as 'rx_ring <= ring_max' (one '- a <= b' per line)"

Found = list[tuple[tuple[str | int, ...], Any, Any]]


def _space_name(raw: str) -> str:
    if not _SPACE_NAME.match(raw):
        raise problem(f"{shown(raw)} does not match {_SPACE_NAME.pattern}",
                      "a name such as my-space: lower-case letters, digits, '_', '.' and '-', at most 64 characters")
    return raw


def _knob_name(raw: Any) -> str:
    if not _NAME.match(str(raw)):
        raise problem(f"knob name {shown(raw)} does not match {_NAME.pattern}",
                      "a name such as rx_ring: lower-case letters, digits, '_' and '.', starting with a letter")
    return str(raw)


def _cap(what: str, most: int, kind: type[list[Any]] | type[dict[Any, Any]]) -> Any:
    """A check, before the items are, that there are at most ``most`` of them."""
    def check(raw: Any) -> Any:
        if isinstance(raw, kind) and len(raw) > most:
            raise problem(f"has {len(raw)} {what}; a space may have at most {most}", f"at most {most} {what}")
        return raw
    return BeforeValidator(check)


def _knobs(raw: Any) -> Any:
    if not isinstance(raw, dict) or not raw:
        raise problem(f"must be a non-empty mapping of knob names to knobs, not {shown(raw)}",
                      "a mapping such as {rx_ring: {type: int, low: 64, high: 8192, default: 1024, ...}}")
    return raw


def _constraint(raw: Any) -> str:
    if not isinstance(raw, str):
        raise problem(f"item {shown(raw)} is not a comparison (a string)", _EXAMPLE)
    if len(raw) > MAX_CONSTRAINT_CHARS:
        raise problem(f"{shown(raw, 40)} is {len(raw)} characters long; at most {MAX_CONSTRAINT_CHARS}",
                      f"a comparison of at most {MAX_CONSTRAINT_CHARS} characters")
    try:
        Constraint.parse(raw)
    except InvalidInputError as exc:
        raise problem(why(exc), exc.allowed) from None
    return raw


def _constraints(raw: Any) -> Any:
    if raw is not None and not isinstance(raw, list):
        raise problem(f"must be a list of comparisons (strings), not {shown(raw)}", _EXAMPLE)
    return raw


def _limits(raw: Any) -> dict[Any, Any]:
    if not raw:  # left out, null or empty (as before: any empty value)
        return {}
    allowed = "a mapping of names to finite numbers, e.g. {ring_max: 8192}"
    if not isinstance(raw, dict):
        raise problem(f"must map names to numbers, not {shown(raw)}", allowed)
    raise_all("limits", [((key,), problem(f"must be a finite number, not {shown(value)}", allowed), value)
                         for key, value in raw.items() if not finite(value)])
    return raw


def _profiles(raw: Any) -> Any:
    if not raw:  # left out, null or empty (as before: any empty value)
        return None
    if not isinstance(raw, dict):
        raise problem(f"must map profile names to knob values, not {shown(raw)}",
                      "a mapping such as {baseline: {rx_ring: 4096}}")
    return raw


@dataclass
class Profile:
    """A profile of the file: its knob values (as written) and, in the long form, its
    :class:`ProfileInfo` (``values`` holds the values then)."""

    values: dict[Any, Any]
    info: ProfileInfo | None = None
    where: tuple[str, ...] = ()


class SpaceFile(Checked):
    """A space file: ``name``, ``knobs`` and optionally ``description``, ``testbed``,
    ``constraints``, ``limits`` and ``profiles``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str, AfterValidator(_space_name), Field(json_schema_extra={"allowed": "a name such as my-space"})]
    description: Annotated[str, PlainValidator(str)] = ""
    testbed: Annotated[str | None, Field(json_schema_extra={
        "allowed": "a testbed such as veth or sim:benson-40g, or leave it out"})] = None
    knobs: Annotated[dict[Annotated[str, PlainValidator(_knob_name)], AnyKnobSpec],
                     _cap("knobs", MAX_KNOBS, dict), BeforeValidator(_knobs)]
    constraints: Annotated[list[Annotated[str, PlainValidator(_constraint)]] | None,
                           _cap("items", MAX_CONSTRAINTS, list), BeforeValidator(_constraints)] = None
    limits: Annotated[dict[Any, Any], PlainValidator(_limits)] = Field(default_factory=dict)
    profiles: Annotated[dict[Any, Any] | None, _cap("profiles", MAX_PROFILES, dict), BeforeValidator(_profiles)] = None

    _space: SearchSpace | None = PrivateAttr(default=None)

    @field_validator("profiles", mode="after")
    @classmethod
    def _profile_forms(cls, raw: dict[Any, Any] | None, info: ValidationInfo) -> dict[Any, Any]:
        """Each profile in its short (``knob: value``) or long form (:class:`ProfileSpec`)."""
        knob_names = set(info.data.get("knobs") or ())
        out: dict[Any, Any] = {}
        found: Found = []
        for name, entry in (raw or {}).items():
            if str(name) in RESERVED_PROFILES:
                found.append(((name,), problem("the name is reserved (it is the knob defaults); give the profile "
                                               "another name", "any profile name except 'default'"), name))
            elif not isinstance(entry, dict):
                found.append(((name,), problem(f"must map knob names to values, not {shown(entry)}",
                                               "knob: value pairs, or the long form with 'values' (and 'stock', "
                                               "'description', 'source', 'not_expressed', 'notes')"), entry))
            elif is_long_form(entry, knob_names):
                try:
                    spec = ProfileSpec.model_validate(entry)
                except ValidationError as exc:
                    found += relocated(exc, ProfileSpec, entry, (name,))
                else:
                    out[name] = Profile(spec.values, spec.info(), ("values",))
            else:
                out[name] = Profile(dict(entry))
        raise_all("profiles", found)
        return out

    @model_validator(mode="after")
    def _build(self) -> SpaceFile:
        """What relates the parts, and the space they make."""
        knobs = {name: spec.to_knob(name) for name, spec in self.knobs.items()}
        found = self._conditions(knobs)
        if not found:
            found = self._cycles(knobs)
        constraints = []
        for i, text in enumerate(self.constraints or []):
            constraint = Constraint.parse(text)
            missing = sorted(constraint.names - set(knobs) - set(self.limits))
            if missing:
                found.append((("constraints", i), problem(f"constraint {text!r}: unknown name {missing[0]!r}",
                                                          ", ".join([*knobs, *map(str, self.limits)])), text))
            constraints.append(constraint)
        raise_all("space", found)
        space = SearchSpace(self.name, list(_parents_first(knobs).values()), description=self.description.strip(),
                            testbed=self.testbed, constraints=constraints, limits=self.limits)
        try:
            space.default()
        except InvalidInputError as exc:
            raise_all("space", [(("knobs",), problem(f"the knob defaults are not a valid configuration: {exc}",
                                                     exc.allowed), None)])
        raise_all("space", self._profile_values(space))
        self._space = space
        return self

    def _where(self, name: str) -> tuple[str, ...]:
        return ("knobs", name, self.knobs[name].type)

    def _conditions(self, knobs: dict[str, Knob]) -> Found:
        """Each knob's ``when`` names another knob of the space and values of it."""
        found: Found = []
        for name, spec in self.knobs.items():
            if spec.when is None:
                continue
            ((parent, raw),) = spec.when.items()
            where = (*self._where(name), "when")
            values = raw if isinstance(raw, list) else [raw]
            if parent == name:
                found.append((where, problem("refers to the knob itself; a knob cannot depend on itself",
                                             "another knob of the space"), parent))
            elif parent not in knobs:
                found.append((where, problem(f"refers to unknown knob {shown(parent)}",
                                             ", ".join(k for k in knobs if k != name)), parent))
            elif not values:
                found.append((where, problem(f"{parent}: no values given (the knob could never be active)",
                                             knobs[parent].allowed()), raw))
            else:
                parsed = []
                for value in values:
                    try:
                        parsed.append(knobs[parent].parse(value))
                    except InvalidInputError:
                        found.append((where, problem(f"uses {shown(value)}, not a value of {parent!r}",
                                                     knobs[parent].allowed()), value))
                knobs[name].condition = Condition(parent, tuple(parsed))
        return found

    def _cycles(self, knobs: dict[str, Knob]) -> Found:
        """No knob depends on itself through others."""
        found: Found = []
        for start in knobs:
            trail = [start]
            cond = knobs[start].condition
            while cond is not None and cond.knob not in trail:
                trail.append(cond.knob)
                cond = knobs[cond.knob].condition
            if cond is not None and cond.knob == start:
                found.append(((*self._where(start), "when"), problem(
                    f"forms a cycle ({' -> '.join((*trail, start))})", "a parent that does not depend on this knob"),
                    start))
        return found[:1]

    def _profile_values(self, space: SearchSpace) -> Found:
        """Each profile's values are values of the space's knobs, and make a configuration."""
        found: Found = []
        for name, profile in (self.profiles or {}).items():
            parsed: dict[str, Value] = {}
            bad = False
            for knob, raw in profile.values.items():
                where = (name, *profile.where, knob)
                if knob not in space.knobs:
                    found.append((("profiles", *where), problem(f"unknown knob {shown(knob)}", ", ".join(space.knobs)),
                                  knob))
                    bad = True
                    continue
                try:
                    parsed[knob] = space.knobs[knob].parse(raw)
                except InvalidInputError as exc:
                    found.append((("profiles", *where), problem(why(exc), exc.allowed), raw))
                    bad = True
            if bad:
                continue
            space.profiles[str(name)] = parsed
            if profile.info is not None:
                space.profile_info[str(name)] = profile.info
            try:
                space.configuration(base=str(name))
            except InvalidInputError as exc:
                found.append((("profiles", name), problem(why(exc), exc.allowed), profile.values))
        return found

    def space(self) -> SearchSpace:
        """The space the file defines."""
        assert self._space is not None  # built by the model's last check
        return self._space


def _parents_first(knobs: dict[str, Knob]) -> dict[str, Knob]:
    """Knobs reordered so that every parent comes before the knobs that depend on it (no
    cycles: :meth:`SpaceFile._cycles`)."""
    ordered: dict[str, Knob] = {}

    def visit(name: str) -> None:
        if name in ordered:
            return
        cond = knobs[name].condition
        if cond is not None:
            visit(cond.knob)
        ordered[name] = knobs[name]

    for name in knobs:
        visit(name)
    return ordered


__all__ = ["RESERVED_PROFILES", "KnobSpec", "SpaceFile"]
