"""Random search: start first, uniform valid samples, no repeats."""

from __future__ import annotations

from collections import Counter

from nictune.optimizer import RandomEngine
from nictune.search_spaces import load_space

from ._toys import drive


def test_random_search_covers_a_small_space_exactly_once() -> None:
    space = load_space("ixgbe-numa")
    engine = RandomEngine(space, seed=1, start=[space.default()])
    asked = drive(engine, lambda c: 0.0, 100, batch=3)
    assert asked[0] == space.default()
    assert len(asked) == 8 == len({c.hash for c in asked})
    assert engine.finished


def test_random_search_spreads_over_a_choice_knob() -> None:
    space = load_space("benson-40g")
    engine = RandomEngine(space, seed=2)
    asked = drive(engine, lambda c: 0.0, 400, batch=20)
    modes = Counter(c["rx_mode"] for c in asked)
    assert set(modes) == {"adaptive", "interrupt", "timer", "watermark"}
    assert min(modes.values()) > 60  # ~100 each when uniform
    assert not engine.finished
