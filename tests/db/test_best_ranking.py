"""The history's ranking (:func:`nictune.jobs.best.ranking`) against the ranking of every
configuration's full means in Python, on SQLite and PostgreSQL: sorted by the database
(``ORDER BY ... LIMIT``, with the noise pooled in SQL) for the goals it can take, read narrow
and ranked in Python for the others, and completed for the ones shown."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import Engine

import nictune.jobs.best as best
from nictune.db import complete_trial, session_scope, start_trial
from nictune.db.best import configuration_means, pooled_relative_variance
from nictune.jobs.best import complete, noise_by_fingerprint, rank, ranking, sql_order, sql_ranking
from nictune.optimizer import Goal
from nictune.optimizer.racing import RacingPolicy

from .support import add_configuration, add_job, add_testbed, add_workload, sample

#: Goals the database sorts.
SQL_GOALS = [
    (["throughput"], []),
    (["throughput"], ["loss<=0.5"]),
    (["throughput"], ["loss<0.05"]),  # few feasible: the infeasible ones' order counts too
    (["interrupts"], ["throughput>=9"]),  # minimised
    (["interrupts"], ["throughput>9", "loss<=0.4"]),  # two violations summed
    (["throughput"], ["loss<=0"]),  # a bound of 0: violations relative to 1
]
#: Goals ranked in Python.
PYTHON_GOALS = [
    (["cpu"], []),  # CPU per Gbit/s: a ratio of two main metrics
    (["throughput"], ["retransmits<=3"]),  # a metric without a column: read from the JSON
    (["throughput"], ["loss<=0.5", "interrupts<=8000", "throughput>=6"]),  # three violations
]


def _history(engine: Engine) -> None:
    rng = random.Random(5)
    with session_scope(engine) as s:
        beds = [add_testbed(s, kernel="6.1.0"), add_testbed(s, kernel="6.8.0")]  # two fingerprints
        load = add_workload(s)
        jobs = [add_job(s, bed, load) for bed in beds]
        number = 0
        previous: dict[int, list[dict[str, float]]] = {}
        for i in range(40):
            config = add_configuration(s, f"c{i:02d}")
            twin = i % 10 == 9  # the same runs as the configuration before it: ties in every key
            for j, job in enumerate(jobs[: rng.randint(1, 2)]):
                if not (twin and j in previous):
                    base, lossless = rng.uniform(5, 12), i % 7 == 3
                    previous[j] = [{"throughput": base * rng.uniform(0.9, 1.1),
                                    "loss_pct": 0.0 if lossless else rng.uniform(0, 1),
                                    "interrupts_per_gb": rng.uniform(1e3, 1e4), "cpu_rx_pct": rng.uniform(20, 90),
                                    "retransmits": float(rng.randint(0, 6))}
                                   for _ in range(rng.randint(1, 3))]
                runs = [sample(**r) for r in previous[j]]
                trial = start_trial(s, job, number, config)
                complete_trial(s, trial, runs, "measured", {"throughput_gbps": runs[0].metrics["throughput_gbps"]})
                number += 1


def _expected(s: Any, policy: RacingPolicy) -> list[Any]:
    full = configuration_means(s, "bed-a", "tcp-1", sorted({c.metric for c in policy.goal.constraints}))
    return rank(policy, full, noise_by_fingerprint(policy, full))


def _keys(ranked: list[Any]) -> list[tuple[int, int]]:
    return [(c.testbed_id, c.configuration_id) for _, c in ranked]


@pytest.mark.parametrize(("objectives", "constraints"), SQL_GOALS)
def test_the_database_sorts_as_python_ranks(engine: Engine, monkeypatch: pytest.MonkeyPatch,
                                           objectives: list[str], constraints: list[str]) -> None:
    _history(engine)
    policy = RacingPolicy(Goal.from_names(objectives, constraints))
    assert sql_order(policy) is not None
    with session_scope(engine) as s:
        expected = _expected(s, policy)
        with monkeypatch.context() as m:  # the database sorts: no configuration's means are read here
            m.setattr(best, "configuration_means", _no_python_ranking)
            top = ranking(s, policy, "bed-a", "tcp-1", 12)
            everything = ranking(s, policy, "bed-a", "tcp-1", 1000)
        shown = complete(s, policy, top[:7], "bed-a", "tcp-1")
    assert len(expected) > 40  # configurations measured on both fingerprints count once for each
    assert _keys(top) == _keys(expected)[:12]
    assert _keys(everything) == _keys(expected)
    for (nz, c), (want_nz, want) in zip(everything, expected, strict=True):
        # The noise pooled in SQL sums in another order: equal to the last bits.
        assert (nz.cv, nz.dof, nz.measured_dof) == (pytest.approx(want_nz.cv, rel=1e-12), want_nz.dof,
                                                    want_nz.measured_dof)
        assert (c.measurements, c.trials, c.last_measured_at) == (want.measurements, want.trials, None)
        assert c.metrics == {k: want.metrics[k] for k in c.metrics}
        assert set(c.metrics) == {policy.goal.objective.metric, *(b.metric for b in policy.goal.constraints)}
    assert [c for _, c in shown] == [c for _, c in expected[:7]]  # every metric and the newest time
    feasible = sum(policy.goal.score(c.metrics).feasible for _, c in expected)
    if constraints:
        assert 0 < feasible < len(expected)  # both parts of the order are compared


def _no_python_ranking(*args: Any, **kwargs: Any) -> Any:
    if "configurations" not in kwargs:
        raise AssertionError("the ranking read every configuration's means")
    return configuration_means(*args, **kwargs)


@pytest.mark.parametrize(("objectives", "constraints"), PYTHON_GOALS)
def test_other_goals_are_ranked_on_narrow_means(engine: Engine, objectives: list[str],
                                                constraints: list[str]) -> None:
    _history(engine)
    goal = Goal.from_names(objectives, constraints)
    policy = RacingPolicy(goal)
    assert sql_order(policy) is None
    with session_scope(engine) as s:
        expected = _expected(s, policy)
        narrow = ranking(s, policy, "bed-a", "tcp-1")
        shown = complete(s, policy, narrow[:7], "bed-a", "tcp-1")
        assert _keys(ranking(s, policy, "bed-a", "tcp-1", 5)) == _keys(expected)[:5]
    assert _keys(narrow) == _keys(expected)
    assert [nz for nz, _ in narrow] == [nz for nz, _ in expected]
    assert shown == expected[:7]  # every metric, the newest time, the noise: as the full read has them
    needed = {goal.objective.metric, *([goal.objective.per] if goal.objective.per else []),
              *(c.metric for c in goal.constraints)}
    assert all(set(c.metrics) <= needed and c.last_measured_at is None for _, c in narrow)


def test_extreme_figures_rank_as_in_python(engine: Engine) -> None:
    """Interrupts per GB of 1e120 against a bound of 1e-300 (a violation beyond any double),
    losses of 1e-200 (squares that underflow): SQLite gives inf, PostgreSQL raises, and the
    ranking is Python's either way."""
    with session_scope(engine) as s:
        bed, load = add_testbed(s), add_workload(s)
        job = add_job(s, bed, load)
        runs = {"a": [(10.0, 1e-200, 1e120), (10.6, 2e-200, 1e120)], "b": [(10.5, 0.0, 5.0)],
                "c": [(5.0, 0.1, 7.0), (5.2, 0.1, 7.0)], "d": [(9.0, 1e-200, 1e119)]}
        for number, (name, values) in enumerate(runs.items()):
            trial = start_trial(s, job, number, add_configuration(s, name))
            samples = [sample(tp, loss_pct=loss, interrupts_per_gb=irq) for tp, loss, irq in values]
            complete_trial(s, trial, samples, "measured", {"throughput_gbps": values[0][0]})
    for objectives, constraints in [(["throughput"], ["interrupts<=1e-300"]), (["loss"], []),
                                    (["interrupts"], ["loss<=1e-300"])]:
        policy = RacingPolicy(Goal.from_names(objectives, constraints))
        with session_scope(engine) as s:
            expected = _expected(s, policy)
            got = ranking(s, policy, "bed-a", "tcp-1", 10)
            variances = pooled_relative_variance(s, "bed-a", "tcp-1", policy.goal.objective.metric)
            order = sql_order(policy)
            assert order is not None
            in_sql = sql_ranking(s, policy, order, "bed-a", "tcp-1", 10)
        assert _keys(got) == _keys(expected), (objectives, constraints)
        # The violation of 1e120 against 1e-300 overflows: PostgreSQL raises and Python ranks
        # (the fallback); SQLite sorts it as inf. The other goals stay in the database.
        overflows = engine.dialect.name == "postgresql" and constraints == ["interrupts<=1e-300"]
        assert (in_sql is None) == overflows, (objectives, constraints)
        noise = noise_by_fingerprint(policy, configuration_means_of(engine))
        assert {k: policy.stats.pooled_noise(*v).cv for k, v in variances.items()} == pytest.approx(
            {k: nz.cv for k, nz in noise.items()}, rel=1e-12)


def configuration_means_of(engine: Engine) -> list[Any]:
    with session_scope(engine) as s:
        return configuration_means(s, "bed-a", "tcp-1")
