"""Adaptive repeats: Student t, noise pooling, decisions, recommendation on the mean."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds import SimTestbed
from nictune.optimizer import Goal, RacingPolicy
from nictune.optimizer.racing import Interval, t_cdf, t_quantile
from nictune.search_spaces import load_space

GOAL = Goal.from_names(["throughput"])


def tp(*values: float) -> list[dict[str, float]]:
    return [{"throughput_gbps": v} for v in values]


def test_student_t_matches_tables() -> None:
    assert t_quantile(0.95, 5) == pytest.approx(2.5706, abs=1e-3)
    assert t_quantile(0.90, 10) == pytest.approx(1.8125, abs=1e-3)
    assert t_quantile(0.99, 2) == pytest.approx(9.9248, abs=1e-2)
    assert t_quantile(0.95, 1e6) == pytest.approx(1.95996, abs=1e-3)
    assert t_cdf(0.0, 3) == pytest.approx(0.5)


def test_noise_is_pooled_from_repeats_and_shrunk_to_the_prior() -> None:
    policy = RacingPolicy(GOAL, prior_cv=0.05, prior_dof=2)
    assert policy.stats.noise({"a": tp(10.0)})["objective"].cv == pytest.approx(0.05)
    rng = random.Random(1)
    trials = {str(i): tp(*(m * (1 + rng.gauss(0, 0.02)) for _ in range(4)))
              for i, m in enumerate([5.0, 10.0, 20.0, 40.0] * 10)}
    noise = policy.stats.noise(trials)["objective"]
    assert noise.measured_dof == 120
    assert 0.016 < noise.cv < 0.025
    report = policy.noise_report(trials)
    assert report["objective"]["measured_dof"] == 120.0


def test_noise_estimate_recovers_the_simulated_testbeds_noise() -> None:
    space = load_space("benson-40g")
    bed = SimTestbed(PROFILES["sim:benson-40g"], noise=0.03)
    wl = get_workload("tcp")
    trials = {}
    for i in range(15):
        config = space.sample(random.Random(i))
        trials[config.hash] = [s.metrics for s in bed.measure(space.settings(config), wl, 3, i).samples]
    cv = RacingPolicy(GOAL, prior_cv=0.10).stats.noise(trials)["objective"].cv
    assert 0.018 < cv < 0.045  # lognormal 3% noise, clipped at the wire rate


def test_clearly_worse_stops_close_repeats_and_limit_ends() -> None:
    policy = RacingPolicy(GOAL, max_repeats=3, prior_cv=0.03)
    trials = {"inc": tp(40.0, 40.2, 39.8), "bad": tp(30.0), "close": tp(39.9)}
    assert policy.decide(trials, "bad", "inc") == "stop"
    assert policy.decide(trials, "close", "inc") == "again"
    trials["close"] = tp(39.9, 40.1, 40.0)
    assert policy.decide(trials, "close", "inc") == "done"
    # The first configuration has no one to race against.
    assert policy.decide({"x": tp(1.0)}, "x", None) == "done"


def test_a_close_challenger_with_more_samples_asks_for_the_incumbent() -> None:
    policy = RacingPolicy(GOAL, max_repeats=4, prior_cv=0.03)
    trials = {"inc": tp(40.0), "c": tp(40.3, 39.9)}
    assert policy.decide(trials, "c", "inc") == "incumbent"


def test_clearly_better_needs_a_confirmation_then_is_done() -> None:
    policy = RacingPolicy(GOAL, max_repeats=5, prior_cv=0.02)
    trials = {"inc": tp(20.0, 20.1, 19.9), "new": tp(35.0)}
    assert policy.decide(trials, "new", "inc") == "again"
    trials["new"] = tp(35.0, 34.8)
    assert policy.decide(trials, "new", "inc") == "done"


def test_recommendation_uses_the_mean_not_the_luckiest_sample() -> None:
    policy = RacingPolicy(GOAL, prior_cv=0.03)
    # "lucky" has the single best sample; "solid" the best lower confidence bound.
    trials = {"lucky": tp(40.6), "solid": tp(39.8, 40.0, 40.1), "worse": tp(37.0, 39.0)}
    assert policy.recommend(trials) == "solid"
    assert policy.final_repeats(trials, "solid") == 0
    assert policy.final_repeats(trials, "lucky") == 2
    summary = policy.summary(trials, "solid")
    iv = summary["interval"]
    assert iv["low"] < 39.97 < iv["high"] and iv["n"] == 3
    assert "±" in summary["text"] and "Gbit/s" in summary["text"]


def test_constraints_stop_sure_violators_and_prefer_feasible_means() -> None:
    goal = Goal.from_names(["throughput"], ["loss<=0.1"])
    policy = RacingPolicy(goal, prior_cv=0.05)
    ok = [{"throughput_gbps": 7.0, "loss_pct": 0.02}] * 2
    lossy = [{"throughput_gbps": 9.0, "loss_pct": 5.0}]
    trials = {"ok": ok, "lossy": lossy}
    assert policy.decide(trials, "lossy", "ok") == "stop"
    assert policy.recommend(trials) == "ok"
    assert policy.recommend({"lossy": lossy}) == "lossy"  # nothing feasible: least violation
    assert policy.recommend({}) is None


def test_minimised_objectives_race_on_the_oriented_value() -> None:
    goal = Goal.from_names(["interrupts"])
    policy = RacingPolicy(goal, prior_cv=0.02)
    trials = {"few": [{"interrupts_per_gb": 1000.0}] * 3, "many": [{"interrupts_per_gb": 5000.0}]}
    assert policy.decide(trials, "many", "few") == "stop"
    assert policy.recommend(trials) == "few"
    assert policy.summary(trials, "few")["interval"]["mean"] == pytest.approx(1000.0)


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError):
        RacingPolicy(GOAL, max_repeats=0)
    with pytest.raises(ValueError):
        RacingPolicy(GOAL, confidence=1.0)
    with pytest.raises(ValueError):
        RacingPolicy(GOAL, final_race=-1)


def test_recommendation_prefers_surely_feasible_to_feasible_on_the_mean_only() -> None:
    goal = Goal.from_names(["throughput"], ["loss<=0.1"])
    policy = RacingPolicy(goal, prior_cv=0.05)
    # "edge" is faster and feasible on its mean, but its loss interval straddles the limit.
    edge = [{"throughput_gbps": 8.0, "loss_pct": 0.098}] * 3
    safe = [{"throughput_gbps": 7.6, "loss_pct": 0.04}] * 3
    assert policy.stats.feasibility(edge, policy.stats.noise({"edge": edge, "safe": safe})) == "maybe"
    assert policy.recommend({"edge": edge, "safe": safe}) == "safe"
    assert policy.recommend({"edge": edge}) == "edge"  # still better than nothing


def test_a_challenger_behind_the_incumbent_on_its_first_sample_stops() -> None:
    # race_confidence 0.1: repeats go to challengers about as good as the incumbent or better.
    policy = RacingPolicy(GOAL, prior_cv=0.03)
    trials = {"inc": tp(40.0, 40.2, 39.8), "behind": tp(39.0), "level": tp(40.0)}
    assert policy.decide(trials, "behind", "inc") == "stop"
    assert policy.decide(trials, "level", "inc") == "again"


def test_finalists_are_the_best_three_with_one_measurement() -> None:
    policy = RacingPolicy(GOAL)
    trials = {"a": tp(30.0), "b": tp(38.0), "c": tp(36.0), "d": tp(37.0), "e": tp(20.0)}
    assert policy.finalists(trials) == ["b", "d", "c"]
    # A configuration measured twice already (cached, or raced before a resume) is not
    # measured again, and does not make room for the fourth.
    trials["d"] = tp(37.0, 37.5)
    assert policy.finalists(trials) == ["b", "c"]
    assert policy.finalists({"a": tp(30.0)}) == ["a"]
    assert policy.finalists({}) == []
    # With two measurements d has the best lower bound: the race of one has nothing to do.
    assert policy.recommend(trials) == "d" and RacingPolicy(GOAL, final_race=1).finalists(trials) == []
    assert RacingPolicy(GOAL, final_race=5).finalists(trials) == ["b", "c", "a", "e"]
    assert RacingPolicy(GOAL, max_repeats=1).finalists(trials) == []  # --repeats 1: no repeats at all


def test_recommendation_does_not_trade_most_of_the_throughput_for_a_loss_of_exactly_zero() -> None:
    """The runs a real veth job (udp-jumbo, loss <= 0.1, budget 30, seed 3) measured three
    times: loss noise is relative, so only a loss-free configuration is ever surely within
    the limit; 10.2 Gbit/s at 0.050 % is the answer, not 2.7 Gbit/s at 0 %."""
    goal = Goal.from_names(["throughput"], ["loss<=0.1"])
    policy = RacingPolicy(goal, final_race=1)

    def runs(gbps: list[float], loss: list[float]) -> list[dict[str, float]]:
        return [{"throughput_gbps": t, "loss_pct": x} for t, x in zip(gbps, loss, strict=True)]

    trials = {"edge": runs([11.1, 10.0, 11.0], [0.028, 0.105, 0.178]),
              "fast": runs([10.5, 9.8, 10.3], [0.005, 0.012, 0.132]),
              "lossless": runs([2.8, 2.8, 2.5], [0.0, 0.0, 0.0])}
    noise = policy.stats.noise(trials)
    assert policy.stats.feasibility(trials["fast"], noise) == "maybe"
    assert policy.stats.feasible_probability(trials["lossless"], noise) == 1.0
    assert 0.9 < policy.stats.feasible_probability(trials["fast"], noise) < 1.0
    assert policy.stats.feasible_probability(trials["edge"], noise) < 0.6  # mean 0.104: breaks it on the mean
    assert policy.recommend(trials) == "fast"


def test_finalists_put_the_configurations_feasible_on_their_means_first() -> None:
    goal = Goal.from_names(["throughput"], ["loss<=0.1"])
    policy = RacingPolicy(goal)
    trials = {"fast-lossy": [{"throughput_gbps": 9.0, "loss_pct": 5.0}],
              "ok": [{"throughput_gbps": 7.0, "loss_pct": 0.0}],
              "slow": [{"throughput_gbps": 5.0, "loss_pct": 0.0}]}
    assert policy.finalists(trials)[:2] == ["ok", "slow"]


def test_history_ranking_puts_a_mean_confirmed_by_repeats_above_one_lucky_run() -> None:
    policy = RacingPolicy(GOAL)
    noise = policy.stats.noise({"a": tp(39.0, 40.2, 39.5), "b": tp(38.0, 37.1)})
    confirmed = policy.aggregate_key({"throughput_gbps": 39.5}, 3, noise)
    lucky = policy.aggregate_key({"throughput_gbps": 39.9}, 1, noise)
    clearly_better = policy.aggregate_key({"throughput_gbps": 45.0}, 1, noise)
    assert lucky < confirmed < clearly_better
    iv = policy.stats.mean_interval(39.5, 3, noise["objective"])
    assert confirmed == (1, iv.low, 39.5) and iv.low < 39.5 < iv.high and iv.n == 3


def test_history_ranking_of_a_minimised_objective_uses_the_upper_bound() -> None:
    policy = RacingPolicy(Goal.from_names(["cpu"], ["throughput>=10"]))
    noise = policy.stats.noise({})
    confirmed = policy.aggregate_key({"cpu_rx_pct": 50.0, "throughput_gbps": 20.0}, 3, noise)
    lucky = policy.aggregate_key({"cpu_rx_pct": 49.0, "throughput_gbps": 20.0}, 1, noise)
    infeasible = policy.aggregate_key({"cpu_rx_pct": 5.0, "throughput_gbps": 9.0}, 3, noise)
    assert infeasible < lucky < confirmed
    shown = policy.stats.shown(policy.stats.mean_interval(-50.0, 3, noise["objective"]))
    assert shown.mean == 50.0 and shown.low < 50.0 < shown.high


def test_noise_ignores_means_whose_square_underflows() -> None:
    policy = RacingPolicy(Goal.from_names(["throughput"], ["loss<=0.1"]))
    trials = {"a": [{"throughput_gbps": 10.0, "loss_pct": 1e-200}, {"throughput_gbps": 10.2, "loss_pct": 2e-200}]}
    noise = policy.stats.noise(trials)
    assert noise["loss_pct"].measured_dof == 0 and noise["objective"].measured_dof == 1


@pytest.mark.parametrize(("interval", "text"), [
    (Interval(39.4812, 38.1362, 40.8262, 3, 0.9), "39.48 ± 1.3 (n=3, 90% CI)"),
    (Interval(3166.2, 3036.2, 3296.2, 3, 0.9), "3,166 ± 130 (n=3, 90% CI)"),  # was "3166 ± 1.3e+02"
    (Interval(31660.0, 30000.0, 33320.0, 2, 0.9), "31,660 ± 1,660 (n=2, 90% CI)"),  # was "3.166e+04 ± ..."
    (Interval(0.00225, 0.002, 0.0025, 3, 0.9), "0.00225 ± 0.00025 (n=3, 90% CI)"),
])
def test_an_interval_prints_without_exponents_for_ordinary_numbers(interval: Interval, text: str) -> None:
    assert str(interval) == text


# ------------------------------------------------------------------ the final race (issue 34)
LOSS_GOAL = Goal.from_names(["throughput"], ["loss<=0.1"])


def run_race(policy: RacingPolicy, trials: dict[str, list[dict[str, float]]],
             draw: Callable[[str], dict[str, float]]) -> tuple[str | None, bool, int]:
    """The job loop's final race on plain samples: finalists once more, then race_step to
    the end or the cap. Returns (recommendation, decided, measurements after the finalists)."""
    for key in policy.finalists(trials):
        trials[key].append(draw(key))
    spent = 0
    while True:
        step = policy.race_step(trials)
        if step is None:
            return policy.final_choice(trials, True), True, spent
        if spent >= policy.race_cap:
            return policy.final_choice(trials, False), False, spent
        key, times = step
        for _ in range(min(times, policy.race_cap - spent)):
            trials[key].append(draw(key))
            spent += 1


def test_the_race_measures_the_new_recommendation_after_it_moves() -> None:
    """Issue 34 on plain samples: the recommended configuration gets its third run, it comes
    out low, another takes its place, and that one is measured to three runs too (the race
    used to stop here with the newcomer measured once)."""
    policy = RacingPolicy(GOAL, prior_cv=0.05)
    trials = {"a": tp(10.0, 10.2), "b": tp(10.3), "c": tp(7.0)}
    futures = {"a": [8.0], "b": [10.3, 10.4]}
    key, times = policy.race_step(trials) or ("", 0)
    assert (key, times) == ("a", 1)  # the recommendation first, to its three runs
    trials["a"] += tp(*futures["a"])
    decided = None
    for _ in range(10):
        step = policy.race_step(trials)
        if step is None:
            decided = policy.final_choice(trials, True)
            break
        key, times = step
        for _ in range(times):
            trials[key] += tp(futures[key].pop(0))
    assert decided == "b" and len(trials["b"]) == 3


def test_a_challenger_that_could_still_be_better_is_measured_before_the_race_ends() -> None:
    policy = RacingPolicy(GOAL, prior_cv=0.03)
    trials = {"inc": tp(10.1, 9.9, 10.0), "lucky": tp(10.15), "far": tp(8.0), "done": tp(9.8, 10.0, 9.9)}
    assert policy.recommend(trials) == "inc"  # best lower bound: three runs
    assert policy.challengers(trials, "inc") == ["lucky"]  # 10.15 once could be better; 8.0 not
    assert policy.race_step(trials) == ("lucky", 1)
    trials["lucky"] += tp(9.5)
    assert policy.race_step(trials) is None  # 9.95 on two runs: decided, "inc" stays
    assert policy.final_choice(trials, True) == "inc"


def test_a_race_cut_short_recommends_among_the_configurations_with_their_runs() -> None:
    policy = RacingPolicy(GOAL, prior_cv=0.03)
    trials = {"solid": tp(10.0, 10.1, 9.9), "new": tp(10.9, 10.8)}
    assert policy.recommend(trials) == "new" and policy.race_step(trials) == ("new", 1)
    assert policy.final_choice(trials, False) == "solid"  # never the one measured twice
    assert policy.final_choice({"x": tp(5.0)}, False) == "x"  # nothing complete: the best there is


def test_infeasible_challengers_and_an_infeasible_incumbent_race_no_one_else() -> None:
    policy = RacingPolicy(LOSS_GOAL, prior_cv=0.05)
    trials = {"ok": [{"throughput_gbps": 10.0, "loss_pct": 0.0}] * 3,
              "fast_lossy": [{"throughput_gbps": 12.0, "loss_pct": 5.0}]}
    assert policy.challengers(trials, "ok") == []
    bad = {"a": [{"throughput_gbps": 10.0, "loss_pct": 3.0}] * 3, "b": [{"throughput_gbps": 11.0, "loss_pct": 4.0}]}
    assert policy.challengers(bad, "a") == []


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.sampled_from([0.02, 0.1, 0.3]),
       st.integers(min_value=1, max_value=12), st.booleans(), st.integers(min_value=2, max_value=4))
def test_property_a_completed_race_recommends_a_configuration_with_its_repeats(
        seed: int, cv: float, configs: int, constrained: bool, repeats: int) -> None:
    """Random race inputs: true means close together (so the recommendation moves), noise from
    low to very high, a loss constraint near the noise. Whenever some configuration has its
    repeats at the end, the recommendation has them too; a race that is not decided says so
    (it hit its cap)."""
    rng = random.Random(seed)
    goal = LOSS_GOAL if constrained else GOAL
    policy = RacingPolicy(goal, max_repeats=repeats, prior_cv=0.05, race_cap=12)
    truth = {f"c{i}": (10.0 * (1 + rng.uniform(-0.05, 0.05)), rng.uniform(0.0, 0.2)) for i in range(configs)}

    def draw(key: str) -> dict[str, float]:
        mean, loss = truth[key]
        return {"throughput_gbps": mean * math.exp(rng.gauss(0.0, cv)),
                "loss_pct": loss * math.exp(rng.gauss(0.0, 2 * cv))}

    trials = {key: [draw(key)] for key in truth}
    rec, decided, spent = run_race(policy, trials, draw)
    assert rec is not None and spent <= policy.race_cap
    if decided or any(len(v) >= repeats for v in trials.values()):
        assert len(trials[rec]) >= repeats
    if decided:
        assert policy.race_step(trials) is None
    else:
        assert spent == policy.race_cap


def test_the_final_race_grows_with_the_budget_one_finalist_per_20_trials_up_to_3() -> None:
    sizes = {budget: RacingPolicy.final_race_for(budget) for budget in (1, 10, 20, 30, 39, 40, 59, 60, 200)}
    assert sizes == {1: 1, 10: 1, 20: 1, 30: 1, 39: 1, 40: 2, 59: 2, 60: 3, 200: 3}
    from nictune.jobs.runner import policy_for

    assert policy_for(GOAL, 3, 30).final_race == 1 and policy_for(GOAL, 3, 60).final_race == 3
    assert policy_for(GOAL, 3).final_race == RacingPolicy.final_race == 3
