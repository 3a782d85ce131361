"""NSGA-II: the Pareto front improves, stays non-dominated and feasible; DEAP selection."""

from __future__ import annotations

import random

from nictune.optimizer import MultiScore, Nsga2Engine, Score, deap_adapter, make_engine
from nictune.optimizer.pareto import dominates, hypervolume_2d, vector_of
from nictune.search_spaces import Configuration, load_space

from ._toys import BENSON_TARGET, separable

SPACE = load_space("benson-40g")
#: A second target that disagrees with BENSON_TARGET on most knobs: the objectives conflict.
OTHER_TARGET = dict(SPACE.profile("baseline")) | {"mtu": 1500, "buffers": "small", "pause": True}
F1 = separable(SPACE, BENSON_TARGET)
F2 = separable(SPACE, OTHER_TARGET)


def two_objectives(config: Configuration) -> MultiScore:
    return MultiScore(True, F1(config), 0.0, (F1(config), F2(config)))


def run(engine: Nsga2Engine, budget: int, score=two_objectives) -> None:  # type: ignore[no-untyped-def]
    told = 0
    while told < budget and not engine.finished:
        batch = engine.ask(8)
        if not batch:
            break
        for config in batch:
            engine.tell(config, score(config))
            told += 1


def front_volume(engine: Nsga2Engine) -> float:
    return hypervolume_2d([vector_of(s) for _, s in engine.pareto_front()], (-20.0, -20.0))


def test_front_improves_and_is_mutually_non_dominated() -> None:
    engine = make_engine("nsga2", SPACE, seed=3, start=[SPACE.default(), SPACE.profile("baseline")])
    assert isinstance(engine, Nsga2Engine)
    run(engine, engine.population)
    first = front_volume(engine)
    run(engine, 200)
    final = front_volume(engine)
    assert engine.generation >= 10
    assert final > first * 1.2
    front = engine.pareto_front()
    vectors = [vector_of(s) for _, s in front]
    assert len(front) >= 3
    for a in vectors:
        assert not any(dominates(b, a) for b in vectors)
    told = [vector_of(s) for s in engine._scores.values()]
    for v in told:  # nothing told dominates a front member
        assert not any(dominates(v, f) for f in vectors)


def test_infeasible_configurations_never_reach_the_front() -> None:
    def score(config: Configuration) -> Score:
        base = two_objectives(config)
        if config["mtu"] == 9000:
            return MultiScore(False, base.value, 1.0, base.values)
        return base

    engine = make_engine("nsga2", SPACE, seed=1, start=[SPACE.profile("baseline")])
    run(engine, 120, score)
    front = engine.pareto_front()
    assert front and all(c["mtu"] != 9000 and s.feasible for c, s in front)
    # Deb's rule keeps the population feasible once feasible configurations exist.
    survivors = [m.config for m in engine._survivors]
    assert sum(c["mtu"] != 9000 for c in survivors) >= len(survivors) - 1


def test_single_objective_scores_work_and_improve() -> None:
    engine = make_engine("nsga2", SPACE, seed=2)
    run(engine, 150, lambda c: Score(True, F1(c)))
    best = engine.best()
    assert best is not None and best[1].value > -3.0
    assert len(engine.pareto_front()) >= 1


def test_dcd_tournament_draws_from_the_given_generator_only() -> None:
    inds = [deap_adapter.make_mo_individual({"i": i}, (float(i), float(-i))) for i in range(8)]
    survivors = deap_adapter.select_nsga2(inds, 8)
    state = random.getstate()
    a = [dict(x)["i"] for x in deap_adapter.select_tournament_dcd(survivors, 8, random.Random(5))]
    b = [dict(x)["i"] for x in deap_adapter.select_tournament_dcd(survivors, 8, random.Random(5))]
    assert a == b and len(a) == 8
    assert random.getstate() == state
    # On a single front of 8 the NSGA-II cut keeps the extremes.
    kept = [dict(x)["i"] for x in deap_adapter.select_nsga2(inds, 4)]
    assert 0 in kept and 7 in kept
