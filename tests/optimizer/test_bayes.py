"""The Bayesian engine: progress on toys and on the noise-free simulator, batches,
warm start, constraints, the TPE surrogate and its parameters."""

from __future__ import annotations

import random
import statistics

import pytest

from nictune.errors import InvalidInputError
from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds import SimTestbed
from nictune.optimizer import BayesEngine, Goal, Score, make_engine
from nictune.optimizer.acquisition import normal_scores
from nictune.optimizer.diagnosis import relieved
from nictune.optimizer.encoding import Encoder, enumerate_space
from nictune.search_spaces import Configuration, load_space

from ._toys import BENSON_TARGET, drive, separable
from .test_engine_contract import MIXED_SPACE


def best_after(engine_name: str, seed: int, budget: int, fitness, **kwargs) -> float:  # type: ignore[no-untyped-def]
    space = load_space("benson-40g")
    engine = make_engine(engine_name, space, seed=seed, **kwargs)
    drive(engine, fitness, budget, batch=1)
    best = engine.best()
    assert best is not None
    return best[1].value


@pytest.mark.slow
def test_bayes_beats_random_search_on_a_separable_toy() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)
    start = [space.default(), space.profile("baseline")]
    bayes = [best_after("bayes", s, 60, fitness, start=start) for s in range(2)]
    rand = [best_after("random", s, 60, fitness, start=start) for s in range(2)]
    assert statistics.fmean(bayes) > statistics.fmean(rand) + 1.0


@pytest.mark.slow
def test_bayes_finds_a_near_optimal_udp_configuration_on_the_noise_free_model() -> None:
    space = load_space("benson-40g")
    bed = SimTestbed(PROFILES["sim:benson-40g"], noise=0.0)
    goal = Goal.from_names(["throughput"], ["loss<=0.1"])
    udp = get_workload("udp")
    engine = make_engine("bayes", space, seed=1, start=[space.default(), space.profile("baseline")])
    for _ in range(45):
        for config in engine.ask(1):
            engine.tell(config, goal.score(bed.clean(space.settings(config), udp)))
    best = engine.best()
    assert best is not None and best[1].feasible  # the baseline itself loses 0.45%
    assert best[1].value > 6.5  # the model's optimum is ~7.7 Gbps; the default's 2.9 is infeasible


def test_a_round_holds_batch_configurations_and_waits_for_its_scores() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)
    engine = BayesEngine(space, seed=0, params={"batch": 3, "n_init": 2}, start=[space.default()])
    first = engine.ask(10)
    assert len(first) == 3  # the start configuration and n_init initial ones
    assert engine.ask(10) == []  # nothing new until the round is told
    for config in first:
        engine.tell(config, Score(True, fitness(config)))
    second = engine.ask(2)
    assert len(second) == 2
    assert engine.ask(5) != [] and engine.ask(5) == []  # the third of the round, then wait
    assert len({c.hash for c in first + second}) == 5


@pytest.mark.slow
def test_warm_start_feeds_the_model_and_is_never_proposed_again() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)
    rng = random.Random(5)
    history = [space.sample(rng) for _ in range(40)]
    other = load_space("ixgbe-numa").default()
    warm = BayesEngine(space, seed=3, params={"n_init": 0})
    added = warm.warm_start([(c, Score(True, fitness(c))) for c in history] + [(other, Score(True, 0.0))])
    assert added == 40
    cold = BayesEngine(space, seed=3, params={"n_init": 0})
    cold.warm_start([(c, Score(True, fitness(c))) for c in history[:2]])
    warm_asked = drive(warm, fitness, 10, batch=1)
    cold_asked = drive(cold, fitness, 10, batch=1)
    assert not {c.hash for c in warm_asked} & {c.hash for c in history}
    # The model learnt from the history: its proposals are better than the history's mean
    # and than those of an engine that saw two trials only.
    history_mean = statistics.fmean(fitness(c) for c in history)
    assert statistics.fmean(fitness(c) for c in warm_asked) > history_mean + 1.0
    assert statistics.fmean(fitness(c) for c in warm_asked) > statistics.fmean(fitness(c) for c in cold_asked)


