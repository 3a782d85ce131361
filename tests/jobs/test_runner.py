"""The job loop against real databases (SQLite and PostgreSQL) and the simulated testbed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine

from nictune import db
from nictune.executors import LocalExecutor
from nictune.jobs import JobRunner, JobSpec, create_job, job_header, job_report, trial_rows
from nictune.jobs.runner import JobOutcome
from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds import SimTestbed
from nictune.optimizer import Goal
from nictune.search_spaces import load_space
from tests.jobs.optimum import coordinate_optimum

BENSON = load_space("benson-40g")


def clean_value(config: dict, workload: str) -> dict[str, float]:
    bed = SimTestbed(PROFILES["sim:benson-40g"], noise=0)
    return bed.clean(BENSON.settings(BENSON.configuration(config)), get_workload(workload))


@pytest.mark.slow
def test_ga_reaches_95_percent_of_the_tcp_optimum(engine: Engine) -> None:
    """Benson TCP, budget 60: the recommended configuration's noise-free throughput is
    >= 95% of the optimum (coordinate search, = wire goodput at MTU 9000) and the untuned
    default is below 10 Gbps."""
    bed = SimTestbed(PROFILES["sim:benson-40g"], noise=0)
    goal = Goal.from_names(["throughput"], [])
    _, optimum = coordinate_optimum(bed, BENSON, "tcp", goal)
    job = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=60, seed=11))
    outcome = JobRunner(engine).run(job)
    assert outcome.state == "completed" and outcome.trials == 60
    report = job_report(engine, job)
    # The header `optimize --resume` prints from, read without the trials: the report's own fields.
    header = job_header(engine, job)
    assert header["budget"] == 60 and header["state"] == "completed" and header.items() <= report.items()
    best = clean_value(report["best_config"], "tcp")["throughput_gbps"]
    default = clean_value(BENSON.default().as_dict(), "tcp")["throughput_gbps"]
    assert best >= 0.95 * optimum.value
    assert default < 10 < best


@pytest.mark.slow
def test_udp_with_loss_constraint_finds_a_feasible_configuration(engine: Engine) -> None:
    job = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload="udp",
                                     constraints=["loss<=0.1"], budget=60, seed=5, engine="ga"))
    JobRunner(engine).run(job)
    report = job_report(engine, job)
    assert report["best_feasible"]
    clean = clean_value(report["best_config"], "udp")
    untuned = clean_value(BENSON.default().as_dict(), "udp")
    assert clean["loss_pct"] <= 0.15  # measured feasible; noise-free within noise of the bound
    assert clean["throughput_gbps"] > 2 * untuned["throughput_gbps"]


@pytest.mark.slow
def test_second_identical_job_measures_nothing_twice(engine: Engine) -> None:
    """Without warm start, a second identical job asks the same first configurations and
    answers them from the cache. Its engine is told their cached means, which include the
    first job's final race, so from the first model round on it may go elsewhere; what it
    measures is new."""
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=20, seed=3, warm_start=False)
    first_id = create_job(engine, spec)
    first = JobRunner(engine).run(first_id)
    second_id = create_job(engine, spec)
    second = JobRunner(engine).run(second_id)
    assert first.measured == 20 and first.cached == 0
    assert second.cached >= 5 and second.measured + second.cached == 20  # default, baseline, first round
    with db.session_scope(engine) as s:
        before = {t.configuration.hash for t in db.job_trials(s, first_id)}
        again = [t.configuration.hash for t in db.job_trials(s, second_id)]
        measured = {t.configuration.hash for t in db.job_trials(s, second_id) if t.source == "measured"}
    assert set(again[:5]) <= before
    assert not measured & before
    # A different seed reuses what overlaps (the default and the baseline) and measures the rest.
    third = JobRunner(engine).run(create_job(engine, JobSpec(**{**spec.__dict__, "seed": 4})))
    assert third.cached >= 2 and third.measured + third.cached == 20


def run_on(engine: Engine, job: int, testbed: type[SimTestbed]) -> JobOutcome:
    """Run (or resume) ``job`` on a ``testbed`` of sim:benson-40g's profile that fails as the test says."""
    runner = JobRunner(engine)
    prep = runner.prepare(job)
    prep.executor = LocalExecutor(testbed(PROFILES["sim:benson-40g"]))
    return runner._loop(job, prep)


def assert_stopped(engine: Engine, job: int, why: str) -> None:
    """The job's stored error starts with ``why`` and ends with the hint to resume it."""
    with db.session_scope(engine) as s:
        error = db.get_job(s, job).error or ""
    assert error.startswith(why), error
    assert error.endswith(f"resume this one (nictune optimize --resume {job})"), error


