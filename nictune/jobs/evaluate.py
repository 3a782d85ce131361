"""Evaluating one trial: the fitness cache, the measurements, and adaptive repeats (racing).

A trial is one configuration of a job. :func:`evaluate` answers it from the fitness cache
when the configuration was measured before on the same testbed and workload; otherwise it
measures it through the job's executor:

* with racing (the default), one benchmark run: the job's final race
  (``JobRunner._final_race``) measures the best few again with :func:`remeasure`;
* without racing, ``repeats`` runs in one measurement.

The samples of every configuration of the job live in a :class:`Race`, shared by the
threads that evaluate a batch in parallel.
"""

from __future__ import annotations

import hashlib
import statistics
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import db
from nictune.errors import MeasurementError
from nictune.executors import Executor, MeasurementWithdrawn, MeasureRequest
from nictune.measure import Workload
from nictune.optimizer import Goal, Score
from nictune.optimizer.fidelity import Calibration, Screen, ShortRunRule, interval_sigma
from nictune.optimizer.pareto import MultiScore
from nictune.optimizer.racing import OBJECTIVE, RacingPolicy
from nictune.search_spaces import Configuration

Metrics = dict[str, float]


@dataclass
class TrialEvent:
    """What the loop reports after each trial (for progress bars and event streams)."""

    job_id: int
    number: int
    budget: int
    config: Configuration
    source: str  # measured | cache | replayed | failed
    metrics: dict[str, float]
    score: Score
    best_number: int | None
    best_metrics: dict[str, float]
    error: str | None = None
    runs: int = 0  # full-length benchmark runs this trial measured (0 for cache, replay and a short run alone)
    #: The mean metrics the engine is told (``metrics`` unless a replay told it earlier ones).
    told: dict[str, float] | None = None
    #: Short runs first: the short run's figures and whether it earned the full run.
    short: dict[str, Any] | None = None
    #: Wall seconds the trial took here (its measurement; the cache look-up for a cache hit);
    #: a replayed trial's as stored, ``None`` when unknown.
    seconds: float | None = None

    @property
    def told_metrics(self) -> dict[str, float]:
        return self.metrics if self.told is None else self.told


@dataclass(frozen=True)
class JobContext:
    """What every trial of a job needs (read-only while the job runs)."""

    dbe: DbEngine
    job_id: int
    budget: int
    executor: Executor
    space_definition: Mapping[str, Any]
    workload: Workload
    goal: Goal
    policy: RacingPolicy
    repeats: int
    racing: bool
    seed: int
    testbed_id: int
    workload_id: int
    #: Short runs first (``None``: every run is full length).
    short: ShortRunRule | None = None
    #: Held around every transaction that updates ``job.stats`` (threads of one batch).
    stats_lock: threading.Lock = field(default_factory=threading.Lock, compare=False)

    def score(self, metrics: Mapping[str, float]) -> Score:
        """What the engine is told: a :class:`MultiScore` when the job has several objectives."""
        if len(self.goal.objectives) > 1:
            return MultiScore.from_goal(self.goal, metrics)
        return self.goal.score(metrics)


@dataclass
class Race:
    """The job's samples per configuration hash, and which trial holds each configuration."""

    samples: dict[str, list[Metrics]] = field(default_factory=dict)
    trial_id: dict[str, int] = field(default_factory=dict)
    number: dict[str, int] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)  # measurement calls made, for seeds
    configs: dict[str, Configuration] = field(default_factory=dict)
    #: Oriented objective of each configuration's short run (short runs first).
    short: dict[str, float] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def add(self, config: Configuration, number: int, trial_id: int, samples: Sequence[Metrics]) -> None:
        with self.lock:
            config_hash = config.hash
            self.configs.setdefault(config_hash, config)
            self.samples.setdefault(config_hash, []).extend(dict(m) for m in samples)
            self.trial_id.setdefault(config_hash, trial_id)
            self.number.setdefault(config_hash, number)

    def snapshot(self) -> dict[str, list[Metrics]]:
        with self.lock:
            return {h: list(v) for h, v in self.samples.items() if v}

    def recommended(self, policy: RacingPolicy) -> str | None:
        return policy.recommend(self.snapshot())

    def incumbent_low(self, policy: RacingPolicy) -> float | None:
        """The recommendation's lower confidence bound (oriented objective, full runs only);
        ``None`` while nothing measured meets the constraints on its mean."""
        samples = self.snapshot()
        key = policy.recommend(samples)
        if key is None or not policy.stats.score(samples[key]).feasible:
            return None
        return policy.stats.objective_interval(samples[key], policy.stats.noise(samples)).low

    def short_pairs(self, policy: RacingPolicy) -> list[tuple[float, float]]:
        """(short, full mean) oriented objective of the configurations measured at both fidelities."""
        objective = policy.goal.objective
        with self.lock:
            return [(short, statistics.fmean([objective.oriented(m) for m in self.samples[h]]))
                    for h, short in self.short.items() if self.samples.get(h)]


