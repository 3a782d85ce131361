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
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import db
from nictune.errors import MeasurementError
from nictune.executors import Executor, MeasurementWithdrawn, MeasureRequest
from nictune.measure._base import Workload
from nictune.optimizer import Goal, Score
from nictune.optimizer.pareto import MultiScore
from nictune.optimizer.racing import RacingPolicy
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
    runs: int = 0  # benchmark runs this trial measured (0 for cache and replay)
    #: The mean metrics the engine is told (``metrics`` unless a replay told it earlier ones).
    told: dict[str, float] | None = None
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
             repeats: int) -> MeasureRequest:
    return MeasureRequest(
        job_id=ctx.job_id, trial_id=trial_id, step=step, testbed=ctx.executor.testbed,
        space=ctx.space_definition, values=config.as_dict(), workload=asdict(ctx.workload),
        repeats=repeats, seed=measurement_seed(ctx.seed, number, step),
    )


def evaluate(ctx: JobContext, race: Race, number: int, config: Configuration) -> TrialEvent | None:
    """Answer trial ``number`` (``config``) from the cache or by measuring it; store it.

    Returns ``None`` when the trial never started (the job stopped while it waited for a
    testbed): it is removed again, and a resumed job runs it.
    """
    began = time.monotonic()
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        job = db.get_job(s, ctx.job_id)
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
    started = time.monotonic()
    # With racing a configuration is run once here; the job's final race repeats the best.
    runs = 1 if ctx.racing else ctx.repeats
    try:
        result = ctx.executor.measure(_request(ctx, trial_id, number, 0, config, runs))
    except MeasurementWithdrawn:
        with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
            db.reset_running_trials(s, ctx.job_id, [trial_id])
        return None
    except MeasurementError as exc:
        with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
            failed = s.get(db.Trial, trial_id)
            assert failed is not None
            db.fail_trial(s, failed, str(exc))
            job = db.get_job(s, ctx.job_id)
            job.stats["failed"] = job.stats.get("failed", 0) + 1
        return TrialEvent(ctx.job_id, number, ctx.budget, config, "failed", {}, Score.failed(), None, {},
                          error=str(exc), seconds=time.monotonic() - started)
    samples = list(result.samples)
    notes = list(dict.fromkeys(result.notes))
    summary = summary_of(ctx.goal, [smp.metrics for smp in samples])
    summary["told"] = summary["metrics"]
    summary["seconds"] = time.monotonic() - started
    with ctx.stats_lock, db.session_scope(ctx.dbe) as s:
        done_trial = s.get(db.Trial, trial_id)
        assert done_trial is not None
        db.complete_trial(s, done_trial, samples, "measured", summary, snapshot=dict(result.snapshot),
                          notes=notes)
        job = db.get_job(s, ctx.job_id)
        job.stats["measured"] = job.stats.get("measured", 0) + 1
        job.stats["runs"] = job.stats.get("runs", 0) + len(samples)
    race.add(config, number, trial_id, [dict(smp.metrics) for smp in samples])
    with race.lock:
        race.runs[config.hash] = 1
    metrics = dict(summary["metrics"])
    return TrialEvent(ctx.job_id, number, ctx.budget, config, "measured", metrics, ctx.score(metrics), None,
                      {}, runs=len(samples), seconds=summary["seconds"])


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
        db.add_measurements(s, trial, result.samples, summary)
        job = db.get_job(s, ctx.job_id)
        job.stats["runs"] = job.stats.get("runs", 0) + len(new)
    return len(new)