def test_failed_measurements_are_recorded_and_the_job_goes_on(engine: Engine) -> None:
    class Flaky(SimTestbed):
        calls = 0

        def measure(self, settings, workload, repeats, seed):  # type: ignore[no-untyped-def]
            Flaky.calls += 1
            if Flaky.calls % 3 == 0:
                from nictune.errors import MeasurementError

                raise MeasurementError("iperf3 did not answer (test)")
            return super().measure(settings, workload, repeats, seed)

    job = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=9, seed=1,
                                     racing=False))
    outcome = run_on(engine, job, Flaky)
    assert outcome.state == "completed" and outcome.failed == 3 and outcome.measured == 6
    with db.session_scope(engine) as s:
        failed = [t for t in db.job_trials(s, job) if t.state == "failed"]
        assert len(failed) == 3 and all("iperf3 did not answer" in (t.error or "") for t in failed)


def test_bad_specs_are_rejected_before_anything_is_stored(engine: Engine) -> None:
    from nictune.errors import InvalidInputError

    bad = [
        JobSpec(objectives=["speed"], testbed="sim:benson-40g"),
        JobSpec(objectives=["throughput"], testbed="sim:nope"),
        JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=-1),
        JobSpec(objectives=["throughput"], testbed="sim:benson-40g", constraints=["loss<<1"]),
        JobSpec(objectives=["throughput"], testbed="sim:benson-40g", engine="annealing"),
        JobSpec(objectives=["throughput"], testbed="sim:benson-40g", engine_params={"population": -3}),
        JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload="sctp"),
    ]
    for spec in bad:
        with pytest.raises(InvalidInputError) as exc:
            create_job(engine, spec)
        assert exc.value.field
    with db.session_scope(engine) as s:
        assert db.list_jobs(s) == []


def _completed(url: str, job_id: int) -> dict[int, tuple[int, str]]:
    eng = db.make_engine(url)
    try:
        with db.session_scope(eng) as s:
            return {t.number: (t.id, t.configuration.hash) for t in db.job_trials(s, job_id)
                    if t.state == "completed"}
    finally:
        eng.dispose()


@pytest.mark.slow
def test_kill_9_then_resume_loses_nothing_and_measures_nothing_twice(db_url: str, tmp_path: Path) -> None:
    """A real `nictune optimize` process is SIGKILLed mid-job; `--resume` finishes the job with
    exactly its budget of trials, every committed trial kept as it was, none measured twice."""
    budget = 400
    env = {**os.environ, "NICTUNE_DB": db_url}
    cmd = [sys.executable, "-m", "nictune", "optimize", "--objective", "throughput", "--engine", "random",
           "--no-racing", "--budget", str(budget), "--seed", "9", "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    job_id = 1
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                done = _completed(db_url, job_id)
            except Exception:
                continue
            if len(done) >= 50:
                break
        else:
            pytest.fail("the job did not get going")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = _completed(db_url, job_id)
    assert 50 <= len(before) < budget, "kill came too late to test a resume"
    res = subprocess.run([sys.executable, "-m", "nictune", "optimize", "--resume", str(job_id), "--json"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["state"] == "completed" and out["trials"] == budget
    # It says where it picks up.
    said = " ".join(res.stderr.split())
    assert (f"resuming job {job_id}: {len(before)} of {budget} trials done ({len(before)} measured, 0 from the cache), "
            f"replayed without measuring them again; it goes on with trial {len(before)}") in said
    after = _completed(db_url, job_id)
    assert sorted(after) == list(range(budget))
    for number, (trial_id, config_hash) in before.items():
        assert after[number] == (trial_id, config_hash)  # kept, not re-measured
    eng = db.make_engine(db_url)
    try:
        with db.session_scope(eng) as s:
            trials = db.job_trials(s, job_id)
            hashes = [t.configuration.hash for t in trials]
            assert len(hashes) == len(set(hashes)) == budget  # no configuration twice
            assert all(t.state == "completed" for t in trials)
            assert sum(len(t.measurements) for t in trials) == 3 * budget  # one row per repeat
    finally:
        eng.dispose()


@pytest.mark.slow
def test_a_job_whose_trials_all_fail_stops_after_five_and_resumes_once_fixed(engine: Engine) -> None:
    from nictune.errors import MeasurementError
    from nictune.jobs.runner import FAIL_FAST

    class Broken(SimTestbed):
        fixed = False

        def measure(self, settings, workload, repeats, seed):  # type: ignore[no-untyped-def]
            if not Broken.fixed:
                raise MeasurementError("iperf3: unable to connect to server (test)")
            return super().measure(settings, workload, repeats, seed)

    job = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=30, seed=1,
                                     racing=False))
    outcome = run_on(engine, job, Broken)
    assert FAIL_FAST == 5 and (outcome.state, outcome.trials, outcome.failed) == ("failed", 5, 5)
    assert_stopped(engine, job, "stopped after 5 trials failed and none was measured: iperf3: unable to connect")
    # Resumed once the testbed works: the five failed trials stay, the rest is measured, and
    # the old failures do not stop it again.
    Broken.fixed = True
    outcome = run_on(engine, job, Broken)
    assert (outcome.state, outcome.trials, outcome.failed, outcome.measured) == ("completed", 30, 5, 25)


def test_fewer_failures_in_a_row_than_the_streak_after_a_success_do_not_stop_the_job(engine: Engine) -> None:
    from nictune.errors import MeasurementError
    from nictune.jobs.runner import FAIL_STREAK

    class FailsAfterTheFirst(SimTestbed):
        calls = 0

        def measure(self, settings, workload, repeats, seed):  # type: ignore[no-untyped-def]
            FailsAfterTheFirst.calls += 1
            if FailsAfterTheFirst.calls > 1:
                raise MeasurementError("link down (test)")
            return super().measure(settings, workload, repeats, seed)

    budget = FAIL_STREAK  # one measured, then FAIL_STREAK - 1 failures in a row
    job = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=budget, seed=1,
                                     racing=False))
    outcome = run_on(engine, job, FailsAfterTheFirst)
    assert (outcome.state, outcome.measured, outcome.failed) == ("completed", 1, FAIL_STREAK - 1)


