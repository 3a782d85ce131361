"""Schemas of jobs: what a client submits and what it reads back."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from nictune.api.schemas.common import Page, enum_of
from nictune.measure.benchmarks.workloads import WORKLOADS
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds import DEFAULT_TESTBED
from nictune.optimizer import ENGINES, OBJECTIVES

StopReason = Literal["budget", "time-limit", "patience", "expected-improvement", "engine-done", "interrupted",
                     "failed", "cancelled"]
#: A duration: seconds as a JSON number, or text such as "90s", "20m", "1.5h". Any JSON here:
#: :func:`nictune.jobs.stopping.parse_duration` checks it in ``build_spec``, so a 422 names
#: ``time_limit`` and the allowed form whatever was sent.
Duration = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                                                    {"type": "string", "maxLength": 32}, {"type": "null"}]})]
JobStateName = Literal["pending", "running", "waiting", "interrupted", "completed", "failed", "cancelled"]
ObjectiveName = Annotated[str, Field(json_schema_extra=enum_of(OBJECTIVES))]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
#: An engine parameter's value. Any JSON here: :func:`nictune.api.submission.build_spec` checks it
#: against the engine's own ``PARAMS`` once the engine is known, so a 422 names
#: ``engine_params.NAME`` and that parameter's real range.
EngineParam = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "number"},
                                                       {"type": "string", "maxLength": 64}, {"type": "null"}]})]

_SUBMIT_EXAMPLE: dict[str, Any] = {
    "testbed": "sim:benson-40g",
    "workload": "tcp",
    "space": "benson-40g",
    "objectives": ["throughput"],
    "constraints": ["loss_pct <= 0.1"],
    "engine": "bayes",
    "engine_params": {"batch": 1},
    "budget": 60,
    "repeats": 3,
    "seed": 7,
}


def _names(values: Any) -> str:
    return ", ".join(sorted(values))


class JobCreate(BaseModel):
    """A job to run: what to search, where, for what, and for how long.

    ``space`` is the name of a built-in space, an inline space definition (the same
    mapping as a space YAML file: ``name``, ``knobs``, ``constraints``, ``profiles``), or
    null for the testbed's own space. Everything is validated before the job is stored;
    a 422 names the field at fault and what it allows.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_SUBMIT_EXAMPLE]})

    testbed: Name = Field(DEFAULT_TESTBED, description="sim:PROFILE (a model) or a testbed the operator "
                                                       "allowed (GET /v1/testbeds).",
                          examples=sorted(PROFILES))
    workload: Name | dict[str, Any] = Field(
        "tcp", description=f"A built-in workload ({_names(WORKLOADS)}) or an inline definition: the mapping a "
                           "workload file holds (name, protocol, streams, length, bitrate, reverse, bidir, duration, "
                           "omit, scenario, throughput, latency {mode, protocol, msg_size, rate, duration}); see "
                           "`nictune workloads show tcp`.")
    workload_options: dict[Annotated[str, StringConstraints(max_length=32)], Any] | None = Field(
        None, max_length=10,
        description="Fields of the workload to change: streams (iperf3 -P), length (-l), bitrate (-b per stream: "
                    "'5G', '800M' or a number of Gbit/s), reverse (-R), bidir (--bidir), omit (-O seconds), msg_size "
                    "and rate (its sockperf part). A change of the traffic shows in the workload's name, e.g. "
                    "'tcp(-P 4 -l 1400 -b 5G)'. Each value is checked; a 422 names workload_options.FIELD.",
        examples=[{"streams": 4, "length": 1400, "bitrate": "5G"}])
    space: Name | dict[str, Any] | None = Field(
        None, description="Built-in space name (GET /v1/spaces), an inline definition, or null for the "
                          "testbed's default space.")
    objectives: list[ObjectiveName] = Field(
        default_factory=lambda: ["throughput"], min_length=1, max_length=5,
        description="Objective names; the first one drives the search.")
    constraints: list[Annotated[str, StringConstraints(max_length=200)]] = Field(
        default_factory=list, max_length=20,
        description="Bounds on metrics: METRIC OP NUMBER, e.g. 'loss_pct <= 0.1'.")
    engine: Name | None = Field(
        None, description=f"One of: {_names(ENGINES)}; null: bayes for one objective, nsga2 (Pareto front) "
                          "for several.", json_schema_extra=enum_of(ENGINES))
    engine_params: dict[Annotated[str, StringConstraints(max_length=64)], EngineParam] = Field(
        default_factory=dict, max_length=16,
        description="Engine parameters (see the engine's documentation); each is checked against the "
                    "engine's own type and range, and numbers must be JSON numbers.")
    # Strict: a JSON true is not the integer 1, and "4" or "yes" are not a number or a boolean.
    budget: int = Field(60, ge=1, strict=True, description="Number of trials.")
    repeats: int = Field(3, ge=1, le=100, strict=True,
                         description="Most benchmark runs per trial (always this many when racing is off).")
    racing: bool = Field(True, strict=True,
                         description="Adaptive repeats: every configuration is run once, the 3 best once "
                                     "more at the end of the job (a final race) and the recommended one "
                                     "`repeats` times; the recommendation is chosen on the mean with its "
                                     "confidence interval.")
    warm_start: bool = Field(True, strict=True,
                             description="Seed the engine with earlier measurements on this testbed and workload.")
    seed: int | None = Field(None, ge=0, le=2**31 - 1, strict=True, description="Random seed; drawn when null.")
    # Strict floats still take JSON integers (0, 5), but not booleans or strings.
    noise: float | None = Field(None, ge=0.0, le=0.5, strict=True,
                                description="Simulated testbeds only: coefficient of variation of repeats.")
    scenario: Literal["idle", "busy"] | None = Field(None, description="idle, or busy loops on the other cores.")
    duration_s: float | None = Field(None, ge=1, le=3600, strict=True, description="Seconds per benchmark run.")
    short_run_s: float | None = Field(
        None, ge=0.5, le=3600, strict=True,
        description="Short runs first: each new configuration is run this many seconds, and full length only "
                    "when it could still beat the best so far (needs racing and one objective; shorter than "
                    "the run's duration). Null: every run is full length.")
    short_risk: float = Field(
        0.05, gt=0.0, lt=0.5, strict=True,
        description="With short_run_s: most chance of leaving at its short run a configuration as good as "
                    "the best so far's lower bound.")
    # Checked by nictune.jobs.stopping.parse_duration in build_spec (a 422 names time_limit).
    time_limit: Duration = Field(
        None, description="Stop before this much running time: seconds as a number, or text such as 90s, 20m, "
                          "1.5h; counted over the job's whole life. No new trial starts once another one and "
                          "the final race would not end within it.", examples=[1200, "20m"])
    patience: int | None = Field(None, ge=1, le=2**31 - 1, strict=True,
                                 description="Stop when this many measured configurations in a row did not "
                                             "improve the recommendation (cache hits do not count).")

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in cls.model_fields)
            if unknown:
                raise PydanticCustomError("unknown_field", "unknown field '{field}'",
                                          {"field": unknown[0], "allowed": ", ".join(cls.model_fields)})
        return data


