"""The job loop: engine.ask -> fitness cache or executor -> database -> engine.tell.

This is the one place where engines, executors and the database meet. Every trial is
committed before it is measured (state ``running``) and again when it ends, so killing
the process at any moment loses at most the trials in flight. A job is resumed by
replaying its stored trials, in order, through a fresh engine with the job's seed:
engines are deterministic, and each trial stores the metrics its engine was told
(``summary["told"]``), so the replay reaches exactly the state the job had when it stopped.

Each batch the engine asks for (a GA generation, a Bayesian batch) is evaluated with up
to ``executor.slots`` trials at once (one per testbed of a pool; 1 for a local testbed),
and told to the engine in trial-number order when the whole batch is done.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import db
from nictune.errors import InvalidInputError, JobError, SpaceDefinitionError, UnknownNameError
from nictune.executors import Executor, LocalExecutor
from nictune.jobs import lifecycle, warm
from nictune.jobs.evaluate import JobContext, Race, TrialEvent, evaluate, remeasure, summary_of
from nictune.jobs.stopping import StopRules, check_stop_options, stop_text
from nictune.measure import LATENCY_METRICS, METRICS, UNMEASURED, Workload, ignored_knobs_notice
from nictune.measure.appliers.registry import load_checked_space
from nictune.measure.benchmarks.workloads import resolve_workload
from nictune.measure.testbeds import check_modelled
from nictune.optimizer import ENGINES, OBJECTIVES, Engine, Goal, Score, make_engine
from nictune.optimizer.fidelity import DEFAULT_RISK, ShortRunRule
from nictune.optimizer.pareto import pareto_front, recommend_from_front
from nictune.optimizer.racing import RacingPolicy
from nictune.search_spaces import Configuration, SearchSpace, space_from_dict

__all__ = ["JobOutcome", "JobRunner", "JobSpec", "Prepared", "TrialEvent", "create_job", "default_engine",
           "summary_of"]

#: Engines are asked for at most this many configurations at a time.
MAX_BATCH = 64
#: A job stops, failed, when this many trials failed since it (re)started and none was
#: measured (answers from the cache do not count either way): a testbed that measures
#: nothing (iperf3 missing, a link down, a knob its hosts refuse) would otherwise spend the
#: whole budget, each failure after its own timeout.
FAIL_FAST = 5
#: Once a trial was measured, a job stops, failed, when this many trials fail in a row: a
#: testbed that breaks in the middle of a job (a link down, a host rebooted) would otherwise
#: spend the rest of the budget on failures. A few failures in a row are a region of the space
#: the hosts refuse (the engine learns to avoid it), not a broken testbed.
FAIL_STREAK = 10
#: The engine a job gets when none is named: one objective / several objectives.
DEFAULT_ENGINE = "bayes"
DEFAULT_MULTI_ENGINE = "nsga2"
#: Engines that search for a Pareto front (or do not care how scores rank).
MULTI_OBJECTIVE_ENGINES = ("nsga2", "random")

ExecutorFactory = Callable[[str, "float | None"], Executor]


def _local_executor(testbed: str, noise: float | None) -> Executor:
    if testbed.startswith("pool:"):
        raise InvalidInputError(
            f"testbed {testbed!r} is a pool of measurement workers: submit the job to the service that "
            f"runs them (nictune optimize --server URL --testbed {testbed})",
            field="testbed", allowed="sim:PROFILE, veth[:NAME], a pair YAML file; pool:NAME through --server",
        )
    return LocalExecutor(testbed, noise=noise)


def default_engine(objectives: Sequence[str]) -> str:
    """The engine used when a job names none (see the README for the benchmark behind it)."""
    return DEFAULT_MULTI_ENGINE if len(objectives) > 1 else DEFAULT_ENGINE


@dataclass(frozen=True)
class JobSpec:
    """Everything that defines a job, as the user gave it (validated by :func:`prepare`)."""

    objectives: Sequence[str]
    testbed: str
    #: A built-in workload's name, a workload file's path, or an inline definition (the file form).
    workload: str | Mapping[str, Any] = "tcp"
    #: Fields of the workload changed (:data:`nictune.measure.benchmarks.workload_spec.OPTION_KEYS`:
    #: streams, length, bitrate, reverse, bidir, omit, msg_size, rate); ``scenario`` and
    #: ``duration_s`` below change it too.
    workload_options: Mapping[str, Any] = field(default_factory=dict)
    space: str | Mapping[str, Any] | None = None
    engine: str | None = None
    engine_params: Mapping[str, Any] = field(default_factory=dict)
    constraints: Sequence[str] = ()
    budget: int = 60
    repeats: int = 3
    seed: int | None = None
    noise: float | None = None
    scenario: str | None = None
    duration_s: float | None = None
    racing: bool = True
    warm_start: bool = True
    #: Seconds of a short screening run (short runs first); ``None``: every run is full length.
    short_run_s: float | None = None
    #: Most chance of discarding, on its short run, a configuration that reaches the incumbent.
    short_risk: float = DEFAULT_RISK
    #: Stopping rules (see :mod:`nictune.jobs.stopping`): seconds the job may run over its
    #: whole life, and measured configurations in a row without a better recommendation.
    time_limit_s: float | None = None
    patience: int | None = None

    @property
    def engine_name(self) -> str:
        return self.engine or default_engine(self.objectives)


@dataclass
class JobOutcome:
    job_id: int
    state: str
    trials: int
    measured: int
    cached: int
    failed: int
    #: Why the job stopped (:data:`nictune.jobs.stopping.STOP_REASONS`).
    stop_reason: str | None = None


@dataclass
class Prepared:
    space: SearchSpace
    executor: Executor
    workload: Workload
    goal: Goal
    engine: Engine


def start_configs(space: SearchSpace) -> list[Configuration]:
    """The configurations a job measures first, each once: the space's default, its stock
    profiles (what users would otherwise apply, in the file's order: the job's end shows its
    recommendation against each), and its ``baseline`` profile when it has one.

    The baseline comes last because engines grow their first round from the last start
    configuration (one-knob changes of a known-good one)."""
    names = [*space.stock_profiles(), *(["baseline"] if "baseline" in space.profiles else [])]
    starts = {c.hash: c for c in [space.default(), *(space.profile(n) for n in names)]}
    return list(starts.values())


def _load_space(spec_space: str | Mapping[str, Any] | None, executor: Executor) -> SearchSpace:
    """The job's space, through the one check ``spaces validate`` makes, whatever the testbed."""
    source = executor.default_space() if spec_space is None else spec_space
    try:
        space, sim_only = load_checked_space(source)
    except (SpaceDefinitionError, UnknownNameError):
        raise
    except InvalidInputError as exc:  # a setting no host would take: the knob and its value
        name = source if isinstance(source, str) else source.get("name")
        raise InvalidInputError(f"space {name!r}: {exc}", field="space", allowed=exc.allowed) from None
    _check_settable(space, sim_only, executor)
    return space