def measurement_seed(job_seed: int, number: int, step: int) -> int:
    """The seed of measurement ``step`` of trial ``number`` (step 0 keeps the old scheme)."""
    text = f"{job_seed}:{number}" if step == 0 else f"{job_seed}:{number}:{step}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def summary_of(goal: Goal, repeats: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """What a trial keeps as its summary: mean, spread and score."""
    mean = Goal.mean_metrics(repeats)
    return {
        "metrics": mean,
        "spread": Goal.spread(repeats),
        "repeats": len(repeats),
        "score": goal.score(mean).as_dict(),
    }


def _request(ctx: JobContext, trial_id: int, number: int, step: int, config: Configuration,
             repeats: int, workload: Workload | None = None) -> MeasureRequest:
    return MeasureRequest(
        job_id=ctx.job_id, trial_id=trial_id, step=step, testbed=ctx.executor.testbed,
        space=ctx.space_definition, values=config.as_dict(), workload=asdict(workload or ctx.workload),
        repeats=repeats, seed=measurement_seed(ctx.seed, number, step),
    )


def bench_seconds(workload: Workload, runs: int) -> float:
    """Seconds the benchmarks ran for ``runs`` runs of ``workload``: iperf3's warm-up and
    measured part, and sockperf's run."""
    per_run = workload.omit_s + workload.duration_s if workload.throughput else 0.0
    if workload.latency is not None:
        per_run += workload.latency.duration_s
    return runs * per_run


def evaluate(ctx: JobContext, race: Race, number: int, config: Configuration) -> TrialEvent | None:
    """Answer trial ``number`` (``config``) from the cache or by measuring it; store it.

    With short runs first (``ctx.short``) a new configuration is run short, and full length
    only when the short run says it could still beat the incumbent (:func:`_screened`).

    Returns ``None`` when the trial never started (the job stopped while it waited for a
    testbed): it is removed again, and a resumed job runs it.
    """
    began = time.monotonic()
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        job = db.get_job(s, ctx.job_id, for_update=True)
        row = db.get_or_create_configuration(s, config.hash, config.canonical_json)
        cached = db.cached_samples(s, ctx.testbed_id, ctx.workload_id, config.hash)
        trial = db.start_trial(s, job, number, row)
        if cached:
            summary = summary_of(ctx.goal, cached) | {"cached_from": len(cached)}
            summary["told"] = summary["metrics"]
            db.complete_trial(s, trial, [], "cache", summary)
            job.stats["cached"] = job.stats.get("cached", 0) + 1
            s.flush()
            race.add(config, number, trial.id, cached)
            metrics = dict(summary["metrics"])
            return TrialEvent(ctx.job_id, number, ctx.budget, config, "cache", metrics, ctx.score(metrics),
                              None, {}, seconds=time.monotonic() - began)
        trial_id = trial.id
    # Short runs first, once there is an incumbent to compare with (before, a short run
    # could only earn its full run).
    incumbent_low = race.incumbent_low(ctx.policy) if ctx.short is not None else None
    if ctx.short is not None and incumbent_low is not None:
        return _screened(ctx, race, number, config, trial_id, ctx.short, incumbent_low)
    # With racing a configuration is run once here; the job's final race repeats the best.
    return _full_run(ctx, race, number, config, trial_id, time.monotonic(), runs=1 if ctx.racing else ctx.repeats)


@dataclass(frozen=True)
class _ShortRun:
    """What a promoted configuration's short run left: stored beside its full run."""

    info: dict[str, Any]
    samples: Sequence[Any]
    notes: Sequence[Any]
    workload: Workload


