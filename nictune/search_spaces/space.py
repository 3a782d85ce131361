"""Search spaces and configurations.

A :class:`SearchSpace` is an ordered set of knobs (parents before the knobs that depend on
them), constraints between knobs, device limits and named profiles. A
:class:`Configuration` is one point of a space in canonical form: only the knobs active
under it, normalised values, keys in sorted order. Its hash is the fitness-cache key.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from nictune.errors import ConfigurationError, UnknownNameError
from nictune.search_spaces._base import Knob, Setting, Value
from nictune.search_spaces.constraints import Constraint
from nictune.search_spaces.profiles import ProfileInfo

#: How many evenly spread values the one-factor neighbourhood tries on a knob with many values.
NEIGHBOUR_POINTS = 6


@dataclass(frozen=True)
class Configuration(Mapping[str, Value]):
    """One point of a search space in canonical form (a read-only mapping knob -> value)."""

    _values: Mapping[str, Value]
    canonical_json: str = field(compare=False)
    hash: str = field(compare=False)

    @classmethod
    def from_values(cls, values: Mapping[str, Value]) -> Configuration:
        ordered = {k: values[k] for k in sorted(values)}
        text = json.dumps(ordered, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode()).hexdigest()
        return cls(MappingProxyType(ordered), text, digest)

    @property
    def short_hash(self) -> str:
        """The first 12 hex digits of the hash, for display."""
        return self.hash[:12]

    def __getitem__(self, key: str) -> Value:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __hash__(self) -> int:
        return hash(self.hash)

    def as_dict(self) -> dict[str, Value]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"Configuration({self.short_hash}: {self.canonical_json})"


class SearchSpace:
    """Knobs, their conditions and constraints, and named profiles.

    Build one with :func:`nictune.search_spaces.loader.space_from_dict` (which validates the
    definition) rather than directly.
    """

    def __init__(
        self,
        name: str,
        knobs: list[Knob],
        *,
        description: str = "",
        testbed: str | None = None,
        constraints: list[Constraint] | None = None,
        limits: Mapping[str, float] | None = None,
        profiles: Mapping[str, Mapping[str, Value]] | None = None,
        profile_info: Mapping[str, ProfileInfo] | None = None,
        definition: Mapping[str, Any] | None = None,
    ):
        self.name = name
        self.description = description
        self.testbed = testbed
        self.knobs: dict[str, Knob] = {k.name: k for k in knobs}
        self.constraints = list(constraints or [])
        self.limits = dict(limits or {})
        self.profiles: dict[str, dict[str, Value]] = {k: dict(v) for k, v in (profiles or {}).items()}
        #: What the space file says of a profile besides its values (long-form profiles only).
        self.profile_info: dict[str, ProfileInfo] = dict(profile_info or {})
        self.definition: dict[str, Any] = dict(definition or {})
        self._children: dict[str | None, list[Knob]] = {}
        for knob in knobs:
            parent = knob.condition.knob if knob.condition else None
            self._children.setdefault(parent, []).append(knob)

    # ------------------------------------------------------------------ lookup
    def knob(self, name: str) -> Knob:
        try:
            return self.knobs[name]
        except KeyError:
            raise UnknownNameError("knob", name, list(self.knobs)) from None

    def profile_names(self) -> list[str]:
        return ["default", *sorted(self.profiles)]

    def stock_profiles(self) -> list[str]:
        """The profiles users would otherwise apply (``stock: true``), in the file's order."""
        return [name for name in self.profiles if name in self.profile_info and self.profile_info[name].stock]

    # -------------------------------------------------------------- structure
    def active(self, values: Mapping[str, Value]) -> list[str]:
        """Names of the knobs active under ``values``, in space order."""
        active: dict[str, Value] = {}
        for knob in self.knobs.values():
            cond = knob.condition
            if cond is None or (cond.knob in active and cond.holds(active[cond.knob])):
                active[knob.name] = values.get(knob.name, knob.default)
        return list(active)

    def _canonical(self, values: Mapping[str, Value]) -> dict[str, Value]:
        return {name: values.get(name, self.knobs[name].default) for name in self.active(values)}

    def _env(self, values: Mapping[str, Value]) -> dict[str, float]:
        env: dict[str, float] = {k: float(v) for k, v in self.limits.items()}
        for name, value in values.items():
            if isinstance(value, bool | int | float):
                env[name] = float(value)
        return env

    def violations(self, values: Mapping[str, Value]) -> list[str]:
        """The constraints that ``values`` (already canonical) break."""
        env = self._env(values)
        return [c.expression for c in self.constraints if c.applies(env) and not c.holds(env)]

    # --------------------------------------------------------- configurations
    def base_values(self, base: str | Mapping[str, Value] | None = "default") -> dict[str, Value]:
        """Knob defaults overlaid with a named profile (or a mapping of values)."""
        values: dict[str, Value] = {k.name: k.default for k in self.knobs.values()}
        if base is None or base == "default":
            return values
        if isinstance(base, str):
            if base not in self.profiles:
                raise UnknownNameError("profile", base, self.profile_names())
            values.update(self.profiles[base])
        else:
            values.update(base)
        return values

    def configuration(
        self,
        values: Mapping[str, Any] | None = None,
        base: str | Mapping[str, Value] | None = "default",
        *,
        strict: bool = True,
    ) -> Configuration:
        """A validated configuration: ``base`` with ``values`` (raw user input) laid over it.

        Args:
            values: knob -> raw value (strings from the CLI are parsed by each knob).
            base: ``"default"``, a profile name, or a mapping of values to start from.
            strict: reject a value given for a knob that is inactive under the result;
                otherwise such values are dropped silently (used for engine output).

        Raises:
            ConfigurationError: unknown knob, invalid value, inactive knob, broken constraint.
        """
        merged = self.base_values(base)
        given = dict(values or {})
        for name, raw in given.items():
            merged[name] = self.knob(name).parse(raw)
        canonical = self._canonical(merged)
        if strict:
            for name in given:
                if name not in canonical:
                    cond = self.knobs[name].condition
                    assert cond is not None
                    raise ConfigurationError(
                        f"knob {name!r} is only active when {cond.describe()} "
                        f"(here {cond.knob} = {merged.get(cond.knob)!r}); "
                        f"set {cond.knob} too, or leave {name!r} out",
                        field=name,
                        allowed=cond.describe(),
                    )
        broken = self.violations(canonical)
        if broken:
            shown = ", ".join(
                f"{n}={canonical.get(n, self.limits.get(n))}" for n in sorted(self._names_in(broken[0]))
            )
            raise ConfigurationError(
                f"configuration breaks constraint {broken[0]!r} ({shown})",
                field="constraints",
                allowed=", ".join(c.expression for c in self.constraints),
            )
        return Configuration.from_values(canonical)

    def _names_in(self, expression: str) -> frozenset[str]:
        for c in self.constraints:
            if c.expression == expression:
                return c.names
        return frozenset()

    def default(self) -> Configuration:
        """What an untuned host has."""
        return self.configuration()

    def profile(self, name: str) -> Configuration:
        return self.configuration(base=name)

    def is_valid(self, values: Mapping[str, Value]) -> bool:
        canonical = self._canonical(values)
        parsed_ok = all(self.knobs[n].parse(v) == v for n, v in canonical.items())
        return parsed_ok and not self.violations(canonical)

    def settings(self, config: Mapping[str, Value]) -> list[Setting]:
        """Host settings that ``config`` stands for, in knob order."""
        out: list[Setting] = []
        for name, value in config.items():
            out.extend(self.knob(name).to_settings(value))
        return out

    # ------------------------------------------------------------ generation
    def sample(self, rng: random.Random) -> Configuration:
        """A configuration drawn uniformly knob by knob, repaired if it breaks a constraint."""
        values = {k.name: k.sample(rng) for k in self.knobs.values()}
        return self.repair(values, rng)

    def repair(self, values: Mapping[str, Value], rng: random.Random) -> Configuration:
        """The nearest valid configuration we can find for ``values`` (no value out of range).

        Active knobs missing from ``values`` take their defaults. Knobs named by a broken
        constraint are redrawn (up to 100 times); as a last resort they fall back to their
        defaults, which a valid space guarantees to be consistent.
        """
        current = self._canonical(values)
        for _ in range(100):
            broken = self.violations(current)
            if not broken:
                return Configuration.from_values(current)
            names = [n for n in sorted(self._names_in(broken[0])) if n in self.knobs and n in current]
            pick = rng.choice(names)
            full = dict(values) | current
            full[pick] = self.knobs[pick].sample(rng)
            current = self._canonical(full)
        for expr in self.violations(current):
            for n in self._names_in(expr):
                if n in current:
                    current[n] = self.knobs[n].default
        current = self._canonical(current)
        if self.violations(current):  # defaults of the involved knobs still clash: give up
            return self.default()
        return Configuration.from_values(current)

    def neighbours(self, config: Mapping[str, Value]) -> list[tuple[str, Configuration]]:
        """One-factor changes of ``config``: each active knob set to each of its other values.

        Knobs with many values contribute :data:`NEIGHBOUR_POINTS` evenly spread values.
        Changes that break a constraint are left out.
        """
        out: list[tuple[str, Configuration]] = []
        for name in list(config):
            knob = self.knobs[name]
            listed = knob.values()
            if listed is None or len(listed) > 2 * NEIGHBOUR_POINTS:
                candidates = []
                for i in range(NEIGHBOUR_POINTS):
                    v = knob.decode(i / (NEIGHBOUR_POINTS - 1))
                    if v not in candidates:
                        candidates.append(v)
            else:
                candidates = listed
            for value in candidates:
                if value == config[name]:
                    continue
                trial = dict(config) | {name: value}
                canonical = self._canonical(trial)
                if not self.violations(canonical):
                    out.append((name, Configuration.from_values(canonical)))
        return out

    def size(self) -> int | None:
        """Number of distinct configurations before constraints; ``None`` if a knob is continuous."""

        def count(knob: Knob) -> int | None:
            values = knob.values()
            children = self._children.get(knob.name, [])
            if not children:
                return knob.cardinality()
            if values is None:
                return None
            total = 0
            for v in values:
                sub = 1
                for child in children:
                    if child.condition and child.condition.holds(v):
                        c = count(child)
                        if c is None:
                            return None
                        sub *= c
                total += sub
            return total

        result = 1
        for root in self._children.get(None, []):
            c = count(root)
            if c is None:
                return None
            result *= c
        return result

    def describe(self) -> dict[str, Any]:
        """A plain-data view for ``nictune spaces show`` and the API."""
        return {
            "name": self.name,
            "description": self.description,
            "testbed": self.testbed,
            "size": self.size(),
            "knobs": [k.describe() for k in self.knobs.values()],
            "constraints": [c.expression for c in self.constraints],
            "limits": self.limits,
            "profiles": {"default": self.default().as_dict()}
            | {n: self.profile(n).as_dict() for n in sorted(self.profiles)},
            "profile_info": {n: self.profile_info[n].describe() for n in sorted(self.profile_info)},
        }