@pytest.mark.slow
def test_infeasible_region_is_left_for_the_feasible_one() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)

    def score(config: Configuration) -> Score:
        missing = (config["mtu"] != 9000) + (config["buffers"] != "large") + (config["pause"] is True)
        if missing:
            return Score(False, fitness(config), violation=float(missing))
        return Score(True, fitness(config))

    engine = make_engine("bayes", space, seed=2, start=[space.default()])
    told = 0
    while told < 35:
        for config in engine.ask(1):
            engine.tell(config, score(config))
            told += 1
    best = engine.best()
    assert best is not None and best[1].feasible


@pytest.mark.slow
def test_tpe_surrogate_proposes_valid_unique_configurations_deterministically() -> None:
    space = load_space("benson-40g")
    fitness = separable(space, BENSON_TARGET)

    def run() -> list[str]:
        engine = make_engine("bayes", space, seed=4, params={"surrogate": "tpe", "batch": 2},
                             start=[space.default()])
        return [c.hash for c in drive(engine, fitness, 24, batch=3)]

    first = run()
    assert len(first) == 24 == len(set(first))
    assert run() == first


def test_encoder_one_hot_for_categories_and_positions_for_ordered_knobs() -> None:
    space = load_space("benson-40g")
    enc = Encoder(space)
    names = [n for n, _ in enc.columns]
    assert names.count("rx_mode") == 4 and names.count("app_cpu") == 4
    assert names.count("mtu") == 1 and names.count("buffers") == 1
    row = enc.encode(space.profile("baseline"))
    assert row.shape == (enc.width,)
    assert ((row >= 0) & (row <= 1)).all()
    assert row[names.index("mtu")] == 1.0  # 9000: the last of [1500, 4000, 9000]


def test_small_spaces_are_enumerated_and_normal_scores_rank() -> None:
    configs = enumerate_space(load_space("ixgbe-numa"))
    assert configs is not None and len(configs) == 8
    assert enumerate_space(load_space("benson-40g")) is None
    scores = normal_scores(__import__("numpy").array([3.0, 1.0, 2.0, 2.0]))
    assert scores[1] < scores[2] == scores[3] < scores[0]


def test_mixed_space_with_floats_and_nested_conditions() -> None:
    from nictune.search_spaces import space_from_dict

    space = space_from_dict(MIXED_SPACE)
    engine = make_engine("bayes", space, seed=0, start=[space.default()])
    asked = drive(engine, lambda c: -abs(float(c["ratio"]) - 2.0) - abs(int(c["big"]) - 5000) / 1e5, 25)
    assert len(asked) == 25
    for config in asked:
        assert space.configuration(config.as_dict(), strict=True) == config


@pytest.mark.parametrize("params", [{"surrogate": "forest"}, {"batch": 0}, {"n_init": -1}])
def test_invalid_parameters_are_rejected(params: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError) as info:
        make_engine("bayes", load_space("benson-40g"), seed=0, params=params)
    assert info.value.field == f"engine_params.{next(iter(params))}"


def test_the_first_round_is_the_starts_the_relieved_default_and_a_space_filling_design() -> None:
    space = load_space("benson-40g")
    starts = [space.default(), space.profile("baseline")]
    engine = BayesEngine(space, seed=0, start=starts)
    assert engine.n_init == 6 and engine.cycle == ("diagnose", "local")
    first = engine.ask(20)
    assert len(first) == 2 + 6  # nothing more until the first round is told
    assert [c.hash for c in first[:2]] == [c.hash for c in starts]
    bold = relieved(space, space.default())
    assert bold is not None and first[2].hash == bold.hash
    assert len({c.hash for c in first}) == len(first)
    # The design does not depend on the engine's random generator, only on the seed.
    again = BayesEngine(space, seed=0, start=starts).ask(20)
    assert [c.hash for c in again] == [c.hash for c in first]
    given = BayesEngine(space, seed=0, params={"rounds": "coordinate,global", "n_init": 4, "hints": 0},
                        start=starts)
    assert given.n_init == 4 and given.cycle == ("coordinate", "global")
    assert bold.hash not in {c.hash for c in given.ask(20)}