def _check_engine(engine: str, objectives: Sequence[str]) -> None:
    if len(objectives) > 1 and engine not in MULTI_OBJECTIVE_ENGINES:
        raise InvalidInputError(
            f"engine {engine!r} optimizes one objective; {len(objectives)} objectives need a Pareto search: "
            f"use engine {' or '.join(MULTI_OBJECTIVE_ENGINES)} (or leave the engine out)",
            field="engine", allowed=", ".join(MULTI_OBJECTIVE_ENGINES),
        )
    if engine not in ENGINES:
        raise UnknownNameError("engine", engine, list(ENGINES))


#: Shortest short run: iperf3 reports in intervals, and below a second there is hardly one.
MIN_SHORT_RUN_S = 0.5

#: Largest budget, seed and id: what every database's INTEGER column holds.
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class CheckedSpec:
    """A job spec that passed every check a job gets before it is stored."""

    goal: Goal
    workload: Workload
    space: SearchSpace
    seed: int
    engine: str


def check_spec(spec: JobSpec, executor: Executor, *, probe: bool = True) -> CheckedSpec:
    """Every check :func:`create_job` makes, on an open executor; nothing is stored.

    Args:
        probe: ask the testbed's hosts which knobs they support (``False`` where that would
            need a testbed that does not exist yet).

    Raises:
        InvalidInputError: naming the field at fault.
    """
    goal, workload = _check_fields(spec)
    seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2**31)
    _check_measurable(goal, executor)
    if executor.kind == "sim":
        check_modelled(workload)
    space = _load_space(spec.space, executor)
    if probe:
        _check_supported(space, executor, spec.space)
    # Fails early on unknown engines and bad parameters.
    make_engine(spec.engine_name, space, seed=seed, params=dict(spec.engine_params), start=start_configs(space))
    return CheckedSpec(goal, workload, space, seed, spec.engine_name)


def _check_fields(spec: JobSpec) -> tuple[Goal, Workload]:
    """The checks that need no testbed (made before one is opened)."""
    if not 1 <= spec.budget <= INT32_MAX:
        raise InvalidInputError(f"budget must be a positive number of trials, got {spec.budget}",
                                field="budget", allowed=f"an integer from 1 to {INT32_MAX}")
    if spec.seed is not None and not 0 <= spec.seed <= INT32_MAX:
        raise InvalidInputError(f"seed must be between 0 and {INT32_MAX}, got {spec.seed}",
                                field="seed", allowed=f"0..{INT32_MAX}")
    if not 1 <= spec.repeats <= 100:
        raise InvalidInputError(f"repeats must be between 1 and 100, got {spec.repeats}",
                                field="repeats", allowed="1..100")
    check_stop_options(spec.time_limit_s, spec.patience)
    if len(set(spec.objectives)) != len(spec.objectives):
        raise InvalidInputError(f"objectives are repeated: {', '.join(spec.objectives)}", field="objectives",
                                allowed="distinct objective names")
    goal = Goal.from_names(list(spec.objectives), list(spec.constraints))
    _check_engine(spec.engine_name, [o.name for o in goal.objectives])
    workload = spec_workload(spec)
    check_goal_workload(goal, workload)
    _check_short_runs(spec, workload, multi=len(goal.objectives) > 1, metric=goal.objective.metric)
    return goal, workload


def spec_workload(spec: JobSpec) -> Workload:
    """The workload a spec names, with its options, scenario and duration applied.

    Raises:
        InvalidInputError: naming the field at fault (``streams``, ``latency.msg_size`` ...).
    """
    options = {**spec.workload_options, "scenario": spec.scenario, "duration": spec.duration_s}
    return resolve_workload(spec.workload, options)


