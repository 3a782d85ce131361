"""Short runs first: the screening rule (pure logic, no job, no testbed)."""

from __future__ import annotations

import math
import random

import pytest

from nictune.optimizer.fidelity import ShortRunRule, interval_sigma


def test_without_pairs_the_prior_scales_white_noise_and_assumes_no_bias() -> None:
    rule = ShortRunRule(short_s=2.0, full_s=10.0)
    cal = rule.calibrate([], full_cv=0.03)
    assert cal.bias == 1.0 and cal.pairs == 0 and cal.dof == rule.prior_dof
    short_cv = 0.03 * math.sqrt(5)
    assert cal.sigma == pytest.approx(math.sqrt(math.log1p(short_cv**2) + math.log1p(0.03**2)))


def test_pairs_estimate_the_bias_and_shrink_it_towards_none() -> None:
    rule = ShortRunRule(short_s=2.0, full_s=10.0)
    pairs = [(9.0, 10.0)] * 20  # short runs read 10 % low
    cal = rule.calibrate(pairs, full_cv=0.03)
    assert cal.pairs == 20
    assert 1.0 < cal.bias < 10 / 9  # shrunk by the prior's weight
    assert cal.bias == pytest.approx(math.exp(20 * math.log(10 / 9) / 22))
    # Identical pairs: the spread is the prior's share only, shrinking as pairs come in.
    assert cal.sigma < rule.calibrate(pairs[:2], full_cv=0.03).sigma


def test_a_short_result_far_below_the_incumbent_stays_short_and_a_close_one_earns_its_full_run() -> None:
    rule = ShortRunRule(short_s=2.0, full_s=10.0)
    cal = rule.calibrate([(10.0, 10.0)] * 10, full_cv=0.03)
    assert not rule.screen(5.0, incumbent_low=30.0, calibration=cal).promote
    assert rule.screen(29.5, incumbent_low=30.0, calibration=cal).promote
    assert rule.screen(31.0, incumbent_low=30.0, calibration=cal).promote


def test_without_an_incumbent_every_configuration_earns_its_full_run() -> None:
    rule = ShortRunRule(short_s=1.0, full_s=10.0)
    cal = rule.calibrate([], full_cv=0.05)
    assert rule.screen(0.001, incumbent_low=None, calibration=cal).promote
    assert rule.screen(0.001, incumbent_low=-math.inf, calibration=cal).promote


def test_minimised_objectives_are_oriented_negative_and_judged_the_same_way() -> None:
    rule = ShortRunRule(short_s=2.0, full_s=10.0)
    cal = rule.calibrate([(-100.0, -100.0)] * 10, full_cv=0.03)
    # interrupts: the incumbent costs 100 at worst (oriented -100); 300 cannot beat it, 101 may.
    assert not rule.screen(-300.0, incumbent_low=-100.0, calibration=cal).promote
    assert rule.screen(-101.0, incumbent_low=-100.0, calibration=cal).promote


def test_an_unsteady_run_is_trusted_less() -> None:
    rule = ShortRunRule(short_s=2.0, full_s=10.0)
    cal = rule.calibrate([(10.0, 10.0)] * 30, full_cv=0.01)
    assert not rule.screen(25.0, incumbent_low=30.0, calibration=cal).promote
    assert rule.screen(25.0, incumbent_low=30.0, calibration=cal, within_sigma=0.2).promote


def test_the_stated_risk_bounds_how_often_an_equal_configuration_is_discarded() -> None:
    """Monte Carlo under the rule's own noise model: a configuration exactly as good as the
    incumbent's lower bound, run short with the estimated spread, is discarded at most
    ``risk`` of the time (a little less, as the bound uses t rather than normal quantiles)."""
    rng = random.Random(7)
    rule = ShortRunRule(short_s=2.0, full_s=10.0, risk=0.1)
    sigma = 0.08
    pairs = [(math.exp(rng.gauss(0, sigma)), 1.0) for _ in range(200)]
    cal = rule.calibrate(pairs, full_cv=0.03)
    trials = 4000
    discarded = sum(not rule.screen(20.0 * math.exp(rng.gauss(0, sigma)), 20.0, cal).promote for _ in range(trials))
    assert discarded / trials <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / trials)
    assert discarded / trials > 0.05  # and the rule is not vacuous


def test_rules_refuse_nonsense() -> None:
    with pytest.raises(ValueError):
        ShortRunRule(short_s=10.0, full_s=10.0)
    with pytest.raises(ValueError):
        ShortRunRule(short_s=2.0, full_s=10.0, risk=0.6)


def test_interval_sigma_is_the_standard_error_of_the_intervals() -> None:
    assert interval_sigma([]) == 0.0 and interval_sigma([5.0]) == 0.0
    assert interval_sigma([10.0, 10.0, 10.0]) == 0.0
    xs = [9.0, 11.0, 9.0, 11.0]
    sd = math.sqrt(sum((x - 10) ** 2 for x in xs) / 3)
    assert interval_sigma(xs) == pytest.approx(sd / 10 / 2)