class Progress(BaseModel):
    """How far a job has got."""

    done: int = Field(description="Trials finished (measured, answered from the cache, or failed).")
    budget: int
    fraction: float = Field(ge=0.0, le=1.0)
    measured: int
    cached: int
    failed: int
    running: int = Field(description="Trials in flight (0 or 1).")


class KnobChange(BaseModel):
    """A knob whose value differs from the space's default configuration."""

    knob: str
    default: Any = Field(description="Its value in the default configuration (null: inactive there).")
    best: Any = Field(description="Its value in this configuration (null: inactive here).")
    unit: str = ""


class BestTrial(BaseModel):
    """The best trial of a job so far."""

    number: int
    config_hash: str
    config: dict[str, Any]
    metrics: dict[str, float | None]
    spread: dict[str, dict[str, float | None]] = Field(
        default_factory=dict, description="Metric -> min and max over the trial's repeats.")
    score: dict[str, Any]
    changes: list[KnobChange] = Field(default_factory=list,
                                      description="The knobs of `config` that differ from the space's default "
                                                  "configuration, in the space's order (what tuning changed).")


class Recommendation(BaseModel):
    """The configuration a job recommends: best lower confidence bound of the first objective."""

    number: int | None = Field(description="Trial holding it.")
    config_hash: str
    objective: str
    mean: float | None
    low: float | None
    high: float | None
    n: int = Field(description="Benchmark runs behind the mean.")
    confidence: float
    text: str