def check_goal_workload(goal: Goal, workload: Workload) -> None:
    """Refuse a goal that reads a metric the workload does not measure (a latency objective
    on a workload with no latency part, throughput on a latency-only one).

    Raises:
        InvalidInputError: naming ``objectives`` (or ``constraints``) and what would fit.
    """
    measured = set(workload.measures())
    missing = sorted(goal.metrics() - measured)
    if not missing:
        return
    what = ("has no latency part (sockperf)" if set(missing) & set(LATENCY_METRICS)
            else "is latency only (no iperf3 run)")
    message = f"workload {workload.name!r} {what}, so it cannot report {', '.join(missing)}"
    if any(o.metric in missing or o.per in missing for o in goal.objectives):
        fitting = [name for name, o in OBJECTIVES.items()
                   if o.metric in measured and (o.per is None or o.per in measured)]
        raise InvalidInputError(message, field="objectives",
                                allowed=f"for this workload: {', '.join(fitting)}; or a workload that measures it")
    raise InvalidInputError(message, field="constraints",
                            allowed="constraints on " + ", ".join(m for m in METRICS if m in measured))


def create_job(dbe: DbEngine, spec: JobSpec, *, executor_factory: ExecutorFactory | None = None) -> int:
    """Validate ``spec`` and store it as a pending job; returns the job id.

    Raises:
        InvalidInputError: naming the field at fault, before anything is stored.
    """
    _check_fields(spec)  # before a testbed is opened
    with (executor_factory or _local_executor)(spec.testbed, spec.noise) as executor:
        checked = check_spec(spec, executor)
        goal, workload, space, seed, engine_name = (checked.goal, checked.workload, checked.space, checked.seed,
                                                    checked.engine)
        with db.session_scope(dbe) as s:
            tb = db.get_or_create_testbed(s, executor.testbed, executor.kind, executor.fingerprint())
            wl = db.get_or_create_workload(s, workload.name, workload.key())
            job = db.create_job(
                s, space_name=space.name, space_definition=space.definition, testbed=tb, workload=wl,
                objectives=[o.name for o in goal.objectives], constraints=[str(c) for c in goal.constraints],
                engine=engine_name, engine_params=dict(spec.engine_params), budget=spec.budget,
                repeats=spec.repeats, seed=seed,
            )
            ignored = executor.ignored_knobs(space)
            # What the user should know about the job's figures (the service shows it): what a
            # model stands for, and what it ignores. A real testbed's notices (settings restored
            # after a crash) are news of the moment, not of the job.
            notices = [*executor.notices] if executor.kind == "sim" else []
            notices += [ignored_knobs_notice(executor.testbed, space.name, ignored)] if ignored else []
            job.stats = {"measured": 0, "cached": 0, "failed": 0, "runs": 0, "notices": notices,
                         # Racing compares one objective; Pareto jobs measure fixed repeats.
                         "options": {"racing": spec.racing and len(goal.objectives) == 1,
                                     "warm_start": spec.warm_start, **_stop_options(spec),
                                     **({"short_run_s": float(spec.short_run_s), "short_risk": spec.short_risk}
                                        if spec.short_run_s is not None else {})}}
            return int(job.id)


def _check_short_runs(spec: JobSpec, workload: Workload, *, multi: bool, metric: str) -> None:
    """Short runs screen new configurations for the race of one objective; a short run is
    shorter than the workload's full run. A short run shortens iperf3's part only: an
    objective the latency part (sockperf) measures has none."""
    if not 0 < spec.short_risk < 0.5:
        raise InvalidInputError(f"short-run risk must be between 0 and 0.5, got {spec.short_risk:g}",
                                field="short_risk", allowed="0 < risk < 0.5 (e.g. 0.05)")
    if spec.short_run_s is None:
        return
    if metric in LATENCY_METRICS:
        raise InvalidInputError(
            f"short runs shorten the throughput benchmark (iperf3), and objective {metric} is measured by the "
            f"latency one (sockperf), which keeps its full length: leave --short-run out",
            field="short_run", allowed="an objective iperf3 measures (throughput, loss, cpu ...)")
    full = workload.duration_s
    if multi or not spec.racing:
        raise InvalidInputError(
            "short runs screen new configurations against the incumbent of one objective with racing; "
            + ("a Pareto job has no single incumbent" if multi else "--no-racing measures every configuration "
               "fully") + ": leave --short-run out", field="short_run", allowed="one objective, racing on")
    if not (MIN_SHORT_RUN_S <= spec.short_run_s < full):
        raise InvalidInputError(
            f"a short run must last at least {MIN_SHORT_RUN_S:g} s and less than the full run ({full:g} s), "
            f"got {spec.short_run_s:g}", field="short_run",
            allowed=f"{MIN_SHORT_RUN_S:g} <= seconds < {full:g} (the workload's duration)")


def _stop_options(spec: JobSpec) -> dict[str, Any]:
    """The stopping rules stored with the job's options (a resumed job keeps them)."""
    out: dict[str, Any] = {}
    if spec.time_limit_s is not None:
        out["time_limit_s"] = float(spec.time_limit_s)
    if spec.patience is not None:
        out["patience"] = int(spec.patience)
    return out


