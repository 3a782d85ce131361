"""The history's ranking read narrow (:func:`nictune.db.best.ranking`: only the metrics the goal
needs, for every configuration) and completed for the ones shown, against the ranking of every
configuration's full means, on SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import Engine

from nictune.db import complete_trial, session_scope, start_trial
from nictune.db.best import complete, configuration_means, noise_by_fingerprint, rank, ranking
from nictune.optimizer import Goal
from nictune.optimizer.racing import RacingPolicy

from .support import add_configuration, add_job, add_testbed, add_workload, sample

GOALS = [
    (["throughput"], []),
    (["throughput"], ["loss<=0.5"]),
    (["interrupts"], ["throughput>=9"]),
    (["cpu"], []),  # CPU per Gbit/s: a ratio of two main metrics
    (["throughput"], ["retransmits<=3"]),  # a metric without a column: read from the JSON
]


def _history(engine: Engine) -> None:
    rng = random.Random(5)
    with session_scope(engine) as s:
        beds = [add_testbed(s, kernel="6.1.0"), add_testbed(s, kernel="6.8.0")]  # two fingerprints
        load = add_workload(s)
        jobs = [add_job(s, bed, load) for bed in beds]
        number = 0
        for i in range(40):
            config = add_configuration(s, f"c{i:02d}")
            for job in jobs[: rng.randint(1, 2)]:
                base = rng.uniform(5, 12)
                runs = [sample(base * rng.uniform(0.9, 1.1), loss_pct=rng.uniform(0, 1),
                               interrupts_per_gb=rng.uniform(1e3, 1e4), cpu_rx_pct=rng.uniform(20, 90),
                               retransmits=float(rng.randint(0, 6)))
                        for _ in range(rng.randint(1, 3))]
                trial = start_trial(s, job, number, config)
                complete_trial(s, trial, runs, "measured", {"throughput_gbps": base})
                number += 1


@pytest.mark.parametrize(("objectives", "constraints"), GOALS)
def test_the_narrow_ranking_completed_is_the_full_ranking(engine: Engine, objectives: list[str],
                                                          constraints: list[str]) -> None:
    _history(engine)
    goal = Goal.from_names(objectives, constraints)
    policy = RacingPolicy(goal)
    with session_scope(engine) as s:
        full = configuration_means(s, "bed-a", "tcp-1", sorted({c.metric for c in goal.constraints}))
        expected = rank(policy, full, noise_by_fingerprint(policy, full))
        narrow = ranking(s, policy, "bed-a", "tcp-1")
        shown = complete(s, policy, narrow[:7], "bed-a", "tcp-1")
    assert len(expected) > 40  # configurations measured on both fingerprints count once for each
    key = [(c.testbed_id, c.configuration_id) for _, c in expected]
    assert [(c.testbed_id, c.configuration_id) for _, c in narrow] == key
    assert [nz for nz, _ in narrow] == [nz for nz, _ in expected]
    assert shown == expected[:7]  # every metric, the newest time, the noise: as the full read has them
    needed = {goal.objective.metric, *([goal.objective.per] if goal.objective.per else []),
              *(c.metric for c in goal.constraints)}
    assert all(set(c.metrics) <= needed and c.last_measured_at is None for _, c in narrow)