def _full_run(ctx: JobContext, race: Race, number: int, config: Configuration, trial_id: int, started: float,
              *, runs: int = 1, short: _ShortRun | None = None) -> TrialEvent | None:
    """Measure ``config`` full length (``runs`` runs in one measurement), store the trial (with
    its short run when it had one) and put it in the race."""
    step = 1 if short is not None else 0  # the short run was step 0
    try:
        result = ctx.executor.measure(_request(ctx, trial_id, number, step, config, runs))
    except MeasurementWithdrawn:
        _withdrawn(ctx, trial_id)
        return None
    except MeasurementError as exc:
        return _failed(ctx, number, config, trial_id, exc, started)
    samples = list(result.samples)
    summary = summary_of(ctx.goal, [smp.metrics for smp in samples])
    summary["told"] = summary["metrics"]
    summary["seconds"] = time.monotonic() - started
    if short is not None:
        summary["short"] = short.info
    notes = [*(short.notes if short else ()), *result.notes]
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        done_trial = s.get(db.Trial, trial_id)
        assert done_trial is not None
        db.complete_trial(s, done_trial, samples, "measured", summary, snapshot=dict(result.snapshot),
                          notes=list(dict.fromkeys(notes)), duration_s=ctx.workload.duration_s)
        job = db.get_job(s, ctx.job_id, for_update=True)
        _count(job, ctx.workload, len(samples))
        if short is not None:
            if short.samples:
                db.add_measurements(s, done_trial, short.samples, summary, duration_s=short.workload.duration_s,
                                    short=True)
                _count(job, short.workload, len(short.samples), short=True, measured=False)
            job.stats["promoted"] = job.stats.get("promoted", 0) + 1
    race.add(config, number, trial_id, [dict(smp.metrics) for smp in samples])
    with race.lock:
        race.runs[config.hash] = step + 1
    metrics = dict(summary["metrics"])
    return TrialEvent(ctx.job_id, number, ctx.budget, config, "measured", metrics, ctx.score(metrics), None,
                      {}, runs=len(samples), short=short.info if short else None, seconds=summary["seconds"])


def _count(job: db.Job, workload: Workload, runs: int, *, short: bool = False, measured: bool = True) -> None:
    """Add a measurement's runs and benchmark seconds to the job's counts."""
    stats = job.stats
    if measured:
        stats["measured"] = stats.get("measured", 0) + 1
    if short:
        stats["short_runs"] = stats.get("short_runs", 0) + runs
    else:
        stats["runs"] = stats.get("runs", 0) + runs
    stats["bench_seconds"] = round(stats.get("bench_seconds", 0.0) + bench_seconds(workload, runs), 3)


def _withdrawn(ctx: JobContext, trial_id: int) -> None:
    """The measurement never started (the job stopped): the trial is removed for the resume."""
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        db.reset_running_trials(s, ctx.job_id, [trial_id])


def _failed(ctx: JobContext, number: int, config: Configuration, trial_id: int, exc: Exception,
            started: float) -> TrialEvent:
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        failed = s.get(db.Trial, trial_id)
        assert failed is not None
        db.fail_trial(s, failed, str(exc))
        job = db.get_job(s, ctx.job_id, for_update=True)
        job.stats["failed"] = job.stats.get("failed", 0) + 1
    return TrialEvent(ctx.job_id, number, ctx.budget, config, "failed", {}, Score.failed(), None, {},
                      error=str(exc), seconds=time.monotonic() - started)


def _screened(ctx: JobContext, race: Race, number: int, config: Configuration, trial_id: int,
              rule: ShortRunRule, incumbent_low: float) -> TrialEvent | None:
    """Short runs first: run ``config`` short (or reuse its earlier short run), then full length
    only when :meth:`ShortRunRule.screen` says it could still beat the incumbent.

    A configuration left at its short run is told to the engine with its objective corrected
    for the short run's bias, and stays out of the race (which compares full runs only).
    """
    started = time.monotonic()
    short_wl = replace(ctx.workload, duration_s=rule.short_s)
    with db.session_scope(ctx.dbe) as s:
        reused = db.cached_samples(s, ctx.testbed_id, ctx.workload_id, config.hash, short_s=rule.short_s)
    short_samples: list[Any] = []
    snapshot: dict[str, Any] = {}
    notes: list[Any] = []
    within = 0.0
    if reused:
        short_metrics = reused
    else:
        try:
            result = ctx.executor.measure(_request(ctx, trial_id, number, 0, config, 1, short_wl))
        except MeasurementWithdrawn:
            _withdrawn(ctx, trial_id)
            return None
        except MeasurementError as exc:
            return _failed(ctx, number, config, trial_id, exc, started)
        short_samples, snapshot, notes = list(result.samples), dict(result.snapshot), list(result.notes)
        short_metrics = [dict(smp.metrics) for smp in short_samples]
        if ctx.goal.objective.metric in RATE_METRICS:  # the intervals are iperf3's rates
            within = interval_sigma(dict(short_samples[0].counters.get("iperf3") or {}).get("intervals_gbps") or [])
    objective = ctx.goal.objective
    short_value = statistics.fmean([objective.oriented(m) for m in short_metrics])
    snap = race.snapshot()
    calibration = rule.calibrate(race.short_pairs(ctx.policy), ctx.policy.stats.noise(snap)[OBJECTIVE].cv)
    screen = rule.screen(short_value, incumbent_low, calibration, within)
    with race.lock:
        race.short[config.hash] = short_value
        race.configs.setdefault(config.hash, config)
        race.trial_id.setdefault(config.hash, trial_id)
        race.number.setdefault(config.hash, number)
    short_info = _short_info(rule, short_value, short_metrics, screen, calibration, bool(reused), within)
    if not screen.promote:
        return _keep_short(ctx, number, config, trial_id, short_samples, short_metrics, short_info, snapshot,
                           notes, screen, started)
    return _full_run(ctx, race, number, config, trial_id, started,
                     short=_ShortRun(short_info, short_samples, notes, short_wl))