def _final_race_runs(ctx: JobContext) -> int:
    """Benchmark runs a final race nothing challenges needs: the finalists once more, then the
    recommendation (one of them, with two runs by then) to its repeats."""
    if not ctx.racing or ctx.repeats < 2:
        return 0
    return ctx.policy.final_race + max(0, ctx.repeats - 2)


def _check_settable(space: SearchSpace, sim_only: Mapping[str, str], executor: Executor) -> None:
    """On a real testbed, refuse a space with knobs of a family only the simulator has, before
    the job is stored: otherwise every trial would fail at its measurement's own check.
    (Settings no host would take are refused on every testbed, by :func:`load_checked_space`.)

    Raises:
        InvalidInputError: naming ``space`` and the knobs.
    """
    if executor.kind == "sim":
        return
    if sim_only:
        name, why = next(iter(sim_only.items()))
        raise InvalidInputError(f"space {space.name!r}: {executor.testbed} cannot set {', '.join(sim_only)} "
                                f"({name}: {why}); only a simulated testbed can", field="space",
                                allowed="a space without them (nictune spaces probe fits one to the testbed)")


def _check_supported(space: SearchSpace, executor: Executor, given: str | Mapping[str, Any] | None) -> None:
    """Refuse a space with knobs the testbed's hosts cannot set (coalescing or rings on a
    veth pair), probed before the job is stored: otherwise every trial would fail applying
    them.

    Raises:
        InvalidInputError: naming ``space``, the knobs and the first one's reason.
    """
    unsupported = executor.unsupported_knobs(space)
    if not unsupported:
        return
    name, why = next(iter(unsupported.items()))
    source = given if isinstance(given, str) else "FILE.yaml" if given is not None else space.name
    raise InvalidInputError(
        f"space {space.name!r}: {executor.testbed} cannot set {', '.join(unsupported)} "
        f"({name}: {why.split('; ')[0]})",
        field="space",
        allowed=f"a space its hosts support: {executor.default_space()!r}, or the one "
                f"'nictune spaces probe --testbed {executor.testbed} --space {source} --out FITTED.yaml' writes",
    )


def _check_measurable(goal: Goal, executor: Executor) -> None:
    """Refuse a goal that needs a metric the testbed cannot measure (interrupts on veth).

    Raises:
        InvalidInputError: naming ``objectives`` (or ``constraints``) and the objectives
            the testbed can measure.
    """
    unmeasured = UNMEASURED.get(executor.kind, {})
    missing = sorted(goal.metrics() & set(unmeasured))
    if not missing:
        return
    message = f"{executor.testbed} cannot measure {', '.join(missing)}: {unmeasured[missing[0]]}"
    if any(o.metric in unmeasured or o.per in unmeasured for o in goal.objectives):
        measurable = [name for name, o in OBJECTIVES.items()
                      if o.metric not in unmeasured and o.per not in unmeasured]
        raise InvalidInputError(message, field="objectives", allowed=", ".join(measurable))
    measured = [name for name in METRICS if name not in unmeasured]
    raise InvalidInputError(message, field="constraints", allowed="constraints on " + ", ".join(measured))


def _noise_of(fingerprint: Mapping[str, Any]) -> float | None:
    raw = fingerprint.get("noise_cv")
    return float(raw) if raw is not None else None


def resume_text(job_id: int, budget: int, stored: Sequence[_Stored]) -> str:
    """Where a resumed job picks up: what it has, and the trial it goes on with."""
    completed = [t for t in stored if t.state == "completed"]
    cached = sum(t.source == "cache" for t in completed)
    failed = sum(t.state == "failed" for t in stored)
    parts = [f"{len(completed) - cached} measured", f"{cached} from the cache", *([f"{failed} failed"] * bool(failed))]
    nxt = f"goes on with trial {len(stored)}" if len(stored) < budget else "goes on with its final race"
    return (f"resuming job {job_id}: {len(stored)} of {budget} trials done ({', '.join(parts)}), replayed "
            f"without measuring them again; it {nxt}")


def policy_for(goal: Goal, repeats: int, budget: int | None = None) -> RacingPolicy:
    """The racing policy of a job: at most ``repeats`` runs per configuration, and a final
    race sized for its ``budget`` (:meth:`RacingPolicy.final_race_for`; 3 finalists without one)."""
    if budget is None:
        return RacingPolicy(goal, max_repeats=repeats)
    return RacingPolicy(goal, max_repeats=repeats, final_race=RacingPolicy.final_race_for(budget))


@dataclass(frozen=True)
class _Stored:
    """A trial the job already has (replayed on resume)."""

    trial_id: int
    hash: str
    canonical: str
    state: str
    source: str
    summary: dict[str, Any] | None
    runs: int  # measurements stored with it


