"""One factor at a time: convergence to the coordinate-wise optimum, and stopping."""

from __future__ import annotations

import pytest

from nictune.errors import InvalidInputError
from nictune.optimizer import OfatEngine, Score, make_engine
from nictune.search_spaces import Configuration, load_space

from ._toys import BENSON_TARGET, drive, separable


def test_ofat_converges_on_a_separable_toy_and_stops() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)
    engine = OfatEngine(space, seed=0, start=[space.default()])
    asked = drive(engine, fitness, 10_000, batch=5)
    assert engine.finished
    assert engine.ask(5) == []
    best = engine.best()
    assert best is not None
    assert best[0] == space.configuration(BENSON_TARGET)
    # Starts from the baseline profile; 10 knobs differ from the target, and switching
    # rx_mode to timer brings poll_usecs in at its default, which takes one more round.
    assert engine.centers[0] == space.profile("baseline")
    assert len(engine.centers) == 12
    assert len(asked) == len({c.hash for c in asked})


def interacting(config: Configuration) -> float:
    """A non-separable toy: big rings only pay off with large buffers and jumbo frames."""
    mtu, rx_ring, txqueuelen = (int(config[k]) for k in ("mtu", "rx_ring", "txqueuelen"))
    large = config["buffers"] == "large"
    score = mtu / 9000 + large
    if large and mtu == 9000:
        score += rx_ring / 2048
    return score - abs(txqueuelen - 2000) / 20000


def test_ofat_ends_at_a_coordinate_wise_optimum() -> None:
    space = load_space("benson-40g")
    engine = OfatEngine(space, seed=0, params={"center": "default"})
    drive(engine, interacting, 10_000, batch=7)
    assert engine.finished
    center = engine.center
    assert engine.centers[0] == space.default()
    center_value = interacting(center)
    for _, neighbour in space.neighbours(center):
        assert interacting(neighbour) <= center_value
    assert len(engine.centers) >= 3


def test_ofat_stops_after_one_round_without_improvement() -> None:
    space = load_space("benson-40g")
    baseline = space.profile("baseline")
    fitness = separable(space, baseline)  # the center is already the optimum
    engine = OfatEngine(space, seed=0)
    asked = drive(engine, fitness, 10_000, batch=50)
    assert engine.finished
    assert asked[0] == baseline
    assert len(asked) == 1 + len(space.neighbours(baseline))
    assert engine.centers == [baseline]


def test_ofat_reuses_scores_instead_of_asking_again() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)
    engine = OfatEngine(space, seed=0)
    first_round = engine.ask(1000)
    for config in first_round:
        engine.tell(config, Score(True, fitness(config)))
    second_round = engine.ask(1000)
    # The old center is a one-factor change of the new one and was measured already.
    assert engine.centers[0] not in second_round
    assert not set(first_round) & set(second_round)


def test_ofat_without_baseline_starts_from_the_first_start_configuration() -> None:
    space = load_space("linux-tcp")
    assert "baseline" not in space.profiles
    start = space.profile("tuned")
    engine = OfatEngine(space, seed=0, start=[start, space.default()])
    assert engine.center == start
    assert engine.ask(2) == [start, space.default()]


def test_ofat_max_rounds() -> None:
    space = load_space("benson-40g")
    engine = OfatEngine(space, seed=0, params={"max_rounds": 2})
    drive(engine, separable(space, BENSON_TARGET), 10_000, batch=10)
    assert engine.finished and len(engine.centers) == 2


def test_ofat_rejects_an_unknown_center_profile() -> None:
    with pytest.raises(InvalidInputError) as info:
        make_engine("ofat", load_space("benson-40g"), seed=0, params={"center": "fastest"})
    assert info.value.field == "engine_params.center"
    assert "baseline" in (info.value.allowed or "")
