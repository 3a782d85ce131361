"""The job loop: engine.ask -> fitness cache or testbed -> database -> engine.tell.

This is the one place where engines, testbeds and the database meet. Every trial is
committed before it is measured (state ``running``) and again when it ends, so killing
the process at any moment loses at most the trial in flight. A job is resumed by replaying
its stored trials, in order, through a fresh engine with the job's seed: engines are
deterministic, so the replay reaches exactly the state the job had when it stopped.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import db
from nictune.errors import InvalidInputError, JobError, MeasurementError
from nictune.measure._base import Sample, Testbed, Workload
from nictune.measure.registry import open_testbed
from nictune.measure.workloads import get_workload
from nictune.optimizer import Goal, Score, make_engine
from nictune.optimizer._base import Engine
from nictune.search_spaces import Configuration, SearchSpace, load_space, space_from_dict

#: Engines are asked for at most this many configurations at a time.
MAX_BATCH = 64


@dataclass(frozen=True)
class JobSpec:
    """Everything that defines a job, as the user gave it (validated by :func:`prepare`)."""

    objectives: Sequence[str]
    testbed: str
    workload: str = "tcp"
    space: str | Mapping[str, Any] | None = None
    engine: str = "ga"
    engine_params: Mapping[str, Any] = field(default_factory=dict)
    constraints: Sequence[str] = ()
    budget: int = 60
    repeats: int = 3
    seed: int | None = None
    noise: float | None = None
    scenario: str | None = None
    duration_s: float | None = None


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


@dataclass
class JobOutcome:
    job_id: int
    state: str
    trials: int
    measured: int
    cached: int
    failed: int


@dataclass
class Prepared:
    space: SearchSpace
    testbed: Testbed
    workload: Workload
    goal: Goal
    engine: Engine


def _start_configs(space: SearchSpace) -> list[Configuration]:
    starts = [space.default()]
    if "baseline" in space.profiles:
        starts.append(space.profile("baseline"))
    return starts


def _load_space(spec_space: str | Mapping[str, Any] | None, testbed: Testbed) -> SearchSpace:
    if spec_space is None:
        return load_space(testbed.default_space())
    if isinstance(spec_space, str):
        return load_space(spec_space)
    return space_from_dict(dict(spec_space))


def create_job(dbe: DbEngine, spec: JobSpec) -> int:
    """Validate ``spec`` and store it as a pending job; returns the job id.

    Raises:
        InvalidInputError: naming the field at fault, before anything is stored.
    """
    if spec.budget < 1:
        raise InvalidInputError(f"budget must be a positive number of trials, got {spec.budget}",
                                field="budget", allowed="an integer >= 1")
    if not 1 <= spec.repeats <= 100:
        raise InvalidInputError(f"repeats must be between 1 and 100, got {spec.repeats}",
                                field="repeats", allowed="1..100")
    goal = Goal.from_names(list(spec.objectives), list(spec.constraints))
    workload = get_workload(spec.workload, scenario=spec.scenario, duration_s=spec.duration_s)
    seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2**31)
    with open_testbed(spec.testbed, noise=spec.noise) as bed:
        space = _load_space(spec.space, bed)
        # Fails early on unknown engines and bad parameters.
        make_engine(spec.engine, space, seed=seed, params=dict(spec.engine_params),
                    start=_start_configs(space))
        with db.session_scope(dbe) as s:
            tb = db.get_or_create_testbed(s, bed.name, bed.kind, bed.fingerprint())
            wl = db.get_or_create_workload(s, workload.name, workload.key())
            job = db.create_job(
                s, space_name=space.name, space_definition=space.definition, testbed=tb, workload=wl,
                objectives=[o.name for o in goal.objectives], constraints=[str(c) for c in goal.constraints],
                engine=spec.engine, engine_params=dict(spec.engine_params), budget=spec.budget,
                repeats=spec.repeats, seed=seed,
            )
            job.stats = {"measured": 0, "cached": 0, "failed": 0}
            return int(job.id)


def _noise_of(fingerprint: Mapping[str, Any]) -> float | None:
    raw = fingerprint.get("noise_cv")
    return float(raw) if raw is not None else None


def _trial_seed(job_seed: int, number: int) -> int:
    digest = hashlib.sha256(f"{job_seed}:{number}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass
class _CachedSample:
    metrics: dict[str, float]
    started_at: datetime
    finished_at: datetime
    counters: dict[str, Any] = field(default_factory=dict)


def summary_of(goal: Goal, repeats: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """What a trial keeps as its summary: mean, spread and score."""
    mean = Goal.mean_metrics(repeats)
    return {
        "metrics": mean,
        "spread": Goal.spread(repeats),
        "repeats": len(repeats),
        "score": goal.score(mean).as_dict(),
    }


class JobRunner:
    """Runs (and resumes) stored jobs.

    Args:
        dbe: the database engine (``nictune.db.open_database``).
        on_trial: called after every trial with a :class:`TrialEvent`.
        stop: when set, the job stops after the trial in flight and ends ``interrupted``.
    """

    def __init__(
        self,
        dbe: DbEngine,
        *,
        on_trial: Callable[[TrialEvent], None] | None = None,
        stop: threading.Event | None = None,
        on_notice: Callable[[str], None] | None = None,
    ):
        self.dbe = dbe
        self.on_trial = on_trial
        self.on_notice = on_notice
        self.stop = stop or threading.Event()

    def prepare(self, job_id: int) -> Prepared:
        with db.session_scope(self.dbe) as s:
            job = db.get_job(s, job_id)
            space = space_from_dict(dict(job.space_definition))
            fingerprint = dict(job.testbed.fingerprint)
            testbed_name = job.testbed.name
            wl_def = dict(job.workload.definition)
            goal = Goal.from_names(list(job.objectives), list(job.constraints))
            engine = make_engine(job.engine, space, seed=job.seed, params=dict(job.engine_params),
                                 start=_start_configs(space))
        testbed = open_testbed(testbed_name, noise=_noise_of(fingerprint))
        for notice in testbed.notices:
            if self.on_notice:
                self.on_notice(notice)
        if testbed.fingerprint() != fingerprint:
            testbed.close()
            raise JobError(
                f"job {job_id} was measured on a testbed with fingerprint {fingerprint}; "
                f"{testbed_name} now reports {testbed.fingerprint()}: results would not be comparable"
            )
        workload = Workload(**wl_def)
        return Prepared(space, testbed, workload, goal, engine)

    def run(self, job_id: int) -> JobOutcome:
        """Run job ``job_id`` to its budget (or until stopped), resuming what it already did."""
        prep = self.prepare(job_id)
        try:
            return self._loop(job_id, prep)
        finally:
            prep.testbed.close()

    def _loop(self, job_id: int, prep: Prepared) -> JobOutcome:
        goal, engine = prep.goal, prep.engine
        with db.session_scope(self.dbe) as s:
            job = db.get_job(s, job_id)
            if job.state in ("completed", "cancelled"):
                raise JobError(f"job {job_id} is already {job.state}; start a new job instead")
            lost = db.reset_running_trials(s, job_id)
            done = {t.number: (t.configuration.hash, t.state, t.source, t.summary) for t in db.job_trials(s, job_id)}
            budget, repeats, job_seed = job.budget, job.repeats, job.seed
            testbed_id, workload_id = job.testbed_id, job.workload_id
            db.set_job_state(s, job, "running")
            if lost:
                job.stats["lost_in_flight"] = job.stats.get("lost_in_flight", 0) + lost
        best: tuple[Score, int, dict[str, float]] | None = None
        counts = {"measured": 0, "cached": 0, "failed": 0}
        number = 0
        try:
            while number < budget and not engine.finished:
                batch = engine.ask(min(MAX_BATCH, budget - number))
                if not batch:
                    break
                for config in batch:
                    if number >= budget:
                        break
                    if self.stop.is_set():
                        return self._finish(job_id, "interrupted", number, counts)
                    if number in done:
                        event = self._replay(job_id, number, budget, config, done[number], goal)
                    else:
                        event = self._evaluate(job_id, number, budget, config, prep, goal, repeats,
                                               job_seed, testbed_id, workload_id)
                    counts[{"replayed": "measured", "cache": "cached"}.get(event.source, event.source)] += 1
                    engine.tell(config, event.score)
                    if event.source != "failed" and (best is None or event.score > best[0]):
                        best = (event.score, number, event.metrics)
                    event.best_number = best[1] if best else None
                    event.best_metrics = best[2] if best else {}
                    if self.on_trial:
                        self.on_trial(event)
                    number += 1
        except KeyboardInterrupt:
            self._finish(job_id, "interrupted", number, counts)
            raise
        except BaseException as exc:
            self._finish(job_id, "failed", number, counts, error=str(exc))
            raise
        return self._finish(job_id, "completed", number, counts, best_number=best[1] if best else None)

    def _replay(
        self, job_id: int, number: int, budget: int, config: Configuration,
        stored: tuple[str, str, str, dict[str, Any] | None], goal: Goal,
    ) -> TrialEvent:
        stored_hash, state, source, summary = stored
        if stored_hash != config.hash:
            raise JobError(
                f"cannot resume job {job_id}: trial {number} was {stored_hash[:12]} but the engine now "
                f"proposes {config.short_hash} (was nictune or the engine changed?); start a new job"
            )
        if state == "failed" or not summary:
            return TrialEvent(job_id, number, budget, config, "failed", {}, Score.failed(), None, {})
        metrics = dict(summary["metrics"])
        return TrialEvent(job_id, number, budget, config, "replayed" if source == "measured" else "cache",
                          metrics, goal.score(metrics), None, {})

    def _evaluate(
        self, job_id: int, number: int, budget: int, config: Configuration, prep: Prepared, goal: Goal,
        repeats: int, job_seed: int, testbed_id: int, workload_id: int,
    ) -> TrialEvent:
        with db.session_scope(self.dbe) as s:
            job = db.get_job(s, job_id)
            row = db.get_or_create_configuration(s, config.hash, config.canonical_json)
            cached = db.cached_samples(s, testbed_id, workload_id, config.hash)
            trial = db.start_trial(s, job, number, row)
            if cached:
                summary = summary_of(goal, cached) | {"cached_from": len(cached)}
                db.complete_trial(s, trial, [], "cache", summary)
                job.stats["cached"] = job.stats.get("cached", 0) + 1
                metrics = dict(summary["metrics"])
                return TrialEvent(job_id, number, budget, config, "cache", metrics, goal.score(metrics),
                                  None, {})
            trial_id = trial.id
        started = time.monotonic()
        try:
            result = prep.testbed.measure(prep.space.settings(config), prep.workload, repeats,
                                          _trial_seed(job_seed, number))
        except MeasurementError as exc:
            with db.session_scope(self.dbe) as s:
                failed = s.get(db.Trial, trial_id)
                assert failed is not None
                db.fail_trial(s, failed, str(exc))
                job = db.get_job(s, job_id)
                job.stats["failed"] = job.stats.get("failed", 0) + 1
            return TrialEvent(job_id, number, budget, config, "failed", {}, Score.failed(), None, {},
                              error=str(exc))
        samples: list[Sample] = result.samples
        summary = summary_of(goal, [smp.metrics for smp in samples])
        summary["seconds"] = time.monotonic() - started
        with db.session_scope(self.dbe) as s:
            done_trial = s.get(db.Trial, trial_id)
            assert done_trial is not None
            db.complete_trial(s, done_trial, samples, "measured", summary, snapshot=result.snapshot,
                              notes=result.notes)
            job = db.get_job(s, job_id)
            job.stats["measured"] = job.stats.get("measured", 0) + 1
        metrics = dict(summary["metrics"])
        return TrialEvent(job_id, number, budget, config, "measured", metrics, goal.score(metrics), None, {})

    def _finish(
        self, job_id: int, state: str, trials: int, counts: Mapping[str, int], *,
        best_number: int | None = None, error: str | None = None,
    ) -> JobOutcome:
        with db.session_scope(self.dbe) as s:
            job = db.get_job(s, job_id)
            if best_number is not None:
                for t in db.job_trials(s, job_id):
                    if t.number == best_number:
                        job.best_trial_id = t.id
            db.set_job_state(s, job, state, error=error)
            job.stats["finished_at"] = datetime.now(UTC).isoformat()
            stats = dict(job.stats)
        return JobOutcome(job_id, state, trials, int(stats.get("measured", 0)), int(stats.get("cached", 0)),
                          int(stats.get("failed", 0)))