class JobRunner:
    """Runs (and resumes) stored jobs.

    Args:
        dbe: the database engine (``nictune.db.open_database``).
        on_trial: called after every trial with a :class:`TrialEvent`.
        stop: when set, the job stops after the trials in flight and ends ``interrupted``.
        on_notice: called with messages for the user (settings restored, warm start ...).
        executor_factory: ``(testbed, noise) -> Executor``; the local executor by default.
    """

    def __init__(
        self,
        dbe: DbEngine,
        *,
        on_trial: Callable[[TrialEvent], None] | None = None,
        stop: threading.Event | None = None,
        on_notice: Callable[[str], None] | None = None,
        executor_factory: ExecutorFactory | None = None,
    ):
        self.dbe = dbe
        self.on_trial = on_trial
        self.on_notice = on_notice
        self.stop = stop or threading.Event()
        self.executor_factory = executor_factory or _local_executor

    def _notice(self, text: str) -> None:
        if self.on_notice:
            self.on_notice(text)

    def prepare(self, job_id: int) -> Prepared:
        with db.session_scope(self.dbe) as s:
            job = db.get_job(s, job_id)
            space = space_from_dict(dict(job.space_definition))
            fingerprint = dict(job.testbed.fingerprint)
            testbed_name = job.testbed.name
            wl_def = dict(job.workload.definition)
            goal = Goal.from_names(list(job.objectives), list(job.constraints))
            engine = make_engine(job.engine, space, seed=job.seed, params=dict(job.engine_params),
                                 start=start_configs(space))
        executor = self.executor_factory(testbed_name, _noise_of(fingerprint))
        for notice in executor.notices:
            self._notice(notice)
        ignored = executor.ignored_knobs(space)
        if ignored:
            self._notice(ignored_knobs_notice(testbed_name, space.name, ignored))
        if executor.fingerprint() != fingerprint:
            executor.close()
            raise JobError(
                f"job {job_id} was measured on a testbed with fingerprint {fingerprint}; "
                f"{testbed_name} now reports {executor.fingerprint()}: results would not be comparable"
            )
        workload = Workload.from_definition(wl_def)
        return Prepared(space, executor, workload, goal, engine)

    def run(self, job_id: int) -> JobOutcome:
        """Run job ``job_id`` to its budget (or until stopped), resuming what it already did."""
        prep = self.prepare(job_id)
        try:
            return self._loop(job_id, prep)
        finally:
            prep.executor.close()

    # ------------------------------------------------------------------ the loop
    def _context(self, job_id: int,
                 prep: Prepared) -> tuple[JobContext, dict[int, _Stored], dict[str, Any], StopRules]:
        with db.session_scope(self.dbe) as s:
            job = lifecycle.lock(s, job_id)
            lost = lifecycle.start(s, job)  # refuses a completed or cancelled job
            done = {t.number: _Stored(t.id, t.configuration.hash, t.configuration.canonical, t.state, t.source,
                                      t.summary, len(t.measurements))
                    for t in db.job_trials(s, job_id)}
            options = dict(job.stats.get("options") or {"racing": False, "warm_start": False})
            ctx = JobContext(
                dbe=self.dbe, job_id=job_id, budget=job.budget, executor=prep.executor,
                space_definition=dict(job.space_definition), workload=prep.workload, goal=prep.goal,
                policy=policy_for(prep.goal, job.repeats, job.budget), repeats=job.repeats,
                racing=bool(options.get("racing")) and len(prep.goal.objectives) == 1,
                short=(ShortRunRule(float(options["short_run_s"]), prep.workload.duration_s,
                                    float(options.get("short_risk", DEFAULT_RISK)))
                       if options.get("short_run_s") else None),
                seed=job.seed, testbed_id=job.testbed_id, workload_id=job.workload_id,
            )
            rules = StopRules(options, job.stats, _final_race_runs(ctx))
            if lost:
                job.stats["lost_in_flight"] = job.stats.get("lost_in_flight", 0) + lost
            if options.get("warm_start") and "warm_start" not in job.stats:
                job.stats["warm_start"] = {"supported": hasattr(prep.engine, "warm_start"),
                                           "until_measurement": warm.newest_measurement(s)}
            entries: list[dict[str, Any]] = []
            info = dict(job.stats.get("warm_start") or {})
            if info:
                entries = warm.history(s, job, prep.space, int(info.get("until_measurement", 0)))
            if info and info.get("configs") != len(entries):
                job.stats["warm_start"] = info | {"configs": len(entries)}
        warm_info = {**info, "engine": prep.engine.name, "entries": entries} if info else {}
        return ctx, done, warm_info, rules

    def _loop(self, job_id: int, prep: Prepared) -> JobOutcome:
        engine = prep.engine
        ctx, done, warm_info, rules = self._context(job_id, prep)
        if done:
            self._notice(resume_text(job_id, ctx.budget, list(done.values())))
        race = Race()
        number = 0
        streak = _FailureStreak()
        try:
            # Inside: a stop while its notice is printed (Ctrl-C, a closed pipe) ends the job interrupted.
            first = self._warm_start(ctx, prep, warm_info)
            # Replayed trials: their samples seed the race, their told metrics the engine.
            self._restore_race(ctx, race, done)
            while number < ctx.budget and not engine.finished:
                if rules.stopped or rules.time_is_up():  # a stopping rule: the final race follows
                    break
                started = time.monotonic()
                if first:
                    batch = first[: ctx.budget - number]
                    first = []
                else:
                    batch = engine.ask(min(MAX_BATCH, ctx.budget - number))
                if not batch:
                    break
                if self.stop.is_set():
                    return self._finish(ctx, race, "interrupted", number, rules=rules)
                events = self._run_batch(ctx, race, number, batch, done, streak, rules, started)
                for event in events:  # in trial-number order: replay must see the same tells
                    engine.tell(event.config, event.score, event.told_metrics)
                number += len(events)
                measured = sum(e.source == "measured" and e.number not in done for e in events)
                rules.add_time(time.monotonic() - started, measured, ctx.executor.slots)
                self._save_rules(ctx, rules)
                if streak.tripped:  # the rest of the batch is left for the resume, as after a stop
                    return self._finish(ctx, race, "failed", number, error=streak.error(ctx.job_id), rules=rules)
                if len(events) < len(batch) and (self.stop.is_set() or not rules.stopped):  # stopped inside it
                    return self._finish(ctx, race, "interrupted", number, rules=rules)
            raced = self._final_race(ctx, race, rules)
        except KeyboardInterrupt:
            self._finish(ctx, race, "interrupted", number, rules=rules)
            raise
        except BaseException as exc:
            self._finish(ctx, race, "failed", number, error=str(exc), rules=rules)
            raise
        # Stopped before or in the final race: interrupted too, so that a resume runs it.
        state = "interrupted" if self.stop.is_set() and (number < ctx.budget or not raced) else "completed"
        return self._finish(ctx, race, state, number, rules=rules,
                            reason=_stop_reason(state, rules, engine, number, ctx.budget),
                            engine_text=engine.stop_detail)

    def _warm_start(self, ctx: JobContext, prep: Prepared, info: Mapping[str, Any]) -> list[Configuration]:
        entries = list(info.get("entries") or [])
        if not info:
            return []
        if not info.get("supported", True):
            if entries:
                self._notice(f"warm start: engine {info.get('engine')} cannot use earlier results")
            return []
        if not entries:
            self._notice("warm start: no earlier measurements of this space on this testbed and workload")
            return []
        first, rest = warm.split(ctx.goal, entries, prep.space)
        told = prep.engine.warm_start([(c, ctx.score(m), m) for c, m in rest])  # type: ignore[attr-defined]
        self._notice(f"warm start: reused {len(entries)} earlier measured configurations "
                     f"({told} told to the engine, the best {len(first)} taken from the cache first)")
        return [c for c in first if not prep.engine.known(c)]

    def _restore_race(self, ctx: JobContext, race: Race, done: Mapping[int, _Stored]) -> None:
        """Put the samples of the job's completed trials back into the race (on resume)."""
        completed = [(n, done[n]) for n in sorted(done) if done[n].state == "completed"]
        if not completed:
            return
        with db.session_scope(self.dbe) as s:
            for number, stored in completed:
                samples = db.cached_samples(s, ctx.testbed_id, ctx.workload_id, stored.hash)
                config = Configuration.from_values(json.loads(stored.canonical))
                race.add(config, number, stored.trial_id, samples)
                race.runs[stored.hash] = stored.runs
                short = dict((stored.summary or {}).get("short") or {})
                if "value" in short:  # short runs first: the pairs that calibrate the next screens
                    race.short[stored.hash] = float(short["value"])

    def _run_batch(self, ctx: JobContext, race: Race, number: int, batch: Sequence[Configuration],
                   done: Mapping[int, _Stored], streak: _FailureStreak, rules: StopRules,
                   asked: float) -> list[TrialEvent]:
        """Evaluate ``batch`` (trials ``number``...) with up to ``executor.slots`` at once.

        Each measured trial is timed for the time limit (:meth:`StopRules.add_trial_time`),
        those that start at once from ``asked`` (``time.monotonic()`` before the engine's
        proposal), so that the limit can stop a batch after its first trial.

        Returns the events of the trials that ran, in number order: all of them unless
        ``stop`` was set, ``streak`` tripped or a stopping rule stopped the job, in which case
        trials not started are left out (and the rest of the batch is run again on resume).
        """
        slots = max(1, min(ctx.executor.slots, len(batch)))
        results: dict[int, TrialEvent] = {}
        lock = threading.Lock()

        def one(i: int, config: Configuration) -> None:
            n = number + i
            began = asked if i < slots else time.monotonic()
            event: TrialEvent | None
            if n in done:
                event = self._replay(ctx, n, config, done[n])
            elif self.stop.is_set() or streak.tripped or rules.stopped or rules.time_is_up():
                return
            else:
                event = evaluate(ctx, race, n, config)
                if event is not None:
                    streak.add(event)
            if event is None:  # withdrawn before it started: left for the resume
                return
            with lock:
                results[n] = event
                recommended = self._report(ctx, race, event)
                if n not in done:  # replayed trials were counted when they ran
                    rules.add_trial(event.source, recommended == event.config.hash and event.source != "failed")
                    if event.source == "measured":
                        rules.add_trial_time(time.monotonic() - began)

        if slots == 1:
            for i, config in enumerate(batch):
                one(i, config)
        else:
            with ThreadPoolExecutor(max_workers=slots, thread_name_prefix=f"nictune-job{ctx.job_id}") as pool:
                for future in [pool.submit(one, i, c) for i, c in enumerate(batch)]:
                    future.result()
        out: list[TrialEvent] = []
        for i in range(len(batch)):
            if number + i not in results:
                break
            out.append(results[number + i])
        return out

    def _report(self, ctx: JobContext, race: Race, event: TrialEvent) -> str | None:
        """Tell ``on_trial`` about ``event``; returns the recommended configuration's hash."""
        best = race.recommended(ctx.policy)
        # The best so far meets the constraints (on its mean); before anything does there is none.
        if best is not None and best in race.number and ctx.policy.stats.score(race.samples[best]).feasible:
            event.best_number = race.number[best]
            event.best_metrics = Goal.mean_metrics(race.samples[best])
        if self.on_trial:
            self.on_trial(event)
        return best

    def _replay(self, ctx: JobContext, number: int, config: Configuration,
                stored: _Stored) -> TrialEvent:
        state, source, summary = stored.state, stored.source, stored.summary
        if stored.hash != config.hash:
            raise JobError(
                f"cannot resume job {ctx.job_id}: trial {number} was {stored.hash[:12]} but the engine now "
                f"proposes {config.short_hash} (was nictune or the engine changed?); start a new job"
            )
        if state == "failed" or not summary:
            return TrialEvent(ctx.job_id, number, ctx.budget, config, "failed", {}, Score.failed(), None, {})
        told = dict(summary.get("told") or summary["metrics"])
        seconds = summary.get("seconds")
        return TrialEvent(ctx.job_id, number, ctx.budget, config, "replayed" if source == "measured" else "cache",
                          dict(summary["metrics"]), ctx.score(told), None, {}, told=told,
                          seconds=float(seconds) if seconds is not None else None)

    def _final_race(self, ctx: JobContext, race: Race, rules: StopRules) -> bool:
        """Measure the best few configurations once more, then the recommended one until it
        has ``repeats`` runs (it may change on the way). False when stopped on the way.

        With a time limit, the race also ends (undecided, as at its cap) before a measurement
        that would not end within the limit."""
        if not ctx.racing:
            return True
        if self.stop.is_set():
            return False
        # The finalists are stored with the job: a job stopped in its final race resumes
        # the same race (the ranking moves as the finalists are measured).
        with ctx.stats_lock, db.session_scope(self.dbe) as s:
            job = db.get_job(s, ctx.job_id, for_update=True)
            finalists = job.stats.get("final_race")
            if finalists is None:
                finalists = ctx.policy.finalists(race.snapshot())
                job.stats["final_race"] = finalists
        pending = [key for key in finalists if len(race.samples.get(key, ())) == 1]
        if pending:
            what = "the best configuration" if len(pending) == 1 else f"the {len(pending)} best configurations"
            self._notice(f"final race: measuring {what} once more")
        for key in pending:
            if self.stop.is_set():
                return False
            if not rules.race_fits(1):
                return self._race_out_of_time(ctx, 0)
            started = time.monotonic()
            remeasure(ctx, race, key, 1)
            rules.add_race_time(time.monotonic() - started, 1)
        # Then until it is decided (RacingPolicy.race_step): the recommendation to its runs,
        # and any configuration that could still beat it once more; at most race_cap
        # measurements (counted across a resume).
        policy = ctx.policy
        with ctx.stats_lock, db.session_scope(self.dbe) as s:
            spent = int(dict(db.get_job(s, ctx.job_id).stats.get("race") or {}).get("measurements", 0))
        while True:
            with race.lock:
                samples = race.snapshot()
            step = policy.race_step(samples)
            if step is None:
                self._race_state(ctx, decided=True, spent=spent)
                return True
            if spent >= policy.race_cap:
                open_ = len(policy.challengers(samples, policy.recommend(samples) or ""))
                self._notice(f"final race: stopped at its cap of {policy.race_cap} measurements; "
                             + (f"{open_} configuration(s) that could still be better were measured fewer than "
                                f"{policy.max_repeats} times, so " if open_ else "")
                             + f"the recommendation is the best of those measured {policy.max_repeats} times")
                self._race_state(ctx, decided=False, spent=spent)
                return True
            if self.stop.is_set():
                return False
            key, times = step
            times = min(times, policy.race_cap - spent)
            if not rules.race_fits(times):
                return self._race_out_of_time(ctx, spent)
            again = "once more" if times == 1 else f"{times} more times"
            if key == policy.recommend(samples):
                self._notice(f"final race: measuring the recommended configuration {again}")
            else:
                self._notice(f"final race: measuring trial {race.number[key]}, which could still be better, {again}")
            started = time.monotonic()
            got = remeasure(ctx, race, key, times)
            rules.add_race_time(time.monotonic() - started, times)
            spent += times
            self._race_state(ctx, decided=None, spent=spent)
            if got == 0:  # the measurement failed: the race stops with what it has
                self._notice("final race: a measurement failed; the recommendation is the best of the "
                             f"configurations measured {policy.max_repeats} times")
                self._race_state(ctx, decided=False, spent=spent)
                return True

    def _race_out_of_time(self, ctx: JobContext, spent: int) -> bool:
        """End the final race, undecided, at the job's time limit."""
        self._notice(f"final race: stopped to end within the job's time limit; the recommendation is the best "
                     f"of the configurations measured {ctx.policy.max_repeats} times (if any is)")
        self._race_state(ctx, decided=False, spent=spent)
        return True

    def _save_rules(self, ctx: JobContext, rules: StopRules) -> None:
        """Store the time used and the patience count (what a resumed job goes on from)."""
        with ctx.stats_lock, db.session_scope(self.dbe) as s:
            rules.save(db.get_job(s, ctx.job_id, for_update=True).stats)

    def _race_state(self, ctx: JobContext, *, decided: bool | None, spent: int) -> None:
        """Store how the final race stands: measurements spent, and whether it was decided
        (``None`` while it runs; ``False`` when its cap or a failure ended it)."""
        with ctx.stats_lock, db.session_scope(self.dbe) as s:
            job = db.get_job(s, ctx.job_id, for_update=True)
            job.stats["race"] = {"measurements": spent, "cap": ctx.policy.race_cap, "decided": decided}

    def _finish(self, ctx: JobContext, race: Race, state: str, trials: int, *, error: str | None = None,
                rules: StopRules, reason: str | None = None, engine_text: str | None = None) -> JobOutcome:
        """Store how the job ended: its recommendation, state and ``stop_reason`` (by default
        its state: ``interrupted`` or ``failed``)."""
        samples = race.snapshot()
        reason = reason or state
        with ctx.stats_lock, db.session_scope(self.dbe) as s:
            job = lifecycle.lock(s, ctx.job_id)
            decided = dict(job.stats.get("race") or {}).get("decided") is not False
            front = _front_members(ctx, race) if len(ctx.goal.objectives) > 1 else []
            # Several objectives: a member of the front (never a dominated configuration), by
            # the rule of recommend_from_front; with no feasible member, the least violation.
            best = recommend_from_front(front) if front else None
            if best is None and samples:
                best = ctx.policy.final_choice(samples, decided)
            if best is not None and best in race.trial_id:
                job.best_trial_id = race.trial_id[best]
                job.stats["recommendation"] = ctx.policy.summary(samples, best) | {"hash": best,
                                                                                  "number": race.number[best]}
            if samples:
                job.stats["noise"] = ctx.policy.noise_report(samples)
            if len(ctx.goal.objectives) > 1:
                job.stats["front"] = _front_rows(race, front)
            if reason == "engine-done":
                job.stats["engine_done_at"] = trials
            rules.save(job.stats)
            job.stats["stop_reason"] = reason
            job.stats["stop_text"] = stop_text(reason, job.stats, budget=ctx.budget, trials=trials,
                                               engine=job.engine, error=error, engine_text=engine_text,
                                               job_id=ctx.job_id)
            lifecycle.finish(s, job, state, error=error)
            job.stats["finished_at"] = datetime.now(UTC).isoformat()
            stats = dict(job.stats)
        return JobOutcome(ctx.job_id, state, trials, int(stats.get("measured", 0)), int(stats.get("cached", 0)),
                          int(stats.get("failed", 0)), reason)


