"""Uniform draws over a knob's values, and space-filling designs."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from nictune.search_spaces import IntKnob, load_space
from nictune.search_spaces.design import space_filling


@pytest.mark.parametrize("knob", [
    IntKnob(name="ring", default=1024, low=256, high=8192, power_of_two=True),
    IntKnob(name="mtu", default=1500, low=1500, high=9000, step=500),
    IntKnob(name="small", default=0, low=0, high=3),
])
def test_integer_knobs_draw_every_value_equally_often_the_end_values_too(knob: IntKnob) -> None:
    rng = random.Random(1)
    values = knob.values()
    assert values is not None
    draws = Counter(knob.sample(rng) for _ in range(400 * len(values)))
    assert set(draws) == set(values)
    expected = 400
    for value in values:  # 400 expected each; binomial sd ~20, so 25 % off is far outside
        assert abs(draws[value] - expected) < 0.25 * expected, (value, draws[value])


def test_a_knob_too_large_to_list_still_draws_its_end_values_as_often_as_the_others() -> None:
    knob = IntKnob(name="big", default=0, low=0, high=99_999, step=1)
    assert knob.values() is None
    rng = random.Random(2)
    draws = [knob.sample(rng) for _ in range(50_000)]
    low_tenth = sum(d < 10_000 for d in draws)
    top_tenth = sum(d >= 90_000 for d in draws)
    assert abs(low_tenth - 5_000) < 500 and abs(top_tenth - 5_000) < 500
    assert knob.quantile(0.0) == 0 and knob.quantile(0.999_999_9) == 99_999


def test_quantile_gives_each_listed_value_an_equal_share_of_the_unit_interval() -> None:
    knob = IntKnob(name="ring", default=1024, low=256, high=8192, power_of_two=True)
    assert [knob.quantile(u) for u in (0.0, 0.16, 0.17, 0.5, 0.84, 0.99, 1.0)] == \
        [256, 256, 512, 2048, 8192, 8192, 8192]


def test_space_filling_designs_are_valid_distinct_balanced_and_repeatable() -> None:
    space = load_space("veth")
    design = space_filling(space, 64, seed=3)
    assert len(design) == 64 and len({c.hash for c in design}) == 64
    assert all(space.is_valid(c) for c in design)  # rmem_default <= rmem_max, repaired
    mtus = Counter(c["mtu"] for c in design)  # 5 values: a balanced design gives each ~13
    assert set(mtus) == {1500, 4000, 9000, 16000, 65000} and max(mtus.values()) - min(mtus.values()) <= 3
    assert [c.hash for c in space_filling(space, 64, seed=3)] == [c.hash for c in design]
    assert [c.hash for c in space_filling(space, 64, seed=4)] != [c.hash for c in design]


def test_space_filling_leaves_out_what_it_is_told_and_keeps_conditional_knobs_canonical() -> None:
    space = load_space("linux-nic")
    first = space_filling(space, 10, seed=0)
    more = space_filling(space, 10, seed=0, exclude={c.hash for c in first})
    assert not {c.hash for c in first} & {c.hash for c in more}
    for c in first + more:
        assert (("poll_usecs" in c) == (c["rx_mode"] == "timer")
                and ("watermark_frames" in c) == (c["rx_mode"] == "watermark"))
    assert space_filling(space, 0, seed=0) == []
