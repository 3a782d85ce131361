"""Stopping rules in the job loop (issue 29): time limit, patience, the bayes engine's
expected-improvement rule, and the stop_reason every finished job stores (simulated
testbeds, SQLite)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine

from nictune import db
from nictune.errors import InvalidInputError
from nictune.executors import LocalExecutor, MeasureRequest
from nictune.jobs import JobRunner, JobSpec, create_job, job_report
from nictune.jobs.stopping import StopRules, format_duration, parse_duration
from nictune.measure._base import TrialResult
from nictune.report import build_report, load_job

#: A job that would spend its whole budget without a stopping rule.
LONG = dict(objectives=["throughput"], testbed="sim:benson-40g", workload="udp", budget=200, seed=3,
            noise=0.03, repeats=3, warm_start=False)


def slow(seconds: float, stop_after: int | None = None, stop: threading.Event | None = None) -> Any:
    """An executor factory whose measurements take ``seconds`` longer (a slow testbed), and
    that sets ``stop`` after the ``stop_after``-th measurement (a Ctrl-C) when given."""
    count = [0]

    class Slow(LocalExecutor):
        def measure(self, request: MeasureRequest) -> TrialResult:
            time.sleep(seconds)
            result = super().measure(request)
            count[0] += 1
            if stop is not None and count[0] == stop_after:
                stop.set()
            return result

    return lambda testbed, noise: Slow(testbed, noise=noise)


def _recommended_with_repeats(engine: Engine, job_id: int, repeats: int = 3) -> dict[str, Any]:
    report = job_report(engine, job_id)
    rec = report["recommendation"]
    assert rec is not None and rec["interval"]["n"] == repeats, rec  # the final race ran
    return report


@pytest.mark.slow
def test_patience_stops_the_job_and_the_final_race_still_runs(engine: Engine, tmp_path: Any) -> None:
    outcome = JobRunner(engine).run(create_job(engine, JobSpec(**LONG, patience=8)))
    assert outcome.state == "completed" and outcome.stop_reason == "patience"
    assert 8 < outcome.trials < 200
    report = _recommended_with_repeats(engine, outcome.job_id)
    assert report["stop_reason"] == "patience" and report["patience"] == 8
    assert report["stop_text"].startswith("stopped: 8 measured configurations in a row did not improve the "
                                          "recommendation (patience 8;")
    assert report["engine_done_at"] is None
    # The report's data and its HTML say it too.
    assert load_job(engine, outcome.job_id).info["stop_reason"] == "patience"
    page = build_report(engine, outcome.job_id, tmp_path / "report").html.read_text()
    assert "stopped: 8 measured configurations in a row did not improve the recommendation" in page
    assert "[patience]; stopping rules: patience 8" in page


@pytest.mark.slow
@pytest.mark.parametrize("search", ["bayes", "random"])
def test_a_time_limit_ends_the_job_before_it_with_its_final_race(engine: Engine, search: str) -> None:
    # random search proposes its trials in batches of up to 64 (a GA a generation at once):
    # the limit must stop a batch inside it, the first one included (it used to run whole:
    # 14 s against this 4 s limit).
    limit = 4.0
    job = create_job(engine, JobSpec(**LONG, time_limit_s=limit, engine=search))
    started = time.monotonic()
    outcome = JobRunner(engine, executor_factory=slow(0.15)).run(job)
    took = time.monotonic() - started
    assert outcome.state == "completed" and outcome.stop_reason == "time-limit"
    assert took < limit, took
    # Trials of 0.15 s and more: a few fit before the limit keeps the rest for the race (on a
    # loaded machine as few as 2), and random search stops inside its first batch of 64.
    assert 2 <= outcome.trials < (64 if search == "random" else 200)
    report = job_report(engine, job)
    assert report["elapsed_s"] < limit and report["time_limit_s"] == limit
    assert "within the time limit of 4s (" in report["stop_text"], report["stop_text"]
    # The limit kept time for a final race. Whether the race was decided depends on the load:
    # the limit keeps one run spare, and under CI's load a stall of a few trials' time once
    # ended a race with its recommendation at 2 runs of 3 (as documented: undecided, within
    # the limit). A decided race has brought its recommendation to its repeats.
    rec, race = report["recommendation"], report["race"]
    assert rec is not None and race["measurements"] >= 1, race
    runs = rec["interval"]["n"]
    assert runs >= 2 and (runs == 3 or not race["decided"]), (rec, race)


@pytest.mark.slow
def test_a_time_limit_stops_a_generation_run_two_at_a_time(engine: Engine) -> None:
    # A GA proposes its whole first generation (40) at once and a pool of two testbeds runs it
    # two at a time: 20 waves of 0.3 s and more, 6 s or more, against a 5 s limit. The limit
    # stops the generation after the waves that fit, with time left for a final race.
    class TwoAtATime(LocalExecutor):
        @property
        def slots(self) -> int:
            return 2

        def measure(self, request: MeasureRequest) -> TrialResult:
            time.sleep(0.3)
            return super().measure(request)

    limit = 5.0
    job = create_job(engine, JobSpec(**LONG, time_limit_s=limit, engine="ga", engine_params={"population": 40}))
    started = time.monotonic()
    outcome = JobRunner(engine, executor_factory=lambda testbed, noise: TwoAtATime(testbed, noise=noise)).run(job)
    took = time.monotonic() - started
    assert outcome.stop_reason == "time-limit" and took < limit, took
    assert 2 <= outcome.trials < 40  # inside the first generation
    # The limit kept time for a final race (whether it was decided depends on the load).
    report = job_report(engine, job)
    assert report["recommendation"] is not None and report["race"]["measurements"] >= 1, report["race"]


@pytest.mark.slow
def test_a_resumed_job_keeps_its_time_limit_counted_over_its_whole_life(engine: Engine) -> None:
    # 16 slow measurements take 2.4 s and more on a loaded machine (CI: two test processes,
    # PostgreSQL); a limit of 6 s left the resumed job too little for its final race there.
    limit = 9.0
    job = create_job(engine, JobSpec(**LONG, time_limit_s=limit))
    stop = threading.Event()
    first = JobRunner(engine, stop=stop, executor_factory=slow(0.15, 16, stop)).run(job)
    assert first.state == "interrupted" and first.stop_reason == "interrupted"
    used = job_report(engine, job)["elapsed_s"]
    assert used >= 16 * 0.15
    started = time.monotonic()
    second = JobRunner(engine, executor_factory=slow(0.15)).run(job)
    assert second.stop_reason == "time-limit" and second.trials < 200
    # What was left (about 6 s), not a fresh limit (9 s); the margin absorbs a loaded machine.
    assert time.monotonic() - started < limit - used + 1.5
    report = _recommended_with_repeats(engine, job)
    assert used < report["elapsed_s"] < limit


@pytest.mark.slow
def test_a_resumed_job_keeps_its_patience(tmp_path: Any) -> None:
    trials = {}
    for name in ("straight", "stopped"):  # a database each: no answers from the other's cache
        engine = db.open_database(f"sqlite:///{tmp_path}/{name}.db")
        job = create_job(engine, JobSpec(**LONG, patience=8))
        if name == "stopped":
            stop = threading.Event()
            first = JobRunner(engine, stop=stop, executor_factory=slow(0.0, 10, stop)).run(job)
            assert first.state == "interrupted" and first.trials == 10
        resumed = JobRunner(engine).run(job)
        assert resumed.stop_reason == "patience"
        _recommended_with_repeats(engine, job)
        trials[name] = resumed.trials
        engine.dispose()
    assert trials["stopped"] == trials["straight"] < 200  # the same search, stopped at the same trial


@pytest.mark.slow
def test_the_bayes_expected_improvement_rule_stops_a_job(engine: Engine) -> None:
    spec = JobSpec(**LONG | {"seed": 1}, engine="bayes", engine_params={"ei_stop": 0.01, "ei_rounds": 3})
    outcome = JobRunner(engine).run(create_job(engine, spec))
    assert outcome.state == "completed" and outcome.stop_reason == "expected-improvement"
    assert outcome.trials < 200
    report = _recommended_with_repeats(engine, outcome.job_id)
    assert report["engine_done_at"] is None  # the engine did not run out of configurations
    assert "ei_stop=0.01, ei_rounds=3" in report["stop_text"], report["stop_text"]


def test_budget_and_engine_done_are_reasons_too(engine: Engine) -> None:
    spent = JobRunner(engine).run(create_job(engine, JobSpec(**LONG | {"budget": 6})))
    assert spent.stop_reason == "budget"
    assert job_report(engine, spent.job_id)["stop_text"] == "stopped: the budget of 6 trials was spent"
    small = JobRunner(engine).run(create_job(engine, JobSpec(objectives=["throughput"], testbed="sim:ixgbe-10g",
                                                              budget=20, seed=1, warm_start=False)))
    assert small.stop_reason == "engine-done" and small.trials == 8
    assert job_report(engine, small.job_id)["engine_done_at"] == 8


@pytest.mark.parametrize(("changes", "field"), [
    ({"patience": 0}, "patience"), ({"patience": -2}, "patience"),
    ({"time_limit_s": 0.0}, "time_limit"), ({"time_limit_s": -5.0}, "time_limit"),
    ({"time_limit_s": float("nan")}, "time_limit"),
])
def test_bad_stopping_options_are_refused_naming_the_field(engine: Engine, changes: dict[str, Any],
                                                           field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        create_job(engine, JobSpec(**LONG | changes))
    assert caught.value.field == field


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90.0), ("90s", 90.0), ("20m", 1200.0), ("1.5h", 5400.0), (" 2M ", 120.0), (45, 45.0), (0.5, 0.5),
])
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0s", "-5m", "5d", "m", "1e3", "inf", "90 minutes", True, "31d"])
def test_bad_durations_name_the_field_and_the_form(text: Any) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_duration(text)
    assert caught.value.field == "time_limit" and "20m" in str(caught.value.allowed)


def test_durations_read_back() -> None:
    assert [format_duration(s) for s in (4.0, 45, 1200, 725, 5400)] == ["4s", "45s", "20m", "12m 5s", "1h 30m"]


def test_the_time_limit_keeps_a_spare_run_for_the_race_and_times_the_race_by_its_own_runs() -> None:
    # A job that has used 10 s of 20; its search trials took up to 1 s, the engine's
    # proposal included; an unchallenged final race needs 4 runs.
    rules = StopRules({"time_limit_s": 20.0}, {"elapsed_s": 10.0, "stopping": {"trial_s": [0.4, 1.0]}}, 4)
    assert rules.trial_s() == 1.0
    assert rules.needed_s() == pytest.approx(1.0 * (1 + 1 + 4))  # one more trial, a spare run, the race
    assert not rules.time_is_up()
    late = StopRules({"time_limit_s": 20.0}, {"elapsed_s": 14.5, "stopping": {"trial_s": [1.0]}}, 4)
    assert late.time_is_up() and late.reason == "time-limit"  # 5.5 s left, 6 needed
    # Before its first run the race is timed as a search trial, with one run to spare: of 10 s
    # left, 8 runs of 1 s fit and 10 do not ...
    assert rules.race_fits(8) and not rules.race_fits(10)
    # ... after it, by its own runs (no proposal to wait for): 0.5 s each.
    rules.add_race_time(1.0, 2)
    assert rules.race_durations == [0.5]
    assert rules.race_fits(18) and not rules.race_fits(20)
    rules.add_race_time(0.0, 0)  # nothing measured: nothing learnt
    assert rules.race_durations == [0.5]
    # Without a limit everything fits.
    assert StopRules({}, {}, 4).race_fits(1000)
    # Runs shorter than a second: a second is kept spare (a loaded host's stall), not one run;
    # the race may use it (it keeps one run to spare itself).
    short = StopRules({"time_limit_s": 20.0}, {"elapsed_s": 10.0, "stopping": {"each_s": [0.2]}}, 4)
    assert short.needed_s() == pytest.approx(0.2 * (1 + 4) + 1.0)
    assert short.race_fits(48) and not short.race_fits(50)


def test_trials_are_timed_one_by_one_and_batches_per_wave() -> None:
    rules = StopRules({"time_limit_s": 60.0}, {}, 4)
    assert rules.needed_s() is None and not rules.time_is_up()  # the first trial always runs
    rules.add_trial_time(2.0)  # the first trial of a batch: known before the batch ends
    assert rules.trial_s() == 2.0 and rules.needed_s() == pytest.approx(2.0 * 6)
    rules.add_time(9.0, measured=6, slots=2)  # 3 waves of 3 s: telling and saving included
    assert rules.trial_s() == 3.0
    rules.add_time(100.0, measured=0, slots=1)  # nothing measured (cache answers): nothing learnt
    assert rules.trial_s() == 3.0
    for _ in range(10):  # the 10 latest trials do not push the batches out
        rules.add_trial_time(1.0)
    assert rules.trial_s() == 3.0 and rules.trial_durations == [1.0] * 10
    for _ in range(10):  # the longest of the 10 latest of each kind
        rules.add_time(0.5, measured=1, slots=1)
    assert rules.trial_s() == 1.0
    saved: dict[str, Any] = {}
    rules.save(saved)  # a resumed job goes on with both
    resumed = StopRules({"time_limit_s": 60.0}, saved, 4)
    assert (resumed.durations, resumed.trial_durations) == (rules.durations, rules.trial_durations)
