"""Issue 6 in the job loop: adaptive repeats, noise estimate, warm start, Pareto jobs, and
parallel batches (SQLite and PostgreSQL, simulated testbeds)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine

from nictune import db
from nictune.errors import InvalidInputError
from nictune.executors import Executor, LocalExecutor, MeasureRequest
from nictune.jobs import JobRunner, JobSpec, create_job, job_report
from nictune.measure._base import TrialResult
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds import SimTestbed
from nictune.optimizer import Goal, RacingPolicy
from nictune.optimizer.pareto import dominates


def _trials(engine: Engine, job_id: int) -> list[db.Trial]:
    with db.session_scope(engine) as s:
        trials = db.job_trials(s, job_id)
        for t in trials:  # load what the tests read after the session ends
            _ = t.configuration.hash, len(t.measurements)
        s.expunge_all()
        return trials


def _runs(trial: db.Trial) -> int:
    return len(trial.measurements)


def _first_throughput(trial: db.Trial) -> float:
    return float(min(trial.measurements, key=lambda m: m.id).metrics["throughput_gbps"])


@pytest.mark.slow
def test_racing_measures_each_configuration_once_then_races_the_best_and_stores_the_noise(
        engine: Engine) -> None:
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload="udp", budget=30, seed=2,
                   noise=0.03, repeats=3)
    notices: list[str] = []
    outcome = JobRunner(engine, on_notice=notices.append).run(create_job(engine, spec))
    assert outcome.state == "completed" and outcome.trials == 30
    trials = _trials(engine, outcome.job_id)
    runs = {t.number: _runs(t) for t in trials}
    assert all(1 <= n <= 3 for n in runs.values())
    # The final race: the best by their one measurement (one finalist per 20 trials of the
    # budget: 1 here) are measured again, then the recommendation to --repeats runs and
    # whatever could still beat it; the clearly worse configurations are not measured again.
    finalists = RacingPolicy.final_race_for(30)
    assert finalists == 1
    first = {t.number: _first_throughput(t) for t in trials}
    ranked = sorted(first, key=lambda n: first[n], reverse=True)
    repeated = {n for n, r in runs.items() if r > 1}
    assert set(ranked[:finalists]) <= repeated and repeated <= set(ranked[:10]), (ranked, runs)
    assert 30 + 2 <= sum(runs.values()) <= 30 + finalists + RacingPolicy(Goal.from_names(["throughput"])).race_cap
    assert any("final race: measuring the best configuration once more" in n for n in notices), notices
    # The model has no term for the space's tx_ring, and the job says so.
    assert "sim:benson-40g is a model with no term for tx_ring (space benson-40g): its value changes nothing " \
           "in its figures" in notices, notices
    report = job_report(engine, outcome.job_id)
    best = next(t for t in trials if t.number == report["best"]["number"])
    assert _runs(best) == 3, "the recommendation never rests on fewer than --repeats runs"
    rec = report["recommendation"]
    assert rec["number"] == best.number and rec["interval"]["n"] == 3
    assert rec["interval"]["low"] < rec["interval"]["mean"] < rec["interval"]["high"]
    assert "±" in rec["text"] and "90% CI" in rec["text"]
    noise = report["noise"]["objective"]
    assert noise["measured_dof"] == sum(r - 1 for r in runs.values()) >= 3
    assert 0.01 < noise["cv"] < 0.06, noise  # the testbed's 3% (pooled, shrunk towards a 5% prior)
    assert report["runs"] == sum(runs.values())


def test_racing_with_one_repeat_measures_every_configuration_once(engine: Engine) -> None:
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=8, seed=2, repeats=1)
    outcome = JobRunner(engine).run(create_job(engine, spec))
    assert [_runs(t) for t in _trials(engine, outcome.job_id)] == [1] * 8


def stopping_after(measurements: int, stop: threading.Event) -> Any:
    """An executor factory whose executors set ``stop`` after the job's ``measurements``-th
    measurement (counted over every executor it makes)."""
    count = [0]

    class Stopping(LocalExecutor):
        def measure(self, request: MeasureRequest) -> TrialResult:
            result = super().measure(request)
            count[0] += 1
            if count[0] == measurements:
                stop.set()
            return result

    return lambda testbed, noise: Stopping(testbed, noise=noise)


@pytest.mark.slow
def test_a_job_stopped_in_its_final_race_resumes_it_to_the_uninterrupted_answer(tmp_path: Any) -> None:
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", workload="udp", budget=10, seed=3,
                   noise=0.03, repeats=3, warm_start=False)
    stop = threading.Event()
    factory = stopping_after(spec.budget + 1, stop)  # the first measurement of the final race
    outcomes = {}
    for name in ("straight", "stopped"):
        engine = db.open_database(f"sqlite:///{tmp_path}/{name}.db")
        job = create_job(engine, spec)
        if name == "stopped":
            first = JobRunner(engine, stop=stop, executor_factory=factory).run(job)
            assert first.state == "interrupted" and first.trials == spec.budget
            assert sorted(_runs(t) for t in _trials(engine, job)) == [1] * 9 + [2]
        assert JobRunner(engine).run(job).state == "completed"
        report = job_report(engine, job)
        outcomes[name] = ({t.number: _runs(t) for t in _trials(engine, job)},
                          report["recommendation"]["number"], report["recommendation"]["interval"])
        engine.dispose()
    assert outcomes["stopped"] == outcomes["straight"]
    assert sum(outcomes["straight"][0].values()) > spec.budget + 3  # the race and the final repeat ran


def test_without_racing_every_configuration_gets_its_repeats(engine: Engine) -> None:
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=8, seed=2, repeats=2,
                   racing=False)
    outcome = JobRunner(engine).run(create_job(engine, spec))
    assert [_runs(t) for t in _trials(engine, outcome.job_id)] == [2] * 8


@pytest.mark.slow
def test_warm_start_reuses_history_and_never_measures_a_configuration_twice(engine: Engine) -> None:
    base = dict(objectives=["throughput"], testbed="sim:benson-40g", workload="udp", constraints=["loss<=0.1"],
                budget=15, seed=1)
    first = JobRunner(engine).run(create_job(engine, JobSpec(**base)))  # type: ignore[arg-type]
    notices: list[str] = []
    second = JobRunner(engine, on_notice=notices.append).run(
        create_job(engine, JobSpec(**{**base, "seed": 2})))  # type: ignore[arg-type]
    assert any("warm start: reused 15 earlier measured configurations" in n for n in notices), notices
    one, two = _trials(engine, first.job_id), _trials(engine, second.job_id)
    assert [t.source for t in two[:3]] == ["cache"] * 3, "the best earlier configurations come first, cached"
    measured_before = {t.configuration.hash for t in one}
    measured_now = {t.configuration.hash for t in two if t.source == "measured"}
    assert not measured_before & measured_now
    goal = Goal.from_names(["throughput"], ["loss<=0.1"])
    best_before = max(one, key=lambda t: goal.score(t.summary["metrics"]))
    assert two[0].configuration.hash == best_before.configuration.hash
    assert job_report(engine, second.job_id)["warm_start"]["configs"] == 15
    off = JobRunner(engine).run(create_job(engine, JobSpec(**{**base, "seed": 3, "warm_start": False})))  # type: ignore[arg-type]
    assert "warm_start" not in job_report(engine, off.job_id)["stats"]


def test_a_cached_trial_measured_again_in_the_final_race_still_counts_as_from_the_cache(engine: Engine) -> None:
    base = dict(objectives=["throughput"], testbed="sim:benson-40g", workload="tcp", budget=12, seed=1)
    # One run per configuration: the best earlier ones come with a single sample each.
    JobRunner(engine).run(create_job(engine, JobSpec(**base, racing=False, repeats=1)))  # type: ignore[arg-type]
    second = JobRunner(engine).run(create_job(engine, JobSpec(**{**base, "budget": 6, "seed": 2})))  # type: ignore[arg-type]
    two = _trials(engine, second.job_id)
    raced = [t for t in two[:3] if t.source == "measured"]
    assert raced and all(t.summary["cached_from"] >= 1 for t in raced), "the best earlier one is a finalist"
    report = job_report(engine, second.job_id)
    assert report["cached"] == 3 == report["stats"]["cached"] == second.cached  # as the job's progress said
    assert report["measured"] == 3 == report["stats"]["measured"]
    assert report["measured"] + report["cached"] == report["trials"]


@pytest.mark.slow
def test_a_stopped_warm_started_job_resumes_to_the_same_trials(engine: Engine) -> None:
    base = dict(objectives=["throughput"], testbed="sim:benson-40g", budget=12, seed=4)
    JobRunner(engine).run(create_job(engine, JobSpec(**base)))  # type: ignore[arg-type]
    stop = threading.Event()
    job = create_job(engine, JobSpec(**{**base, "seed": 5}))  # type: ignore[arg-type]

    def on_trial(event: Any) -> None:
        if event.number == 6:
            stop.set()

    assert JobRunner(engine, on_trial=on_trial, stop=stop).run(job).state == "interrupted"
    # Meanwhile another job measures more: the resumed job must not see it.
    JobRunner(engine).run(create_job(engine, JobSpec(**{**base, "seed": 6, "warm_start": False})))
    done = JobRunner(engine).run(job)
    assert done.state == "completed" and done.trials == 12
    hashes = [t.configuration.hash for t in _trials(engine, job)]
    assert len(set(hashes)) == 12


@pytest.mark.slow
def test_diagnose_rounds_read_the_counters_and_a_stopped_job_resumes_to_the_same_trials(tmp_path: Any) -> None:
    """The job loop tells the engine each configuration's counters with its score: on
    linux-nic, every model round a diagnose round, the job measures relief moves of the best
    configurations (one knob changed against the bottleneck their counters show), and a job
    stopped half-way replays the counters it was told and continues exactly as one that ran
    through."""
    from nictune.optimizer.diagnosis import relief_moves
    from nictune.search_spaces import load_space

    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", space="linux-nic", budget=20, seed=3,
                   engine="bayes", engine_params={"rounds": "diagnose", "n_init": 6}, warm_start=False)
    through = db.open_database(f"sqlite:///{tmp_path}/through.db")
    job = create_job(through, spec)
    assert JobRunner(through).run(job).trials == 20
    trials = _trials(through, job)
    stopped = db.open_database(f"sqlite:///{tmp_path}/stopped.db")
    job2 = create_job(stopped, spec)
    stop = threading.Event()

    def on_trial(event: Any) -> None:
        if event.number == 11:
            stop.set()

    assert JobRunner(stopped, on_trial=on_trial, stop=stop).run(job2).state == "interrupted"
    assert JobRunner(stopped).run(job2).state == "completed"
    assert [t.configuration.hash for t in _trials(stopped, job2)] == [t.configuration.hash for t in trials]
    space = load_space("linux-nic")
    configs = [space.configuration(json.loads(t.configuration.canonical)) for t in trials]
    relief = set()
    for t, config in zip(trials, configs, strict=True):
        first = min(t.measurements, key=lambda m: m.id).metrics
        relief |= {c.hash for c in relief_moves(space, config, first)}
    later = [c.hash for c in configs[8:]]  # after the first round (default + 6 + ...)
    assert sum(h in relief for h in later) >= len(later) // 2, "diagnose rounds measured no relief moves"
    through.dispose()
    stopped.dispose()


def test_two_objectives_give_a_pareto_front(engine: Engine) -> None:
    spec = JobSpec(objectives=["throughput", "interrupts"], testbed="sim:benson-40g", budget=30, seed=1)
    outcome = JobRunner(engine).run(create_job(engine, spec))
    report = job_report(engine, outcome.job_id)
    assert report["engine"] == "nsga2"
    front = report["front"]
    assert len(front) >= 2
    goal = Goal.from_names(["throughput", "interrupts"], [])
    with db.session_scope(engine) as s:
        rows = [(t.number, t.summary["metrics"]) for t in db.job_trials(s, outcome.job_id) if t.summary]
    on_front = {r["number"] for r in front}
    for a in front:
        for b in front:
            assert not dominates(goal.values(a["metrics"]), goal.values(b["metrics"]))
    for number, metrics in rows:
        if number not in on_front:
            assert any(dominates(goal.values(f["metrics"]), goal.values(metrics)) or
                       goal.values(f["metrics"]) == goal.values(metrics) for f in front)


def test_single_objective_engines_refuse_two_objectives(engine: Engine) -> None:
    with pytest.raises(InvalidInputError) as err:
        create_job(engine, JobSpec(objectives=["throughput", "interrupts"], testbed="sim:benson-40g",
                                   engine="bayes"))
    assert err.value.field == "engine" and "nsga2" in str(err.value)


@pytest.mark.system
def test_cli_prints_the_front_as_json(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/front.db"
    res = subprocess.run(
        [sys.executable, "-m", "nictune", "optimize", "--objective", "throughput", "--objective", "interrupts",
         "--budget", "20", "--seed", "3", "--json", "--db", url], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["engine"] == "nsga2" and len(out["front"]) >= 1
    assert {"trial", "config", "metrics"} <= set(out["front"][0])
    bad = subprocess.run(
        [sys.executable, "-m", "nictune", "optimize", "--objective", "throughput", "--objective", "interrupts",
         "--engine", "ga", "--db", url], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nsga2" in bad.stderr and "Traceback" not in bad.stderr
    unknown = subprocess.run([sys.executable, "-m", "nictune", "optimize", "--objective", "throughput",
                              "--engine", "magic", "--db", url], capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr and unknown.stdout == ""
    assert "unknown engine 'magic'; known engines: bayes, ga, nsga2, ofat, random" in " ".join(unknown.stderr.split())


class _SlowPool(Executor):
    """Two simulated testbeds behind one executor; each measurement takes a little time so
    that trials of one batch overlap (a stand-in for a pool of workers in the runner's
    pure batching logic; tests/executors runs real workers)."""

    def __init__(self, slots: int):
        self._local = LocalExecutor(SimTestbed(PROFILES["sim:benson-40g"]))
        self.testbed = self._local.testbed
        self.kind = "sim"
        self.simulated = True
        self._slots = slots
        self.active = 0
        self.most = 0
        self._lock = threading.Condition()

    @property
    def slots(self) -> int:
        return self._slots

    def fingerprint(self) -> dict[str, Any]:
        return self._local.fingerprint()

    def default_space(self) -> str:
        return self._local.default_space()

    def measure(self, request: MeasureRequest) -> TrialResult:
        with self._lock:
            self.active += 1
            self.most = max(self.most, self.active)
            self._lock.notify_all()
            # Hold the measurement until another one runs too (or 2 s pass): overlap is
            # what a pool gives, and a loaded machine must not make it a matter of luck.
            self._lock.wait_for(lambda: self.active >= self._slots, timeout=2.0)
        try:
            time.sleep(0.01)
            return self._local.measure(request)
        finally:
            with self._lock:
                self.active -= 1


@pytest.mark.slow
def test_batches_run_in_parallel_and_replay_identically(tmp_path: Any) -> None:
    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", engine="ga", budget=12, seed=8,
                   engine_params={"population": 4}, racing=False, repeats=1, warm_start=False)
    pools = {1: _SlowPool(1), 2: _SlowPool(2)}
    orders = {}
    for slots, pool in pools.items():
        engine = db.open_database(f"sqlite:///{tmp_path}/slots{slots}.db")
        job = create_job(engine, spec, executor_factory=lambda name, noise, pool=pool: pool)
        out = JobRunner(engine, executor_factory=lambda name, noise, pool=pool: pool).run(job)
        assert out.trials == 12
        orders[slots] = [t.configuration.hash for t in _trials(engine, job)]
        engine.dispose()
    assert pools[2].most == 2 and pools[1].most == 1
    assert orders[1] == orders[2], "the engine sees the same tells whatever the parallelism"


def test_a_trial_withdrawn_while_waiting_is_run_on_resume_not_failed(tmp_path: Any) -> None:
    """A pool executor withdraws a request when the job stops while it waits for a worker:
    that trial is left out (not failed) and the resumed job runs it."""
    from nictune.executors import MeasurementWithdrawn

    engine = db.open_database(f"sqlite:///{tmp_path}/withdrawn.db")
    stop = threading.Event()

    class Withdrawing(LocalExecutor):
        calls = 0

        def measure(self, request: MeasureRequest) -> TrialResult:
            Withdrawing.calls += 1
            if Withdrawing.calls == 3:
                stop.set()
                raise MeasurementWithdrawn("stopped while waiting for a worker (test)")
            return super().measure(request)

    spec = JobSpec(objectives=["throughput"], testbed="sim:benson-40g", engine="random", budget=5, seed=1,
                   racing=False, repeats=1, warm_start=False)
    job = create_job(engine, spec)
    factory = lambda name, noise: Withdrawing(SimTestbed(PROFILES["sim:benson-40g"]))  # noqa: E731
    first = JobRunner(engine, stop=stop, executor_factory=factory).run(job)
    assert first.state == "interrupted" and first.failed == 0
    assert [t.state for t in _trials(engine, job)] == ["completed", "completed"]
    done = JobRunner(engine, executor_factory=factory).run(job)
    assert done.state == "completed" and done.failed == 0
    assert [t.number for t in _trials(engine, job)] == [0, 1, 2, 3, 4]
    engine.dispose()


def test_a_pool_needs_the_service(engine: Engine) -> None:
    with pytest.raises(InvalidInputError) as err:
        create_job(engine, JobSpec(objectives=["throughput"], testbed="pool:lab"))
    assert err.value.field == "testbed" and "--server" in str(err.value)


# Issue 34: a race whose recommendation moves. Random search on the simulated 100 GbE pair,
# UDP with loss <= 0.1 % at 40 % noise: with seed 7 the recommendation moved during the final
# race, and the race used to end with the newest choice measured once.
MOVING = dict(objectives=["throughput"], testbed="sim:cai-100g", workload="udp", constraints=["loss<=0.1"],
              engine="random", budget=15, seed=7, noise=0.4, repeats=3, warm_start=False)


@pytest.fixture()
def three_finalists(monkeypatch: pytest.MonkeyPatch) -> None:
    """The moving race below was found with a final race of 3 (a budget-60 job's); a budget-15
    job races 1 finalist (RacingPolicy.final_race_for), which does not move there."""
    monkeypatch.setattr(RacingPolicy, "final_race_for", staticmethod(lambda budget: 3))


@pytest.mark.slow
@pytest.mark.usefixtures("three_finalists")
def test_a_race_whose_recommendation_moves_ends_with_the_recommendation_measured_to_its_repeats(
        engine: Engine) -> None:
    notices: list[str] = []
    outcome = JobRunner(engine, on_notice=notices.append).run(create_job(engine, JobSpec(**MOVING)))  # type: ignore[arg-type]
    assert outcome.state == "completed"
    report = job_report(engine, outcome.job_id)
    rec = report["recommendation"]
    best = next(t for t in _trials(engine, outcome.job_id) if t.number == rec["number"])
    assert _runs(best) >= 3 and rec["interval"]["n"] >= 3, notices
    race = report["stats"]["race"]
    assert race["decided"] is True and race["measurements"] <= race["cap"]
    # It moved: more than the finalists and one final repeat were measured, and the output
    # said which trial could still be better.
    assert any("which could still be better" in n for n in notices) or race["measurements"] > 2, notices


@pytest.mark.slow
@pytest.mark.usefixtures("three_finalists")
def test_a_moving_race_stopped_halfway_resumes_to_a_recommendation_with_its_repeats(tmp_path: Any) -> None:
    spec = JobSpec(**MOVING)  # type: ignore[arg-type]
    stop = threading.Event()
    factory = stopping_after(spec.budget + 4, stop)  # inside the race, after the finalists
    engine = db.open_database(f"sqlite:///{tmp_path}/moving.db")
    job = create_job(engine, spec)
    assert JobRunner(engine, stop=stop, executor_factory=factory).run(job).state == "interrupted"
    assert JobRunner(engine).run(job).state == "completed"
    report = job_report(engine, job)
    best = next(t for t in _trials(engine, job) if t.number == report["recommendation"]["number"])
    assert _runs(best) >= 3
    engine.dispose()


@pytest.mark.slow
@pytest.mark.usefixtures("three_finalists")
def test_a_race_that_reaches_its_cap_says_so_and_recommends_a_configuration_with_its_repeats(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    from nictune.jobs import runner

    original = runner.policy_for

    def capped(goal: Goal, repeats: int, budget: int | None = None) -> Any:
        import dataclasses

        return dataclasses.replace(original(goal, repeats, budget), race_cap=1)

    monkeypatch.setattr(runner, "policy_for", capped)
    notices: list[str] = []
    outcome = JobRunner(engine, on_notice=notices.append).run(create_job(engine, JobSpec(**MOVING)))  # type: ignore[arg-type]
    report = job_report(engine, outcome.job_id)
    race = report["stats"]["race"]
    assert race == {"measurements": 1, "cap": 1, "decided": False}
    assert any("stopped at its cap of 1 measurements" in n for n in notices), notices
    runs = {t.number: _runs(t) for t in _trials(engine, outcome.job_id)}
    assert runs[report["recommendation"]["number"]] >= 3 or max(runs.values()) < 3