#: Objectives whose per-interval stability iperf3 reports (its intervals are rates).
RATE_METRICS = ("throughput_gbps", "packet_rate_mpps")


def _short_info(rule: ShortRunRule, value: float, metrics: Sequence[Metrics], screen: Screen,
                calibration: Calibration, reused: bool, within: float) -> dict[str, Any]:
    """What a trial keeps of its short run: its figures, the bound it was judged by, the calibration."""
    return {"duration_s": rule.short_s, "value": value, "metrics": Goal.mean_metrics(metrics),
            "reused": reused, "risk": rule.risk, "within_sigma": round(within, 5),
            "calibration": calibration.as_dict()} | screen.as_dict()


def _keep_short(ctx: JobContext, number: int, config: Configuration, trial_id: int, short_samples: Sequence[Any],
                short_metrics: Sequence[Metrics], short_info: dict[str, Any], snapshot: Mapping[str, Any],
                notes: Sequence[Any], screen: Screen, started: float) -> TrialEvent:
    """A configuration left at its short run: stored with its short figures, told the corrected ones."""
    assert ctx.short is not None
    summary = summary_of(ctx.goal, short_metrics)
    told = dict(summary["metrics"])
    objective = ctx.goal.objective
    if objective.per is None and objective.metric in told:  # the estimate of a full run's figure
        told[objective.metric] = told[objective.metric] * (screen.corrected / short_info["value"]
                                                           if short_info["value"] else 1.0)
    summary |= {"told": told, "screened": True, "short": short_info, "seconds": time.monotonic() - started}
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        done_trial = s.get(db.Trial, trial_id)
        assert done_trial is not None
        job = db.get_job(s, ctx.job_id, for_update=True)
        if short_samples:
            db.complete_trial(s, done_trial, short_samples, "measured", summary, snapshot=dict(snapshot),
                              notes=list(dict.fromkeys(notes)), duration_s=ctx.short.short_s, short=True)
            _count(job, replace(ctx.workload, duration_s=ctx.short.short_s), len(short_samples), short=True)
        else:  # judged on an earlier job's short run: nothing measured now
            db.complete_trial(s, done_trial, [], "cache", summary)
            job.stats["cached"] = job.stats.get("cached", 0) + 1
        job.stats["screened"] = job.stats.get("screened", 0) + 1
    return TrialEvent(ctx.job_id, number, ctx.budget, config, "measured" if short_samples else "cache",
                      dict(summary["metrics"]), ctx.score(told), None, {}, runs=0, told=told, short=short_info,
                      seconds=summary["seconds"])


def remeasure(ctx: JobContext, race: Race, config_hash: str, runs: int) -> int:
    """Measure the job's configuration ``config_hash`` ``runs`` more times (one measurement);
    the samples are added to the trial that holds it. Returns how many samples were added
    (0 when the measurement failed: the trial keeps what it had)."""
    with race.lock:
        trial_id = race.trial_id[config_hash]
        number = race.number[config_hash]
        step = race.runs.get(config_hash, 0)
        race.runs[config_hash] = step + 1
        config = race.configs[config_hash]
    try:
        result = ctx.executor.measure(_request(ctx, trial_id, number, step, config, runs))
    except MeasurementError:  # withdrawn or failed: the trial keeps what it had
        return 0
    new = [dict(smp.metrics) for smp in result.samples]
    race.add(config, number, trial_id, new)
    with race.lock:
        every = list(race.samples[config_hash])
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        trial = s.get(db.Trial, trial_id)
        assert trial is not None
        summary = dict(trial.summary or {})
        summary.update(summary_of(ctx.goal, every))
        db.add_measurements(s, trial, result.samples, summary, duration_s=ctx.workload.duration_s)
        _count(db.get_job(s, ctx.job_id, for_update=True), ctx.workload, len(new), measured=False)
    return len(new)