class BaselineFigures(BaseModel):
    """The default or a stock profile, as measured in the job, against the recommendation."""

    name: str = Field(description="'default', or the stock profile's name (e.g. tuned-network-throughput, esnet).")
    stock: bool = Field(description="A stock profile: what users would otherwise apply (TuneD, ESnet ...).")
    state: Literal["completed", "failed", "not measured"]
    number: int | None = Field(description="Trial holding it (null: figures from the history, or none).")
    config_hash: str
    value: float | None = Field(description="The first objective's mean.")
    interval: dict[str, Any] | None = Field(description="low, high, n and confidence of that mean.")
    metrics: dict[str, float | None] = Field(description="The main metrics (the comparison's `metrics`).")
    change_pct: float | None = Field(description="The recommendation's objective relative to this one, in percent "
                                                 "of this one (+12.5: 12.5 % higher).")
    better: bool | None = Field(description="Whether the recommendation's objective is better than this one.")
    error: str | None = Field(description="A failed trial's error.")
    description: str | None = None
    source: list[str] = Field(default_factory=list, description="Where a stock profile's values come from.")
    not_expressed: list[str] = Field(default_factory=list,
                                     description="The stock profile's settings the job's space has no knob for.")


class Baselines(BaseModel):
    """The recommendation against the default and against each stock profile of the job's space."""

    objective: dict[str, Any] = Field(description="The first objective: name, label, unit, direction.")
    metrics: list[str] = Field(description="The metrics each entry shows.")
    recommendation: dict[str, Any] = Field(description="number, config_hash, value, interval and metrics of the "
                                                       "recommendation.")
    baselines: list[BaselineFigures]


class FrontMember(BaseModel):
    """One configuration of a multi-objective job's Pareto front."""

    number: int
    config_hash: str
    metrics: dict[str, float | None]
    feasible: bool


class JobLinks(BaseModel):
    """Where to go next."""

    self: str
    trials: str
    events: str
    cancel: str


class ShortRuns(BaseModel):
    """How short runs first screened a job's new configurations."""

    duration_s: float = Field(description="Seconds of a short run.")
    risk: float = Field(description="Most chance of discarding a configuration that reaches the incumbent.")
    runs: int = Field(description="Short runs made.")
    screened: int = Field(description="Configurations left at their short run.")
    promoted: int = Field(description="Configurations whose short run earned a full-length run.")