def _stop_reason(state: str, rules: StopRules, engine: Engine, trials: int, budget: int) -> str:
    """Why a job that left its search loop stopped (a stopping rule first, then the engine)."""
    if state != "completed":
        return state
    if rules.reason is not None:
        return rules.reason
    # An engine with nothing left to propose (a small space measured whole, ofat's pass done,
    # a model that expects nothing better) ends the search before the budget: the job says so
    # rather than leave it a puzzle.
    if engine.finished and trials < budget:
        return engine.stop_reason or "engine-done"
    return "budget"


class _FailureStreak:
    """Failed trials since the job (re)started while none was measured (:data:`FAIL_FAST`),
    then failed trials since the last measured one (:data:`FAIL_STREAK`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed: list[TrialEvent] = []
        self.measured = False
        self.tripped = False

    def add(self, event: TrialEvent) -> None:
        with self._lock:
            if event.source == "measured":
                self.measured = True
                self._failed = []
            elif event.source == "failed":
                self._failed.append(event)
                self.tripped = len(self._failed) >= (FAIL_STREAK if self.measured else FAIL_FAST)

    def error(self, job_id: int) -> str:
        """Why the job stopped: the last error, and how many others there were."""
        failed = self._failed
        errors = list(dict.fromkeys(e.error or "no reason given" for e in reversed(failed)))
        others = len(errors) - 1
        what = "in a row failed" if self.measured else "failed and none was measured"
        return (f"stopped after {len(failed)} trials {what}: {errors[0]}"
                + (f" (and {others} other error{'s' if others > 1 else ''})" if others else "")
                + f"; check the testbed (nictune testbed check for a pair file), then start a new job or "
                f"resume this one (nictune optimize --resume {job_id})")


def _front_members(ctx: JobContext, race: Race) -> list[tuple[str, Score]]:
    """The job's Pareto front on mean metrics: (hash, score) of each non-dominated configuration,
    in trial order."""
    with race.lock:
        items = [(h, ctx.score(Goal.mean_metrics(v))) for h, v in race.samples.items() if v]
        return sorted(pareto_front(items), key=lambda item: race.number[item[0]])


def _front_rows(race: Race, front: list[tuple[str, Score]]) -> list[dict[str, Any]]:
    """The front as stored with the job: number, hash, mean metrics and feasibility of each member."""
    with race.lock:
        return [{"number": race.number[h], "hash": h, "metrics": Goal.mean_metrics(race.samples[h]),
                 "feasible": score.feasible} for h, score in front]
