"""The bayes engine's expected-improvement stopping rule (``ei_stop``, ``ei_rounds``)."""

from __future__ import annotations

import numpy as np
import pytest

from nictune.errors import InvalidInputError
from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds import SimTestbed
from nictune.optimizer import Engine, Goal, make_engine
from nictune.optimizer.acquisition import expected_gain, expected_improvement, value_map
from nictune.search_spaces import Configuration, load_space

SPACE = load_space("benson-40g")
BED = SimTestbed(PROFILES["sim:benson-40g"], noise=0.0)
GOAL = Goal.from_names(["throughput"])
UDP = get_workload("udp")


def run(params: dict[str, object], budget: int = 80, seed: int = 1) -> tuple[Engine, list[Configuration]]:
    """Drive a bayes engine on the noise-free model (UDP throughput) until it stops or ``budget``."""
    engine = make_engine("bayes", SPACE, seed=seed, params=params, start=[SPACE.default()])
    told: list[Configuration] = []
    while len(told) < budget and not engine.finished:
        batch = engine.ask(1)
        if not batch:
            break
        for config in batch:
            engine.tell(config, GOAL.score(BED.clean(SPACE.settings(config), UDP)))
            told.append(config)
    return engine, told


def test_the_rule_stops_the_engine_with_a_reason_and_a_sentence() -> None:
    engine, told = run({"ei_stop": 0.01, "ei_rounds": 3})
    assert engine.finished and len(told) < 80
    assert engine.stop_reason == "expected-improvement"
    assert engine.ask(1) == []
    detail = engine.stop_detail or ""
    assert "expected less than 0.01 of the best value (1.0%)" in detail and "3 model rounds in a row" in detail
    assert engine.describe_state()["stopped_by_expected_improvement"] is True


@pytest.mark.slow
def test_the_rule_is_off_by_default_and_a_higher_bar_stops_no_later() -> None:
    default, told = run({}, budget=40)
    assert not default.finished and default.stop_reason is None and len(told) == 40
    strict, strict_told = run({"ei_stop": 0.01, "ei_rounds": 3})
    loose, loose_told = run({"ei_stop": 0.05, "ei_rounds": 3})
    assert len(loose_told) <= len(strict_told)
    assert loose.stop_reason == strict.stop_reason == "expected-improvement"


def test_a_replay_of_the_same_tells_stops_at_the_same_point() -> None:
    engine, told = run({"ei_stop": 0.01, "ei_rounds": 2}, seed=4)
    again, told_again = run({"ei_stop": 0.01, "ei_rounds": 2}, seed=4)
    assert [c.hash for c in told] == [c.hash for c in told_again]
    assert engine.stop_reason == again.stop_reason == "expected-improvement"


def test_the_rule_needs_the_gp_surrogate() -> None:
    with pytest.raises(InvalidInputError) as caught:
        make_engine("bayes", SPACE, seed=1, params={"surrogate": "tpe", "ei_stop": 0.01})
    assert caught.value.field == "engine_params.ei_stop"
    for bad in ({"ei_stop": -0.1}, {"ei_stop": 2}, {"ei_rounds": 0}):
        with pytest.raises(InvalidInputError) as caught:
            make_engine("bayes", SPACE, seed=1, params=bad)
        assert caught.value.field == f"engine_params.{next(iter(bad))}"


def test_the_gain_is_in_the_objective_units() -> None:
    # A linear copula (value = 2 * score + 10): the gain is twice the EI on the normal scores.
    scores = np.linspace(-1.5, 1.5, 7)
    vmap = value_map(scores, 2.0 * scores + 10.0)
    for mu, sd in ((0.2, 0.5), (1.4, 0.3), (-1.0, 1.0)):
        gain, incumbent = expected_gain(mu, sd, 1.5, vmap)
        ei = float(expected_improvement(np.array([mu]), np.array([sd]), 1.5)[0])
        assert incumbent == pytest.approx(13.0)
        assert gain == pytest.approx(2.0 * ei, rel=1e-3)