class JobOut(BaseModel):
    """A job as stored, with its progress, best trial so far and estimated time left."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": 12, "state": "running", "simulated": True,
        "note": "simulated testbed: figures come from a model, not from hardware",
        "testbed": "sim:benson-40g", "workload": "tcp", "space": "benson-40g", "objectives": ["throughput"],
        "constraints": [], "engine": "ga", "engine_params": {}, "budget": 60, "repeats": 3, "seed": 7,
        "created_at": "2024-12-02T10:00:00Z", "started_at": "2024-12-02T10:00:01Z", "finished_at": None,
        "error": None, "cancel_requested": False, "queue_position": None,
        "notices": ["sim:benson-40g is a model with no term for tx_ring (space benson-40g): its value changes "
                    "nothing in its figures"], "waiting_for": None, "eta_s": 3.2,
        "progress": {"done": 20, "budget": 60, "fraction": 0.33, "measured": 20, "cached": 0, "failed": 0,
                     "running": 1},
        "best": None,
        "links": {"self": "/v1/jobs/12", "trials": "/v1/jobs/12/trials", "events": "/v1/jobs/12/events",
                  "cancel": "/v1/jobs/12/cancel"},
    }]})

    id: int
    state: JobStateName
    simulated: bool = Field(description="True when the testbed is a model, not hardware.")
    note: str | None = None
    testbed: str
    workload: str
    space: str
    objectives: list[str]
    constraints: list[str]
    engine: str
    engine_params: dict[str, Any]
    budget: int
    repeats: int
    seed: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    cancel_requested: bool = Field(description="A cancel was accepted; the job ends after the trial in flight.")
    submitted_by: str | None = Field(None, description="The name of the API token that submitted the job "
                                                       "(null for a job started from the CLI).")
    cancelled_by: str | None = Field(None, description="The name of the API token that cancelled the job, if one "
                                                       "did.")
    queue_position: int | None = Field(description="For a job waiting for its testbed: 1 = next; else null.")
    notices: list[str] = Field(
        default_factory=list, description="What the user should know about the job's figures, e.g. knobs of its "
                                          "space a simulated testbed's model has no term for.")
    waiting_for: str | None = Field(
        default=None, description="For a job in state waiting: what it waits for, e.g. 'waiting for a worker "
                                  "on pool lab', or why the pool's live workers do not take its requests; "
                                  "else null.")
    eta_s: float | None = Field(description="Estimated seconds until the job ends (running jobs only).")
    progress: Progress
    best: BestTrial | None = Field(description="Best trial so far (null in lists and before the first trial); "
                                           "for a finished job, its recommendation.")
    racing: bool = Field(False, description="Adaptive repeats were on.")
    runs: int | None = Field(None, description="Full-length benchmark runs made (all repeats).")
    short_runs: ShortRuns | None = Field(None, description="Short runs first: how the screening went (null when off).")
    bench_seconds: float | None = Field(
        None, description="Seconds the benchmark ran, warm-up included, short and full runs (simulated testbeds: "
                          "the seconds a real run would take, not time spent).")
    warm_start_reused: int | None = Field(None, description="Earlier measured configurations the job reused.")
    engine_done_at: int | None = Field(None, description="Trials after which the engine had nothing left to "
                                                         "propose, when that came before the budget (a small "
                                                         "space measured whole, ofat's pass done); else null.")
    stop_reason: StopReason | None = Field(
        None, description="Why a finished job stopped: budget, time-limit, patience, expected-improvement (the "
                          "engine's model rule), engine-done (nothing left to propose), interrupted, failed or "
                          "cancelled; null while it runs (and for jobs older than the field).")
    stop_text: str | None = Field(None, description="The same for humans, e.g. 'stopped: 12 measured "
                                                    "configurations in a row did not improve the recommendation "
                                                    "(patience 12; 40 of 200 trials)'.")
    time_limit_s: float | None = Field(None, description="The job's time limit in seconds (null: none).")
    patience: int | None = Field(None, description="The job's patience (null: none).")
    elapsed_s: float | None = Field(None, description="Seconds the job has run, over all its runs.")
    recommendation: Recommendation | None = Field(None, description="Finished jobs: the recommended "
                                                                    "configuration with its interval.")
    noise: dict[str, dict[str, float]] | None = Field(
        None, description="Testbed noise estimated from the repeats (coefficient of variation per metric).")
    final_race: list[str] | None = Field(
        None, description="Finished jobs with racing: the configurations (hashes) measured once more at the end, "
                          "the best after the search, before the recommendation was chosen.")
    race: RaceState | None = Field(None, description="Finished jobs with racing: how the final race ended.")
    front: list[FrontMember] | None = Field(None, description="Multi-objective jobs: the Pareto front.")
    baselines: Baselines | None = Field(None, description="Job detail: the recommendation (or best so far) against "
                                                          "the default and each stock profile measured in the job.")
    links: JobLinks


class RaceState(BaseModel):
    """How a job's final race ended (after its finalists were measured once more)."""

    measurements: int = Field(description="Measurements the race spent after the finalists.")
    cap: int = Field(description="Most measurements the race may spend; at the cap it stops where it is.")
    decided: bool | None = Field(description="True: the recommendation has its repeats and nothing else could "
                                             "still beat it. False: the cap (or a failed measurement) ended "
                                             "the race, and the recommendation is the best of the "
                                             "configurations measured to their repeats. Null: still running.")


class JobPage(Page[JobOut]):
    """A page of jobs, newest first."""