@pytest.mark.slow
def test_a_testbed_that_breaks_mid_job_stops_it_after_ten_failures_in_a_row(engine: Engine) -> None:
    """Failures between measured trials never add up; ten in a row stop the job with the
    error and a resume hint, and the resume, once the testbed works, finishes the budget."""
    from nictune.errors import MeasurementError
    from nictune.jobs.runner import FAIL_STREAK

    class Breaks(SimTestbed):
        calls = 0
        fixed = False

        def measure(self, settings, workload, repeats, seed):  # type: ignore[no-untyped-def]
            Breaks.calls += 1
            # Calls 1-11: every other one fails (5 failures, never two in a row); from 12 on,
            # the link is down until fixed.
            if not Breaks.fixed and (Breaks.calls > 11 or Breaks.calls % 2 == 0):
                raise MeasurementError("ip: link nt0 is down (test)")
            return super().measure(settings, workload, repeats, seed)

    job = create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=40, seed=1,
                                     racing=False))
    outcome = run_on(engine, job, Breaks)
    assert FAIL_STREAK == 10
    assert (outcome.state, outcome.trials, outcome.measured, outcome.failed) == ("failed", 21, 6, 15)
    assert_stopped(engine, job, "stopped after 10 trials in a row failed: ip: link nt0 is down (test)")
    Breaks.fixed = True
    outcome = run_on(engine, job, Breaks)
    assert (outcome.state, outcome.trials, outcome.measured, outcome.failed) == ("completed", 40, 25, 15)


def test_answers_from_the_cache_do_not_hide_a_testbed_that_measures_nothing(engine: Engine) -> None:
    from nictune.errors import MeasurementError

    class Broken(SimTestbed):
        def measure(self, settings, workload, repeats, seed):  # type: ignore[no-untyped-def]
            raise MeasurementError("iperf3: command not found (test)")

    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=6, seed=1, racing=False)
    assert JobRunner(engine).run(create_job(engine, spec)).measured == 6
    # The same start again, warm: its first trials come from the cache, then nothing measures.
    job = create_job(engine, JobSpec(**{**spec.__dict__, "budget": 30}))
    outcome = run_on(engine, job, Broken)
    assert outcome.state == "failed" and outcome.cached >= 2 and outcome.failed == 5 and outcome.measured == 0


def test_a_job_account_gives_every_configuration_as_an_object(engine: Engine) -> None:
    """``history show --json`` gave a front's (and every trial's) configuration as a JSON string."""
    job = create_job(engine, JobSpec(objectives=["throughput", "interrupts"], testbed="sim:benson-40g",
                                     engine="random", budget=8, seed=3))
    JobRunner(engine).run(job)
    report = job_report(engine, job)
    assert report["front"]
    rows = [*report["front"], report["best"], report["default"]]
    assert all(isinstance(r["config"], dict) and r["config"].get("mtu") for r in rows)
    assert report["best_config"] == report["best"]["config"]
    # The recommendation is a member of the front: no measured configuration dominates it.
    goal = Goal.from_names(["throughput", "interrupts"], [])
    chosen = goal.values(report["best"]["metrics"])
    assert report["best"]["number"] in {r["number"] for r in report["front"]}
    with db.session_scope(engine) as s:
        measured = [r for r in trial_rows(db.job_trial_summaries(s, job)) if r["state"] == "completed"]
    assert len(measured) == 8
    assert not any(all(a >= b for a, b in zip(goal.values(r["metrics"]), chosen, strict=True))
                   and goal.values(r["metrics"]) != chosen for r in measured)
