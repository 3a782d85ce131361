"""The history's per-configuration means and noise, on SQLite and PostgreSQL, with the extreme
values the simulator produces (loss of 1e-200 %, interrupts per GB of 1e120)."""

from __future__ import annotations

from sqlalchemy import Engine

from nictune.db import complete_trial, session_scope, start_trial
from nictune.db.best import configuration_means
from nictune.jobs.best import noise_by_fingerprint, rank
from nictune.optimizer import Goal
from nictune.optimizer.racing import RacingPolicy

from .support import add_configuration, add_job, add_testbed, add_workload, sample


def test_means_and_noise_survive_extreme_values(engine: Engine) -> None:
    with session_scope(engine) as s:
        bed, load = add_testbed(s), add_workload(s)
        job = add_job(s, bed, load)
        runs = {"steady": [(10.0, 1e-200, 1e120), (10.6, 2e-200, 1e120)],  # 4% apart
                "lucky": [(10.5, 0.0, 5.0)],
                "slow": [(5.0, 0.1, 7.0), (5.2, 0.1, 7.0)]}
        for number, (name, values) in enumerate(runs.items()):
            trial = start_trial(s, job, number, add_configuration(s, name))
            samples = [sample(tp, loss_pct=loss, interrupts_per_gb=irq) for tp, loss, irq in values]
            complete_trial(s, trial, samples, "measured", {"throughput_gbps": values[0][0]})
    with session_scope(engine) as s:
        means = configuration_means(s, "bed-a", "tcp-1")
    assert sorted(m.measurements for m in means) == [1, 2, 2]
    policy = RacingPolicy(Goal.from_names(["throughput"]))
    noise = noise_by_fingerprint(policy, means)
    (nz,) = noise.values()
    assert nz.measured_dof == 2 and 0.01 < nz.cv < 0.05
    # One run of 10.5 does not outrank two that average 10.3 (by the plain mean it would).
    ranked = [c.measurements for _, c in rank(policy, means, noise)]
    assert ranked == [2, 1, 2]
    # Means whose squares would underflow (loss) or overflow (interrupts) are left out of the
    # noise, the other configuration's repeats still count.
    for objective in ("loss", "interrupts"):
        (other,) = noise_by_fingerprint(RacingPolicy(Goal.from_names([objective])), means).values()
        assert other.measured_dof == 1 and 0 < other.cv < 0.05
