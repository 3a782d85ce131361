"""The genetic algorithm: operators, elitism, parameters and progress on a toy fitness."""

from __future__ import annotations

import random

import pytest

from nictune.errors import InvalidInputError
from nictune.optimizer import GeneticEngine, Score, make_engine
from nictune.search_spaces import Value, load_space, space_from_dict

from ._toys import BENSON_TARGET, drive, separable
from .test_engine_contract import MIXED_SPACE


def test_ga_improves_and_reaches_the_known_optimum_region() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)
    start = [space.default(), space.profile("baseline")]
    engine = make_engine("ga", space, seed=7, start=start)
    assert isinstance(engine, GeneticEngine)
    best_after: dict[int, float] = {}
    told = 0
    while told < 400:
        for config in engine.ask(6):
            engine.tell(config, Score(True, fitness(config)))
            told += 1
            best = engine.best()
            assert best is not None
            best_after[engine.generation] = best[1].value
    # Generation 1 exists once generation 0 is fully measured.
    after_first = best_after[1]
    final = best_after[max(best_after)]
    assert max(best_after) >= 25
    assert after_first <= -4.0  # the start points and random samples are far off
    assert best_after[5] > after_first  # progress within a few generations
    assert final >= after_first + 4.0
    assert final >= -0.25  # at most one ordered knob one or two grid steps away
    # Same budget, same seed: random search stays far behind.
    rand = make_engine("random", space, seed=7, start=start)
    drive(rand, fitness, 400, 6)
    rand_best = rand.best()
    assert rand_best is not None and final > rand_best[1].value + 1.0


def test_elites_survive_without_being_measured_again() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)
    engine = GeneticEngine(space, seed=1, params={"population": 8, "elite": 2})
    for generation in range(6):
        assert engine.generation == generation
        current = engine.members
        ranked = sorted(current, key=lambda c: Score(True, fitness(c)), reverse=True)
        batch = engine.ask(100)
        # Generation 0 is measured in full; later ones only their 6 children.
        assert batch == (current if generation == 0 else current[2:])
        for config in batch:
            engine.tell(config, Score(True, fitness(config)))
        assert engine.members[:2] == ranked[:2]
        assert len(engine.members) == 8


def test_first_generation_is_start_then_unique_random_samples() -> None:
    space = load_space("benson-40g")
    start = [space.default(), space.profile("baseline")]
    engine = GeneticEngine(space, seed=3, start=start, params={"population": 10})
    first = engine.ask(50)
    assert first[:2] == start
    assert len(first) == 10 == len({c.hash for c in first})


def test_more_start_configurations_than_population_are_all_kept() -> None:
    space = load_space("benson-40g")
    start = [space.sample(random.Random(i)) for i in range(6)]
    engine = GeneticEngine(space, seed=0, start=start, params={"population": 4, "elite": 1})
    assert engine.ask(10)[:6] == start


def test_crossover_moves_conditional_knobs_with_their_parent() -> None:
    space = space_from_dict(MIXED_SPACE)
    engine = GeneticEngine(space, seed=0)
    a: dict[str, Value] = {"mode": "c", "level": 50, "sub": "q", "depth": 16,
                           "ratio": 1.0, "big": 10, "flag": True}
    b: dict[str, Value] = {"mode": "a", "level": 7, "sub": "p", "depth": 0,
                           "ratio": 2.0, "big": 20, "flag": False}
    saw_swap = saw_keep = False
    for _ in range(200):
        x, y = dict(a), dict(b)
        engine._crossover(x, y)
        for child in (x, y):
            source = a if child["mode"] == a["mode"] else b
            assert child["level"] == source["level"]
            assert child["sub"] == source["sub"] and child["depth"] == source["depth"]
        saw_swap |= x["mode"] == "a"
        saw_keep |= x["mode"] == "c"
    assert saw_swap and saw_keep


def test_children_are_valid_even_under_constraints() -> None:
    space = space_from_dict(MIXED_SPACE)
    engine = GeneticEngine(space, seed=9, params={"mutation_scale": 1.0, "mutpb": 1.0})
    configs = drive(engine, lambda c: float(c.get("depth", 0)) - float(c.get("level", 0)), 150)
    assert configs
    for config in configs:
        assert not space.violations(config)
        assert space.configuration(config.as_dict(), strict=True) == config


def test_mutation_probability_defaults_to_one_over_the_knobs() -> None:
    space = load_space("benson-40g")
    engine = GeneticEngine(space, seed=0)
    assert engine.mutpb == pytest.approx(1 / len(space.knobs))


def test_parameters_accept_numeric_strings() -> None:
    engine = make_engine("ga", load_space("benson-40g"), seed=0,
                         params={"population": "20", "cxpb": "0.5"})
    assert engine.params["population"] == 20 and engine.params["cxpb"] == 0.5


@pytest.mark.parametrize(
    "params",
    [
        {"population": 3},
        {"population": 2.5},
        {"population": "many"},
        {"population": True},
        {"elite": 12},
        {"elite": -1},
        {"tournament": 13},
        {"tournament": 0},
        {"cxpb": 1.5},
        {"mutpb": -0.1},
        {"mutation_scale": 0},
        {"mutation_scale": float("nan")},
        {"generations": 10},
    ],
)
def test_invalid_parameters_name_engine_params(params: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError) as info:
        make_engine("ga", load_space("benson-40g"), seed=0, params=params)
    assert info.value.field == f"engine_params.{next(iter(params))}"
    assert info.value.allowed
