"""Configurations as vectors for a model, and small spaces listed whole.

:class:`Encoder`: booleans and two-way choices as 0/1, unordered choices one-hot, everything
ordered (sizes, powers of two, numbers) through ``Knob.encode``; an inactive conditional knob
sits at its default's position. :func:`enumerate_space`: every valid configuration of a
space small enough to score whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nictune.search_spaces import BoolKnob, ChoiceKnob, Configuration, Knob, SearchSpace, Value

#: Spaces with at most this many configurations (before constraints) are enumerated.
ENUMERATE_LIMIT = 4096


class Encoder:
    """Configurations as vectors in [0, 1]^d (see the module docstring)."""

    def __init__(self, space: SearchSpace):
        self.space = space
        self.columns: list[tuple[str, Any]] = []  # (knob, None | category)
        # Per knob: name, default, knob, its first column, value -> [(column, position)].
        self._plan: list[tuple[str, Value, Knob, int, dict[Any, list[tuple[int, float]]] | None]] = []
        for name, knob in space.knobs.items():
            first = len(self.columns)
            table: dict[Any, list[tuple[int, float]]] | None = None
            if isinstance(knob, ChoiceKnob) and not knob.ordered and len(knob.choices) > 2:
                self.columns += [(name, c) for c in knob.choices]
                table = {c: [(first + i, 1.0)] for i, c in enumerate(knob.choices)}
            else:
                self.columns.append((name, None))
                listed = knob.values()
                if listed is not None:
                    table = {v: [(first, self._position(knob, v))] for v in listed}
            self._plan.append((name, knob.default, knob, first, table))
        self.width = len(self.columns)
        self._cache: dict[str, np.ndarray] = {}

    @staticmethod
    def _position(knob: Knob, value: Value) -> float:
        if isinstance(knob, BoolKnob):
            return 1.0 if value else 0.0
        return float(knob.encode(value))

    def encode(self, config: Configuration) -> np.ndarray:
        cached = self._cache.get(config.hash)
        if cached is not None:
            return cached
        row = np.zeros(self.width)
        for name, default, knob, first, table in self._plan:
            value = config.get(name, default)
            if table is not None:
                for i, v in table[value]:
                    row[i] = v
            else:
                row[first] = self._position(knob, value)
        if len(self._cache) > 200_000:
            self._cache.clear()
        self._cache[config.hash] = row
        return row

    def matrix(self, configs: Sequence[Configuration]) -> np.ndarray:
        if not configs:
            return np.empty((0, self.width))
        return np.vstack([self.encode(c) for c in configs])


def enumerate_space(space: SearchSpace, limit: int = ENUMERATE_LIMIT) -> list[Configuration] | None:
    """Every valid configuration of ``space`` in a fixed order, or ``None`` if there are
    more than ``limit`` (before constraints) or a knob cannot be listed."""
    size = space.size()
    if size is None or size > limit:
        return None
    knobs = list(space.knobs.values())
    out: list[Configuration] = []
    seen: set[str] = set()

    def walk(i: int, values: dict[str, Value]) -> None:
        if i == len(knobs):
            active = {n: values[n] for n in space.active(values) if n in values}
            if len(active) == len(space.active(active)) and not space.violations(active):
                config = Configuration.from_values(active)
                if config.hash not in seen:
                    seen.add(config.hash)
                    out.append(config)
            return
        knob = knobs[i]
        cond = knob.condition
        if cond is not None and not (cond.knob in values and cond.holds(values[cond.knob])):
            walk(i + 1, values)
            return
        for v in knob.values() or []:
            values[knob.name] = v
            walk(i + 1, values)
            del values[knob.name]

    walk(0, {})
    return out