def test_unknown_round_kinds_are_rejected() -> None:
    with pytest.raises(InvalidInputError) as info:
        make_engine("bayes", load_space("benson-40g"), seed=0, params={"rounds": "global,sideways"})
    assert info.value.field == "engine_params.rounds"


def test_sparsity_penalty_gradient_matches_finite_differences() -> None:
    import numpy as np

    from nictune.optimizer.gp import sparsity_penalty

    log_scales = np.array([-0.7, 0.0, 1.2, 2.5])
    value, grad = sparsity_penalty(log_scales, tau=1.0)
    for i in range(4):
        step = np.zeros_like(log_scales)
        step[i] = 1e-6
        numeric = (sparsity_penalty(log_scales + step, 1.0)[0] - sparsity_penalty(log_scales - step, 1.0)[0]) / 2e-6
        assert grad[i] == pytest.approx(numeric, rel=1e-5, abs=1e-8)
    # Longer length scales cost less: the prior favours "this knob does not matter".
    assert sparsity_penalty(log_scales + 1.0, 1.0)[0] < value


def test_likelihood_gradient_matches_finite_differences() -> None:
    import numpy as np

    from nictune.optimizer.gp import GaussianProcess

    rng = np.random.default_rng(1)
    x = rng.random((25, 6))
    y = np.sin(3.0 * x[:, 0]) + 0.1 * rng.standard_normal(25)
    gp = GaussianProcess(6)
    theta = gp.theta + rng.normal(0.0, 0.3, len(gp.theta))
    ys = (y - y.mean()) / y.std()
    _, grad = gp.log_marginal_likelihood(theta, x, ys)
    for i in range(len(theta)):
        step = np.zeros_like(theta)
        step[i] = 1e-6
        numeric = (gp.log_marginal_likelihood(theta + step, x, ys)[0]
                   - gp.log_marginal_likelihood(theta - step, x, ys)[0]) / 2e-6
        assert grad[i] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_the_gp_tells_the_knobs_that_matter_from_the_ones_that_do_not() -> None:
    import numpy as np

    from nictune.optimizer.gp import GaussianProcess

    gp = GaussianProcess(30)
    rng = np.random.default_rng(3)
    x = rng.random((20, 30))
    y = np.sin(3.0 * x[:, 4]) + x[:, 7] + 0.02 * rng.standard_normal(20)  # columns 4 and 7 matter
    gp.fit(x, y, refit=True)
    scales = gp.length_scales
    assert set(np.argsort(scales)[:2]) == {4, 7}
    assert np.median(np.delete(scales, [4, 7])) > 40.0  # the rest: "does not matter"
    xt = rng.random((100, 30))
    mu, sd = gp.predict(xt)
    assert np.corrcoef(mu, np.sin(3.0 * xt[:, 4]) + xt[:, 7])[0, 1] > 0.9
    assert np.all(sd > 0)


def test_without_evidence_the_prior_alone_makes_every_knob_irrelevant() -> None:
    import numpy as np

    from nictune.optimizer.gp import LENGTH_SCALE_START, GaussianProcess

    gp = GaussianProcess(4)
    rng = np.random.default_rng(0)
    x = rng.random((12, 4))
    gp.fit(x, 0.01 * rng.standard_normal(12), refit=True)  # noise only: nothing to explain
    assert np.all(gp.length_scales > LENGTH_SCALE_START)  # every one grew from where it started
    assert gp.fitted_at == 12
