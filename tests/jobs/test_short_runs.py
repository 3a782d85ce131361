"""Short runs first (issue 29) in the job loop: screening, storage at two fidelities, the cache,
resume, and refusals (simulated testbed, SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine

from nictune import db
from nictune.errors import InvalidInputError
from nictune.jobs import JobRunner, JobSpec, create_job, job_report
from nictune.jobs.evaluate import TrialEvent
from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds import SimTestbed
from nictune.search_spaces import load_space

SPEC = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=30, seed=3, warm_start=False,
               short_run_s=2.0)


def _trials(engine: Engine, job_id: int) -> list[db.Trial]:
    with db.session_scope(engine) as s:
        trials = db.job_trials(s, job_id)
        for t in trials:
            _ = t.configuration.hash, [(m.short, m.duration_s) for m in t.measurements]
        s.expunge_all()
        return trials


@pytest.mark.slow
def test_short_runs_screen_new_configurations_and_only_full_runs_are_a_fitness(engine: Engine) -> None:
    job = create_job(engine, SPEC)
    outcome = JobRunner(engine).run(job)
    assert outcome.state == "completed" and outcome.trials == 30
    trials = _trials(engine, job)
    screened = [t for t in trials if (t.summary or {}).get("screened")]
    promoted = [t for t in trials if "short" in (t.summary or {}) and not t.summary.get("screened")]
    assert screened and promoted  # the rule both discards and promotes on this job
    for t in screened:  # one short run, nothing else: never in the race, never a fitness
        assert [(m.short, m.duration_s) for m in t.measurements] == [(True, 2.0)]
        info = t.summary["short"]
        assert not info["promoted"] and info["bound"] < info["incumbent_low"]
        # The engine was told the short figure corrected by the estimated bias.
        assert t.summary["told"]["throughput_gbps"] == pytest.approx(
            info["metrics"]["throughput_gbps"] * info["corrected"] / info["value"], rel=1e-4)
    for t in promoted:
        kinds = sorted((m.short, m.duration_s) for m in t.measurements)
        assert kinds[0] == (False, 10.0) and (True, 2.0) in kinds
        assert t.summary["short"]["promoted"]
    with db.session_scope(engine) as s:
        j = db.get_job(s, job)
        stats = dict(j.stats)
        for t in screened:  # the fitness cache knows nothing of a short run
            assert db.cached_samples(s, j.testbed_id, j.workload_id, t.configuration.hash) == []
            assert db.cached_samples(s, j.testbed_id, j.workload_id, t.configuration.hash, short_s=2.0)
    assert stats["screened"] == len(screened) and stats["promoted"] == len(promoted)
    # Benchmark seconds: every run's warm-up (1 s) and measured part, at its own duration.
    assert stats["bench_seconds"] == pytest.approx(stats["runs"] * 11.0 + stats["short_runs"] * 3.0)
    report = job_report(engine, job)
    assert report["recommendation"]["interval"]["n"] >= 3  # full runs only
    rec = report["recommendation"]["hash"]
    assert rec not in {t.configuration.hash for t in screened}


@pytest.mark.slow
def test_a_second_job_judges_on_the_stored_short_run_and_measures_nothing_twice(engine: Engine) -> None:
    first = create_job(engine, SPEC)
    JobRunner(engine).run(first)
    second = create_job(engine, SPEC)
    JobRunner(engine).run(second)
    left_short = {t.configuration.hash for t in _trials(engine, first) if (t.summary or {}).get("screened")}
    again = [t for t in _trials(engine, second) if t.configuration.hash in left_short]
    assert again, "the second job meets configurations the first one left at their short run"
    for t in again:  # judged on the stored short run: never run short a second time
        assert not any(m.short for m in t.measurements)
        assert t.summary["short"]["reused"]
        if t.summary.get("screened"):
            assert t.source == "cache" and not t.measurements


@pytest.mark.slow
def test_a_resumed_job_keeps_its_short_runs_and_their_calibration(engine: Engine) -> None:
    stop = threading.Event()
    seen: list[TrialEvent] = []

    def on_trial(ev: TrialEvent) -> None:
        seen.append(ev)
        if len(seen) == 15:
            stop.set()

    job = create_job(engine, SPEC)
    assert JobRunner(engine, on_trial=on_trial, stop=stop).run(job).state == "interrupted"
    pairs_before = max(t.summary["short"]["calibration"]["pairs"] for t in _trials(engine, job)
                       if "short" in (t.summary or {}))
    assert JobRunner(engine).run(job).state == "completed"
    after = [t for t in _trials(engine, job) if t.number >= 15 and "short" in (t.summary or {})]
    assert after, "the resumed part still runs short first"
    # The pairs measured before the stop still calibrate the screens after it.
    assert min(t.summary["short"]["calibration"]["pairs"] for t in after) >= pairs_before


def test_short_runs_are_refused_where_they_cannot_work(engine: Engine) -> None:
    cases = [
        (dict(short_run_s=10.0), "short_run"),  # not shorter than the full run
        (dict(short_run_s=0.1), "short_run"),
        (dict(short_run_s=2.0, racing=False), "short_run"),
        (dict(short_run_s=2.0, objectives=["throughput", "interrupts"]), "short_run"),
        (dict(short_run_s=2.0, short_risk=0.7), "short_risk"),
    ]
    for change, field in cases:
        with pytest.raises(InvalidInputError) as err:
            create_job(engine, JobSpec(**{**SPEC.__dict__, **change}))
        assert err.value.field == field, (change, err.value)


def test_the_model_measures_a_short_run_higher_as_the_job_sees_it() -> None:
    """What the bias estimate in the job learns: on the model a 2 s TCP run reads above a 10 s
    one (the warm-up transient short veth runs showed), and the job's bias estimate is below 1."""
    bed = SimTestbed(PROFILES["sim:benson-40g"], noise=0)
    space = load_space("benson-40g")
    settings = space.settings(space.profile("baseline"))
    short = bed.measure(settings, get_workload("tcp", duration_s=2), 1, 0).samples[0].metrics
    full = bed.measure(settings, get_workload("tcp"), 1, 0).samples[0].metrics
    assert short["throughput_gbps"] > full["throughput_gbps"]
