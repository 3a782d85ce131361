"""The four knob types: integer, float, choice and boolean."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from nictune.search_spaces._base import Knob, Value

#: Discrete knobs with more values than this are not enumerated by :meth:`Knob.values`.
MAX_LISTED_VALUES = 4096

_TRUE = {"true", "on", "yes", "1", "enabled"}
_FALSE = {"false", "off", "no", "0", "disabled"}


def _as_int(knob: Knob, raw: Any) -> int:
    if isinstance(raw, bool):
        raise knob.error(raw, "expected an integer")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str):
        text = raw.strip().lower().replace("_", "")
        mult = 1
        for suffix, factor in (("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30)):
            if text.endswith(suffix) and text[:-1].isdigit():
                text, mult = text[:-1], factor
                break
        if text.lstrip("-").isdigit():
            return int(text) * mult
    raise knob.error(raw, "expected an integer")


@dataclass
class IntKnob(Knob):
    """An integer in ``[low, high]``: every ``step``-th value, or powers of two only.

    Attributes:
        low: smallest value.
        high: largest value.
        step: spacing of allowed values, counted from ``low``.
        power_of_two: only powers of two in ``[low, high]`` are allowed.
        log: sample and mutate uniformly in log space (for ranges over decades).
    """

    low: int = 0
    high: int = 0
    step: int = 1
    power_of_two: bool = False
    log: bool = False

    def __post_init__(self) -> None:
        self.kind = "int"

    def _grid(self) -> list[int] | None:
        if self.power_of_two:
            lo = max(1, self.low)
            return [1 << e for e in range(lo.bit_length() - 1, self.high.bit_length())
                    if lo <= (1 << e) <= self.high]
        count = (self.high - self.low) // self.step + 1
        if count > MAX_LISTED_VALUES:
            return None
        return list(range(self.low, self.high + 1, self.step))

    def cardinality(self) -> int:
        grid = self._grid()
        return len(grid) if grid is not None else (self.high - self.low) // self.step + 1

    def values(self) -> list[Value] | None:
        grid = self._grid()
        return list(grid) if grid is not None else None

    def allowed(self) -> str:
        if self.power_of_two:
            return f"powers of two from {self.low} to {self.high}"
        if self.step != 1:
            return f"integers from {self.low} to {self.high} in steps of {self.step}"
        return f"integers from {self.low} to {self.high}"

    def parse(self, raw: Any) -> int:
        value = _as_int(self, raw)
        if not self.low <= value <= self.high:
            raise self.error(raw, "out of range")
        if self.power_of_two and value & (value - 1):
            raise self.error(raw, "not a power of two")
        if not self.power_of_two and (value - self.low) % self.step:
            raise self.error(raw, f"not on the grid of step {self.step}")
        return value

    def encode(self, value: Value) -> float:
        v = int(value)
        n = self.cardinality()
        if n <= 1:
            return 0.0
        if self.power_of_two:
            grid = self._grid() or [v]
            return grid.index(v) / (n - 1) if v in grid else 0.0
        if self.log and self.low > 0:
            return math.log(v / self.low) / math.log(self.high / self.low)
        return (v - self.low) / (self.high - self.low)

    def decode(self, position: float) -> int:
        position = min(1.0, max(0.0, position))
        if self.power_of_two:
            grid = self._grid() or [self.low]
            return grid[round(position * (len(grid) - 1))]
        if self.log and self.low > 0:
            raw = self.low * (self.high / self.low) ** position
        else:
            raw = self.low + position * (self.high - self.low)
        snapped = self.low + round((raw - self.low) / self.step) * self.step
        return min(self.high - (self.high - self.low) % self.step, max(self.low, snapped))

    def quantile(self, u: float) -> int:
        listed = self.values()
        if listed or self.log:
            return super().quantile(u)  # type: ignore[return-value]
        # Too many values to list: every step of the grid owns an equal share of [0, 1).
        count = (self.high - self.low) // self.step + 1
        return self.low + min(count - 1, int(min(max(u, 0.0), 1.0) * count)) * self.step

    def sample(self, rng: random.Random) -> int:
        # Uniform over the values: decode() rounds, which gives the two end values half the
        # share of the others, and network optima sit at range ends more than anywhere else.
        return self.quantile(rng.random())


@dataclass
class FloatKnob(Knob):
    """A real number in ``[low, high]``, optionally log-scaled. Normalised to 6 significant digits."""

    low: float = 0.0
    high: float = 1.0
    log: bool = False

    def __post_init__(self) -> None:
        self.kind = "float"

    def cardinality(self) -> None:
        return None

    def allowed(self) -> str:
        return f"numbers from {self.low:g} to {self.high:g}"

    def parse(self, raw: Any) -> float:
        if isinstance(raw, bool):
            raise self.error(raw, "expected a number")
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise self.error(raw, "expected a number") from None
        if math.isnan(value) or not self.low <= value <= self.high:
            raise self.error(raw, "out of range")
        return float(f"{value:.6g}")

    def encode(self, value: Value) -> float:
        v = float(value)
        if self.log and self.low > 0:
            return math.log(v / self.low) / math.log(self.high / self.low)
        return (v - self.low) / (self.high - self.low) if self.high > self.low else 0.0

    def decode(self, position: float) -> float:
        position = min(1.0, max(0.0, position))
        if self.log and self.low > 0:
            raw = self.low * (self.high / self.low) ** position
        else:
            raw = self.low + position * (self.high - self.low)
        return min(self.high, max(self.low, float(f"{raw:.6g}")))

    def sample(self, rng: random.Random) -> float:
        return self.decode(rng.random())


@dataclass
class ChoiceKnob(Knob):
    """One of a list of values (strings or integers), in the given order."""

    choices: list[Value] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.kind = "choice"

    def cardinality(self) -> int:
        return len(self.choices)

    def values(self) -> list[Value]:
        return list(self.choices)

    def allowed(self) -> str:
        return "one of " + ", ".join(str(c) for c in self.choices)

    def parse(self, raw: Any) -> Value:
        if raw in self.choices and not isinstance(raw, bool):
            return raw
        text = str(raw).strip()
        for choice in self.choices:
            if str(choice) == text:
                return choice
        raise self.error(raw)

    def encode(self, value: Value) -> float:
        n = len(self.choices)
        return self.choices.index(value) / (n - 1) if n > 1 else 0.0

    def decode(self, position: float) -> Value:
        n = len(self.choices)
        return self.choices[min(n - 1, max(0, round(position * (n - 1))))]

    def sample(self, rng: random.Random) -> Value:
        return rng.choice(self.choices)

    @property
    def ordered(self) -> bool:
        """Numeric choices (sizes, lengths) have an order; names do not."""
        return all(isinstance(c, int) for c in self.choices)

    def mutate(self, value: Value, rng: random.Random, scale: float = 0.2) -> Value:
        if self.ordered:
            return super().mutate(value, rng, scale)
        # Categories have no order: any other category is equally near.
        others = [c for c in self.choices if c != value]
        return rng.choice(others) if others else value


@dataclass
class BoolKnob(Knob):
    """On or off. Accepts true/false, on/off, yes/no, 1/0."""

    def __post_init__(self) -> None:
        self.kind = "bool"

    @property
    def ordered(self) -> bool:
        """On and off are two states, not a scale: a relief names the value."""
        return False

    def cardinality(self) -> int:
        return 2

    def values(self) -> list[Value]:
        return [False, True]

    def allowed(self) -> str:
        return "true or false (on/off, yes/no, 1/0)"

    def parse(self, raw: Any) -> bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, int) and raw in (0, 1):
            return bool(raw)
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise self.error(raw)

    def encode(self, value: Value) -> float:
        return 1.0 if value else 0.0

    def decode(self, position: float) -> bool:
        return position >= 0.5

    def sample(self, rng: random.Random) -> bool:
        return rng.random() < 0.5

    def mutate(self, value: Value, rng: random.Random, scale: float = 0.2) -> bool:
        return not value

