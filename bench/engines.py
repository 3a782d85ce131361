"""Compare the search engines on the simulated testbeds: measurements to a near-optimal answer.

Usage:
    .venv/bin/python bench/engines.py            # full run: 20 seeds, budget 100, 8 contenders, 5 scenarios
    .venv/bin/python bench/engines.py --quick    # smoke test: 3 seeds, budget 30, two scenarios

The full run took 210-772 s on this 2-core machine, otherwise idle (the machine's speed
varies from day to day; 527 s on 2026-11-23 with the final race, Nurika's exhaustive
enumeration 46 s of it; 302-650 s on 2026-11-26 with diagnose rounds, the enumeration
34-75 s). Runs are deterministic on one machine: the same command gives the same table
(timings apart); between machines a seed or two may land differently (floating point in the
GP fit and in Optuna's samplers).

Every figure comes from the simulated testbed (``nictune.measure.sim``): a model, not hardware.
Measurements carry 3% coefficient-of-variation noise (``--noise``); the figures of merit use
the model's noise-free value of the configuration each contender *recommends*.

Contenders (each over ``--seeds`` seeds, ``--budget`` measurements):

* nictune engines (``bayes``, ``ga``, ``nsga2``) driven exactly as the job loop drives them
  (``nictune/jobs/runner.py``): ask/tell with the start configurations ``[default, baseline
  profile]``; each new configuration measured once and the engine told its score and its
  mean metrics (the bottleneck counters ``bayes`` reads in its diagnose rounds); at the
  end the final race (``RacingPolicy.finalists``: the 3 best measured once more) and the
  final repeats of the recommended configuration (to ``max_repeats``, 3).
  ``RacingPolicy(goal)`` with its defaults.
* The budget counts *measurements* (first ones, final race and final repeats), for fairness
  with Optuna, which measures each suggestion once. The final phase is reserved inside the
  budget: a job with a budget of ``B`` measurements runs the loop for ``B - 4``
  measurements, then measures the finalists and the recommended configuration (at most 4
  measurements) and recommends ``policy.recommend`` (best lower confidence bound among the
  surely feasible, then the feasible-on-the-mean configurations). Engines do not know the
  budget, so each budget's job is a prefix of one long run, finalised; the curves show that
  answer at every budget.
* ``bayes-race-each`` (opt-in, not in the default contenders; the job loop's procedure
  before racing was deferred to the end): bayes with racing after every configuration:
  :meth:`RacingPolicy.decide` against the recommendation of the other configurations says
  ``again`` (measure it once more), ``incumbent`` (measure the incumbent, then the
  challenger once more) or ``stop``/``done`` (tell the engine the score of the mean); the
  loop runs for ``B - 2`` measurements and the incumbent is measured to 3 at the end.
* ``random`` and ``ofat`` (nictune's baselines, the hand-tuning procedure): start configurations,
  every configuration measured once, recommendation = best single measurement.
* ``optuna-tpe`` / ``optuna-nsga2``: Optuna's ``TPESampler()`` / ``NSGAIISampler()`` with default
  settings on the same simulator, through Optuna's own ask/tell API, as an Optuna user would
  write it (define-by-run conditional parameters, one measurement per trial, recommendation =
  ``study.best_trial``; constraints through ``constraints_func``). No start configurations.

Figures: evaluations until the recommendation first reaches 95% / 99% of the optimum
(median and interquartile range over seeds; ``>B`` when not reached within the budget), the
noise-free quality of the recommendation at budgets 20, 50, 100, the share of seeds whose
recommendation at 50 is within 2% of the optimum (``<=2%@50``, with its 95% Wilson interval:
20 seeds pin a share down only to about +-15 points, so ``--seeds 100 --contenders bayes``
is the run to quote for that figure) next to the share that had *measured* such a
configuration by then (``found``: below it, the search is the limit; above the ``<=2%@50``
figure, the recommendation), the engine time per suggestion at 100 and 500 trials, and for
constrained scenarios how often the optimum itself passes its constraints on one measurement
and on the mean of three (a constraint tighter than the noise cannot be decided by any
contender).

Nurika's constraint is "throughput >= 95% of the default's": the optimum (every NIC in active
wait, no wake-ups) delivers exactly what the default delivers, the offered rate, and noise
cannot push a measurement above the offered rate, so a tolerance of 1% under 3% noise is a
coin toss on the mean of three measurements (it was 99% until 2026-11-23; the optimum passed
it on the mean of three in 49% of draws). 95% is a tolerance the noise can decide.

Quality: for a maximised objective, value / optimum; for a minimised one whose optimum is
above zero, optimum / value; when the optimum is 0 (no interrupts at all), the share of the
default's value removed (1 - value / default). A recommendation that breaks a constraint of
the scenario (noise-free) has quality 0.

The optimum of each scenario is computed from the noise-free model: by exhaustive
enumeration when the space has at most 1,000,000 configurations, otherwise by an iterated
local search (steepest ascent over all one-knob changes, restarted from the default, the
profiles and random configurations, with random 2-3 knob kicks) of ``--optimum-evals``
model evaluations. Results are cached in ``bench/out/engines/optima.json``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import multiprocessing
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# One BLAS thread per worker process: the workers already use every core.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nictune.measure.sim import PROFILES, SimTestbed  # noqa: E402
from nictune.measure.sim.profiles import MODEL_VERSION  # noqa: E402
from nictune.measure.workloads import get_workload  # noqa: E402
from nictune.optimizer import Goal, Score, make_engine  # noqa: E402
from nictune.optimizer.racing import RacingPolicy  # noqa: E402
from nictune.search_spaces import BoolKnob, ChoiceKnob, Configuration, FloatKnob, IntKnob, load_space  # noqa: E402

OUT = ROOT / "bench" / "out" / "engines"
ENUMERATE_MAX = 1_000_000
BUDGET_MARKS = (20, 50, 100)


@dataclass(frozen=True)
class Scenario:
    name: str
    space: str
    testbed: str
    workload: str
    objective: str
    constraints: tuple[str, ...] = ()
    #: Constrain throughput to at least this fraction of the default configuration's.
    keep_default_throughput: float | None = None
    note: str = ""


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("benson-tcp", "benson-40g", "sim:benson-40g", "tcp", "throughput",
             note="Benson 40 GbE, one TCP stream, maximise throughput"),
    Scenario("benson-udp", "benson-40g", "sim:benson-40g", "udp", "throughput", ("loss<=0.1",),
             note="Benson 40 GbE, UDP 1472 B, maximise throughput with loss <= 0.1%"),
    Scenario("mishra-tcp", "linux-tcp", "sim:mishra-10g", "tcp", "throughput",
             note="Mishra 10 GbE, one TCP stream, maximise throughput"),
    Scenario("nurika", "nurika-pfring", "sim:nurika-pfring", "udp", "interrupts",
             keep_default_throughput=0.95,
             note="three PF_RING NICs, minimise wake-ups per GB, throughput >= 95% of the default's"),
    Scenario("linux-nic", "linux-nic", "sim:benson-40g", "tcp", "throughput",
             note="generic linux-nic space on the Benson pair, one TCP stream, maximise throughput"),
)}
QUICK_SCENARIOS = ("benson-tcp", "benson-udp")


# --------------------------------------------------------------------------- problem
class Problem:
    """One scenario on the simulator: noisy samples, noise-free values, quality."""

    def __init__(self, sc: Scenario, noise: float):
        self.sc = sc
        self.space = load_space(sc.space)
        self.profile = PROFILES[sc.testbed]
        self.bed = SimTestbed(self.profile, noise)
        self.workload = get_workload(sc.workload)
        self._clean: dict[str, dict[str, float]] = {}
        constraints = list(sc.constraints)
        if sc.keep_default_throughput is not None:
            base = self.clean(self.space.default())["throughput_gbps"]
            constraints.append(f"throughput>={base * sc.keep_default_throughput:.6g}")
        self.goal = Goal.from_names([sc.objective], constraints)

    def start(self) -> list[Configuration]:
        """What the job loop gives engines (``_start_configs`` in nictune/jobs/runner.py)."""
        out = [self.space.default()]
        if "baseline" in self.space.profiles:
            out.append(self.space.profile("baseline"))
        return out

    def clean(self, config: Configuration) -> dict[str, float]:
        m = self._clean.get(config.hash)
        if m is None:
            m = self.bed.clean(self.space.settings(config), self.workload)
            self._clean[config.hash] = m
        return m

    def clean_score(self, config: Configuration) -> Score:
        return self.goal.score(self.clean(config))

    def sample(self, config: Configuration, seed: int, number: int) -> dict[str, float]:
        result = self.bed.measure(self.space.settings(config), self.workload, 1, seed * 100_003 + number)
        return result.samples[0].metrics


def quality(score: Score | None, optimum: float, default: float) -> float:
    """How close a noise-free score is to the optimum (see the module docstring)."""
    if score is None or not score.feasible or not math.isfinite(score.value):
        return 0.0
    v = score.value
    if optimum > 0:  # maximised objective (values are positive)
        return max(0.0, v / optimum)
    if optimum < 0:  # minimised: values are negated, optimum = -min
        return max(0.0, optimum / v) if v < 0 else 1.0
    return max(0.0, 1.0 - v / default) if default < 0 else 1.0  # optimum exactly 0


# --------------------------------------------------------------------------- runs
@dataclass
class Run:
    scenario: str
    contender: str
    seed: int
    #: Noise-free score (feasible, value) of the recommendation after each evaluation.
    rec: list[tuple[bool, float]] = field(default_factory=list)
    #: Noise-free score of the best configuration measured so far (what was *found*).
    found: list[tuple[bool, float]] = field(default_factory=list)
    ask_ms: list[float] = field(default_factory=list)
    evaluations: int = 0
    configurations: int = 0
    finished_at: int | None = None
    noise_cv: float | None = None
    seconds: float = 0.0
    #: The recommended configuration at each of BUDGET_MARKS (for diagnostics).
    recommended: dict[int, dict[str, Any]] = field(default_factory=dict)


def _pair(score: Score) -> tuple[bool, float]:
    return (score.feasible, score.value if math.isfinite(score.value) else -1e300)


def run_nictune(problem: Problem, engine_name: str, seed: int, budget: int, *, racing: bool,
                start: bool = True, params: dict[str, Any] | None = None,
                policy_params: dict[str, Any] | None = None, race_each: bool = False) -> Run:
    """The job loop's procedure (ask, measure, tell, final race), without a database.

    ``budget`` counts measurements (every repeat, final race and final repeat). With racing,
    every configuration is measured once during the search, and the measurements of the
    final phase are reserved inside the budget: a job whose budget is ``B`` measurements runs
    the loop for ``B - final_race - (max_repeats - 2)`` measurements, then measures each of
    ``policy.finalists`` once more and the recommended configuration ``policy.final_repeats``
    times (``JobRunner._final_race``), and recommends ``policy.recommend``. The engine does
    not know the budget, so the job with budget ``B`` is a prefix of the longest run: the
    curve entry ``B`` is that prefix, finalised.

    ``race_each`` (the procedure before racing was deferred; bench only): after each
    configuration's first measurement, :meth:`RacingPolicy.decide` against the
    recommendation of the others says whether to measure it again (or the incumbent first);
    ``max_repeats - 1`` measurements are reserved for the final repeats of the incumbent.
    """
    started = time.perf_counter()
    engine = make_engine(engine_name, problem.space, seed=seed, params=params,
                         start=problem.start() if start else [])
    policy = RacingPolicy(problem.goal, **(policy_params or {}))
    repeats_left = max(0, policy.max_repeats - 1)
    reserve = 0 if not racing else repeats_left if race_each else policy.final_race + max(0, repeats_left - 1)
    limit = max(1, budget - reserve)
    run = Run(problem.sc.name, engine_name, seed)
    trials: dict[str, list[dict[str, float]]] = {}
    configs: dict[str, Configuration] = {}
    best_found: Score | None = None
    best_single: tuple[Score, str] | None = None
    plain: list[str | None] = []  # recommendation after m measurements, not finalised
    final: list[str | None] = []  # the same prefix, finalised (the final phase measured)

    def finalised() -> str | None:
        """The recommendation of the job that ends here, after its final phase."""
        t = {k: list(v) for k, v in trials.items()}
        k = 0

        def again(key: str) -> None:
            nonlocal k
            if k < reserve:  # never past the budget (the job loop has no such cap)
                t[key].append(problem.sample(configs[key], seed, 10_000_000 + 10 * run.evaluations + k))
                k += 1

        if not race_each:
            for key in policy.finalists(t):
                again(key)
        for _ in range(3):  # JobRunner._final_race: the recommendation may change on the way
            inc = policy.recommend(t)
            missing = policy.final_repeats(t, inc)
            if inc is None or missing <= 0 or k >= reserve:
                break
            for _ in range(missing):
                again(inc)
        return policy.recommend(t)

    def measure(config: Configuration) -> None:
        nonlocal best_found, best_single
        metrics = problem.sample(config, seed, run.evaluations)
        run.evaluations += 1
        trials.setdefault(config.hash, []).append(metrics)
        configs[config.hash] = config
        clean = problem.clean_score(config)
        if best_found is None or clean > best_found:
            best_found = clean
        run.found.append(_pair(best_found))
        if racing:
            plain.append(policy.recommend(trials))
            final.append(finalised())
        else:
            single = problem.goal.score(metrics)
            if best_single is None or single > best_single[0]:
                best_single = (single, config.hash)
            plain.append(best_single[1])

    while run.evaluations < limit and not engine.finished:
        t0 = time.perf_counter()
        batch = engine.ask(1)
        run.ask_ms.append((time.perf_counter() - t0) * 1000)
        if not batch:
            break
        for config in batch:
            if run.evaluations >= limit:
                break
            measure(config)
            # bayes-race-each (the job loop before the final race): decide against the
            # recommendation of the others; "incumbent" re-measures it, then the challenger.
            while racing and race_each and run.evaluations < limit:
                others = {k: v for k, v in trials.items() if k != config.hash}
                incumbent = policy.recommend(others)
                decision = policy.decide(trials, config.hash, incumbent)
                if decision == "incumbent" and incumbent is not None:
                    measure(configs[incumbent])
                    decision = "again"
                if (decision != "again" or len(trials[config.hash]) >= policy.max_repeats
                        or run.evaluations >= limit):
                    break
                measure(config)
            engine.tell(config, policy.score(trials[config.hash]), Goal.mean_metrics(trials[config.hash]))
    if engine.finished:
        run.finished_at = run.evaluations
    for e in range(1, budget + 1):
        if racing and e > reserve:
            rec = final[min(e - reserve, len(final)) - 1] if final else None
        else:
            rec = plain[min(e, len(plain)) - 1] if plain else None
        run.rec.append(_pair(problem.clean_score(configs[rec])) if rec else (False, -1e300))
        if rec and e in BUDGET_MARKS:
            run.recommended[e] = configs[rec].as_dict()
    run.found += [run.found[-1]] * (budget - len(run.found)) if run.found else []
    run.configurations = len(trials)
    run.seconds = time.perf_counter() - started
    run.noise_cv = policy.noise(trials)["objective"].cv if racing else None
    return run


def _suggest(trial: Any, space: Any) -> dict[str, Any]:
    """Define-by-run parameters, as an Optuna user would write them for this space."""
    values: dict[str, Any] = {}
    for name, knob in space.knobs.items():
        cond = knob.condition
        if cond is not None and not (cond.knob in values and cond.holds(values[cond.knob])):
            continue
        if isinstance(knob, BoolKnob):
            values[name] = trial.suggest_categorical(name, [False, True])
        elif isinstance(knob, ChoiceKnob):
            values[name] = trial.suggest_categorical(name, list(knob.choices))
        elif isinstance(knob, IntKnob) and knob.power_of_two:
            values[name] = trial.suggest_categorical(name, knob.values())
        elif isinstance(knob, IntKnob):
            values[name] = trial.suggest_int(name, knob.low, knob.high, step=knob.step, log=knob.log and knob.step == 1)
        elif isinstance(knob, FloatKnob):
            values[name] = trial.suggest_float(name, knob.low, knob.high, log=knob.log)
    return values


def run_optuna(problem: Problem, sampler_name: str, seed: int, budget: int) -> Run:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    goal = problem.goal

    if sampler_name == "optuna-tpe":
        sampler: Any = optuna.samplers.TPESampler(seed=seed)
    else:
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    study = optuna.create_study(direction=goal.objective.direction, sampler=sampler)
    run = Run(problem.sc.name, sampler_name, seed)
    started = time.perf_counter()
    configs: dict[int, Configuration] = {}
    rng = random.Random(seed)
    best_found: Score | None = None
    for number in range(budget):
        t0 = time.perf_counter()
        trial = study.ask()
        values = _suggest(trial, problem.space)
        run.ask_ms.append((time.perf_counter() - t0) * 1000)
        # The user keeps the space's rules (watermark <= ring / 2) by fixing what breaks them.
        config = problem.space.repair(values, rng)
        configs[trial.number] = config
        metrics = problem.sample(config, seed, number)
        run.evaluations += 1
        for c in goal.constraints:  # Optuna 5: feasible when every constraint value is <= 0
            x = metrics[c.metric]
            trial.set_constraint(str(c), x - c.threshold if c.op in ("<=", "<") else c.threshold - x)
        study.tell(trial, goal.objective.value(metrics))
        clean = problem.clean_score(config)
        if best_found is None or clean > best_found:
            best_found = clean
        try:
            rec = configs[study.best_trial.number]
            run.rec.append(_pair(problem.clean_score(rec)))
        except ValueError:  # nothing feasible yet
            run.rec.append((False, -1e300))
        run.found.append(_pair(best_found))
    run.configurations = len({c.hash for c in configs.values()})
    run.seconds = time.perf_counter() - started
    return run


# contender name -> (kind, engine, racing)
CONTENDERS: dict[str, tuple[str, str, bool]] = {
    "bayes": ("nictune", "bayes", True),
    "bayes-tpe": ("nictune-tpe", "bayes", True),
    # The procedure before racing was deferred to the end of the job, see run_nictune.
    "bayes-race-each": ("nictune-race-each", "bayes", True),
    "ga": ("nictune", "ga", True),
    "nsga2": ("nictune", "nsga2", True),
    "random": ("nictune", "random", False),
    "ofat": ("nictune", "ofat", False),
    "optuna-tpe": ("optuna", "optuna-tpe", False),
    "optuna-nsga2": ("optuna", "optuna-nsga2", False),
}
DEFAULT_CONTENDERS = ("bayes", "bayes-tpe", "ga", "nsga2", "random", "ofat", "optuna-tpe", "optuna-nsga2")

_PROBLEMS: dict[tuple[str, float], Problem] = {}


def _problem(name: str, noise: float) -> Problem:
    key = (name, noise)
    if key not in _PROBLEMS:
        _PROBLEMS[key] = Problem(SCENARIOS[name], noise)
    return _PROBLEMS[key]


def run_task(task: tuple[str, str, int, int, float]) -> Run:
    scenario, contender, seed, budget, noise = task
    problem = _problem(scenario, noise)
    kind, engine, racing = CONTENDERS[contender]
    if kind == "optuna":
        return run_optuna(problem, engine, seed, budget)
    params = {"surrogate": "tpe"} if kind == "nictune-tpe" else None
    run = run_nictune(problem, engine, seed, budget, racing=racing, params=params,
                      race_each=kind == "nictune-race-each")
    run.contender = contender
    return run


# --------------------------------------------------------------------------- optimum
def _space_key(problem: Problem) -> str:
    text = json.dumps([problem.space.definition, problem.sc.__dict__, str(problem.goal.describe()),
                       MODEL_VERSION], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _all_configs(space: Any) -> list[Configuration] | None:
    from nictune.optimizer.bayes import enumerate_space

    return enumerate_space(space, ENUMERATE_MAX)


def find_optimum(task: tuple[str, float, int]) -> dict[str, Any]:
    scenario, noise, evals = task
    problem = _problem(scenario, noise)
    t0 = time.time()
    default = problem.clean_score(problem.space.default())
    configs = _all_configs(problem.space)
    if configs is not None:
        best = max(configs, key=problem.clean_score)
        method = f"exhaustive enumeration of {len(configs)} configurations"
        count = len(configs)
    else:
        best, count = _iterated_local_search(problem, evals)
        method = f"iterated local search, {count} model evaluations"
    score = problem.clean_score(best)
    return {"scenario": scenario, "key": _space_key(problem), "value": score.value, "feasible": score.feasible,
            "default": default.value, "config": best.as_dict(), "method": method,
            "seconds": round(time.time() - t0, 1),
            "metrics": problem.clean(best)}


def _iterated_local_search(problem: Problem, evals: int) -> tuple[Configuration, int]:
    space, rng = problem.space, random.Random(12345)
    seen: set[str] = set()

    def score(c: Configuration) -> Score:
        seen.add(c.hash)
        return problem.clean_score(c)

    def climb(c: Configuration) -> Configuration:
        current, cur = c, score(c)
        while len(seen) < evals:
            nbs = [n for _, n in space.neighbours(current)]
            best = max(nbs, key=score, default=None)
            if best is None or not score(best) > cur:
                return current
            current, cur = best, score(best)
        return current

    starts = problem.start() + [space.profile(p) for p in sorted(space.profiles)]
    best = climb(starts[0])
    for s in starts[1:]:
        cand = climb(s)
        if score(cand) > score(best):
            best = cand
    while len(seen) < evals:
        if rng.random() < 0.5:
            values = dict(best)
            for _ in range(rng.choice((2, 3))):
                name = rng.choice(space.active(values))
                values[name] = space.knobs[name].mutate(values.get(name, space.knobs[name].default), rng, 0.4)
            start = space.repair(values, rng)
        else:
            start = space.sample(rng)
        cand = climb(start)
        if score(cand) > score(best):
            best = cand
    return best, len(seen)


def constraint_note(problem: Problem, opt: dict[str, Any], draws: int = 400) -> str:
    """How often the optimum itself passes its constraints on the mean of 1 and 3 noisy
    measurements (what racing and the recommendation can see)."""
    if not problem.goal.constraints or not opt.get("feasible"):
        return ""
    config = problem.space.configuration(opt["config"])
    shares = []
    for n in (1, 3):
        ok = 0
        for d in range(draws):
            samples = [problem.sample(config, 7_000_000 + d, k) for k in range(n)]
            ok += problem.goal.score(Goal.mean_metrics(samples)).feasible
        shares.append(ok / draws)
    return (f"the optimum passes {', '.join(str(c) for c in problem.goal.constraints)} on one measurement "
            f"in {shares[0]:.0%} of draws, on the mean of 3 in {shares[1]:.0%} (noise-free: passes)")


# --------------------------------------------------------------------------- overhead
def overhead_task(task: tuple[str, int]) -> tuple[str, dict[int, float]]:
    """Engine time per suggestion around trial 100 and 500 (noise-free Benson TCP, no racing)."""
    contender, trials = task
    problem = _problem("benson-tcp", 0.0)
    kind, engine_name, _ = CONTENDERS[contender]
    times: list[float] = []
    if kind == "optuna":
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler: Any = (optuna.samplers.TPESampler(seed=0) if engine_name == "optuna-tpe"
                        else optuna.samplers.NSGAIISampler(seed=0))
        study = optuna.create_study(direction="maximize", sampler=sampler)
        rng = random.Random(0)
        for _ in range(trials):
            t0 = time.perf_counter()
            trial = study.ask()
            values = _suggest(trial, problem.space)
            times.append((time.perf_counter() - t0) * 1000)
            study.tell(trial, problem.clean_score(problem.space.repair(values, rng)).value)
    else:
        params = {"surrogate": "tpe"} if kind == "nictune-tpe" else None
        engine = make_engine(engine_name, problem.space, seed=0, params=params, start=problem.start())
        while len(times) < trials and not engine.finished:
            t0 = time.perf_counter()
            batch = engine.ask(1)
            times.append((time.perf_counter() - t0) * 1000)
            for c in batch:
                engine.tell(c, problem.clean_score(c))
    out = {}
    for mark in (100, 500):
        window = times[max(0, mark - 10):mark]
        out[mark] = statistics.fmean(window) if len(window) == 10 else math.nan
    return contender, out


# --------------------------------------------------------------------------- figures
def reach(curve: Sequence[float], level: float) -> int | None:
    for i, q in enumerate(curve):
        if q >= level - 1e-12:
            return i + 1
    return None


def median_iqr(xs: Sequence[float]) -> tuple[float, float, float]:
    """Median and quartiles (linear interpolation; safe with infinite values: not reached)."""
    s = sorted(xs)

    def at(f: float) -> float:
        pos = (len(s) - 1) * f
        lo, hi = math.floor(pos), math.ceil(pos)
        if s[lo] == s[hi]:
            return s[lo]
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    return at(0.5), at(0.25), at(0.75)


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a share ``hits / n`` (SciPy's; 20 seeds pin a share
    down to about +-15 points: the interval says how far)."""
    if n == 0:
        return (0.0, 1.0)
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return (float(ci.low), float(ci.high))


def fmt_reach(values: Sequence[int | None], budget: int) -> str:
    xs = [float(v) if v is not None else math.inf for v in values]
    med, lo, hi = median_iqr(xs)

    def f(x: float) -> str:
        return f">{budget}" if math.isinf(x) else f"{x:.0f}"

    return f"{f(med)} [{f(lo)}-{f(hi)}]"


def summarise(runs: list[Run], optima: dict[str, dict[str, Any]], budget: int,
              overhead: dict[str, dict[int, float]]) -> list[dict[str, Any]]:
    rows = []
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.scenario, r.contender), []).append(r)
    for (scenario, contender), group in groups.items():
        opt = optima[scenario]
        curves = []
        for r in group:
            qs = [quality(Score(f, v) if f else None, opt["value"], opt["default"]) for f, v in r.rec]
            qs += [qs[-1] if qs else 0.0] * (budget - len(qs))  # finished early: the answer stays
            curves.append(qs)
        row: dict[str, Any] = {"scenario": scenario, "contender": contender, "seeds": len(group)}
        for level in (0.95, 0.99):
            hits = [reach(c, level) for c in curves]
            row[f"reach{int(level * 100)}"] = fmt_reach(hits, budget)
            finite = [h for h in hits if h is not None]
            row[f"reach{int(level * 100)}_median"] = (statistics.median([h if h is not None else math.inf
                                                                         for h in hits]))
            row[f"reach{int(level * 100)}_reached"] = len(finite)
        found = [[quality(Score(f, v) if f else None, opt["value"], opt["default"]) for f, v in r.found]
                 for r in group]
        if budget >= 50:  # was a configuration within 2% measured at all (search vs recommendation)?
            row["found2_at50"] = sum(1 for c in found if c and c[min(50, len(c)) - 1] >= 0.98) / len(found)
        for mark in BUDGET_MARKS:
            if mark <= budget:
                vals = [c[mark - 1] for c in curves]
                med, lo, hi = median_iqr(vals)
                row[f"q{mark}"] = med
                row[f"q{mark}_iqr"] = (lo, hi)
                within = sum(1 for v in vals if v >= 0.98)
                row[f"within2_at{mark}"] = within / len(vals)
                row[f"within2_at{mark}_ci95"] = wilson(within, len(vals))
        ofat_budget = [r.finished_at for r in group]
        row["finished_at_median"] = (statistics.median([x for x in ofat_budget if x is not None])
                                     if any(x is not None for x in ofat_budget) else None)
        row["evaluations_per_configuration"] = statistics.fmean(
            r.evaluations / max(1, r.configurations) for r in group)
        noise = [r.noise_cv for r in group if r.noise_cv is not None]
        row["noise_cv_estimate"] = statistics.median(noise) if noise else None
        ov = overhead.get(contender, {})
        row["ms100"], row["ms500"] = ov.get(100, math.nan), ov.get(500, math.nan)
        row["run_seconds"] = statistics.fmean(r.seconds for r in group)
        row["_curves"] = curves
        row["_finished"] = [r.finished_at for r in group]
        row["_seeds"] = [r.seed for r in group]
        rows.append(row)
    return rows


def ofat_comparison(rows: list[dict[str, Any]], default_engine: str) -> dict[str, str]:
    """Per scenario: at ofat's own budget, how often the default engine recommends better."""
    out = {}
    by = {(r["scenario"], r["contender"]): r for r in rows}
    for scenario in sorted({r["scenario"] for r in rows}):
        ofat, eng = by.get((scenario, "ofat")), by.get((scenario, default_engine))
        if not ofat or not eng:
            continue
        better = same = worse = 0
        budgets = []
        shortfall = 0.0  # the largest gap where the engine recommends worse, in fractions of the optimum
        theirs = dict(zip(eng["_seeds"], eng["_curves"], strict=True))
        for seed, oc, fin in zip(ofat["_seeds"], ofat["_curves"], ofat["_finished"], strict=True):
            ec = theirs.get(seed)
            if ec is None:
                continue
            b = int(min(fin or len(oc), len(oc)))  # ofat's own budget in this seed
            budgets.append(b)
            o, e = oc[b - 1], ec[b - 1]
            if e > o + 1e-9:
                better += 1
            elif e < o - 1e-9:
                worse += 1
                shortfall = max(shortfall, o - e)
            else:
                same += 1
        n = better + same + worse
        out[scenario] = (f"ofat stops after {statistics.median(budgets):.0f} evaluations (median; budget "
                         f"{min(budgets)}-{max(budgets)}); at ofat's budget in each seed {default_engine} "
                         f"recommends better in {better}/{n} seeds, equal in {same}, worse in {worse}"
                         + (f" (by at most {shortfall:.2%} of the optimum)" if worse else ""))
    return out


def print_table(rows: list[dict[str, Any]], optima: dict[str, dict[str, Any]], budget: int) -> str:
    lines = []
    marks = [m for m in BUDGET_MARKS if m <= budget]
    head = (f"{'contender':<13} {'to 95% med [IQR]':>17} {'to 99% med [IQR]':>17} "
            + " ".join(f"{'q@' + str(m):>7}" for m in marks)
            + f" {'<=2%@50 [95% CI]':>17} {'found':>6} {'evals/cfg':>9} {'ms@100':>7} {'ms@500':>7}")
    for scenario in [s for s in SCENARIOS if any(r["scenario"] == s for r in rows)]:
        opt = optima[scenario]
        sc = SCENARIOS[scenario]
        unit = "" if sc.objective != "throughput" else " Gbps"
        shown = opt["value"] if opt["value"] >= 0 else -opt["value"]
        lines.append("")
        lines.append(f"== {scenario}: {sc.note}")
        lines.append(f"   optimum {shown:.4g}{unit} ({opt['method']}); default {abs(opt['default']):.4g}{unit}")
        lines.append(head)
        for r in sorted((r for r in rows if r["scenario"] == scenario),
                        key=lambda r: list(CONTENDERS).index(r["contender"])):
            qs = " ".join(f"{r.get('q' + str(m), math.nan):7.3f}" for m in marks)
            w, fd = r.get("within2_at50"), r.get("found2_at50")
            ci = r.get("within2_at50_ci95")
            within = f"{w:.0%} [{ci[0]:.0%}-{ci[1]:.0%}]" if w is not None and ci else "-"
            lines.append(
                f"{r['contender']:<13} {r['reach95']:>17} {r['reach99']:>17} {qs} "
                f"{within:>17} {(f'{fd:.0%}' if fd is not None else '-'):>6} "
                f"{r['evaluations_per_configuration']:9.2f} "
                f"{r['ms100']:7.2f} {r['ms500']:7.2f}")
    text = "\n".join(lines)
    print(text)
    return text


def plot(rows: list[dict[str, Any]], out: Path, budget: int) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for scenario in sorted({r["scenario"] for r in rows}):
        fig, ax = plt.subplots(figsize=(8, 5))
        for r in sorted((r for r in rows if r["scenario"] == scenario),
                        key=lambda r: list(CONTENDERS).index(r["contender"])):
            curves = r["_curves"]
            xs = list(range(1, budget + 1))
            med, lo, hi = zip(*(median_iqr([c[i] for c in curves]) for i in range(budget)), strict=True)
            ax.plot(xs, med, label=r["contender"])
            ax.fill_between(xs, lo, hi, alpha=0.12)
        ax.axhline(0.99, color="grey", lw=0.6, ls="--")
        ax.axhline(0.95, color="grey", lw=0.6, ls=":")
        ax.set_ylim(0.5, 1.01)
        ax.set_xlabel("evaluations (measurements, repeats included)")
        ax.set_ylabel("noise-free quality of the recommendation (1 = optimum)")
        ax.set_title(f"{scenario}: median and IQR over seeds (simulated testbed, model)")
        ax.legend(loc="lower right", fontsize=8)
        path = out / f"convergence-{scenario}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def write_csv(rows: list[dict[str, Any]], out: Path) -> Path:
    path = out / "engines.csv"
    keys = [k for k in rows[0] if not k.startswith("_")]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in keys})
    with (out / "curves.csv").open("w", newline="") as fh:
        w2 = csv.writer(fh)
        # The seed itself: runs finish in any order (a pool of workers), so a position in
        # the list named a different seed from one run of the bench to the next.
        w2.writerow(["scenario", "contender", "seed", "evaluation", "quality"])
        for r in rows:
            for seed, curve in sorted(zip(r["_seeds"], r["_curves"], strict=True)):
                for i, q in enumerate(curve):
                    w2.writerow([r["scenario"], r["contender"], seed, i + 1, f"{q:.5f}"])
    return path


# --------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds, budget 30, Benson TCP and UDP only")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--noise", type=float, default=0.03)
    ap.add_argument("--scenarios", default=None, help=f"comma-separated, of: {', '.join(SCENARIOS)}")
    ap.add_argument("--contenders", default=",".join(DEFAULT_CONTENDERS),
                    help=f"comma-separated, of: {', '.join(CONTENDERS)} (default: all but "
                         f"{', '.join(c for c in CONTENDERS if c not in DEFAULT_CONTENDERS)})")
    ap.add_argument("--default-engine", default="bayes", help="the engine compared with ofat and TPE")
    ap.add_argument("--optimum-evals", type=int, default=30_000)
    ap.add_argument("--overhead", action=argparse.BooleanOptionalAction, default=True,
                    help="time suggestions at 100 and 500 trials")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.budget = min(args.seeds, 3), min(args.budget, 30)
        args.scenarios = args.scenarios or ",".join(QUICK_SCENARIOS)
        args.overhead = False
        args.optimum_evals = min(args.optimum_evals, 3000)
    scenarios = [s for s in (args.scenarios or ",".join(SCENARIOS)).split(",") if s]
    contenders = [c for c in args.contenders.split(",") if c]
    for name in scenarios:
        if name not in SCENARIOS:
            ap.error(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    for name in contenders:
        if name not in CONTENDERS:
            ap.error(f"unknown contender {name!r}; known: {', '.join(CONTENDERS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    cmd = "python bench/engines.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"# {cmd.strip()}")
    print(f"# simulated testbeds (a model, not hardware); noise CV {args.noise:g}; "
          f"{args.seeds} seeds; budget {args.budget}; {args.workers} workers")

    cache_path = args.out / "optima.json"
    cache: dict[str, Any] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    optima: dict[str, dict[str, Any]] = {}
    todo = []
    for name in scenarios:
        key = _space_key(_problem(name, args.noise))
        if cache.get(name, {}).get("key") == key:
            optima[name] = cache[name]
        else:
            todo.append((name, args.noise, args.optimum_evals))
    tasks = [(s, c, seed, args.budget, args.noise) for s in scenarios for c in contenders
             for seed in range(args.seeds)]
    ctx = multiprocessing.get_context("fork")
    runs: list[Run] = []
    overhead: dict[str, dict[int, float]] = {}
    with ctx.Pool(args.workers) as pool:
        opt_async = pool.map_async(find_optimum, todo) if todo else None
        ov_async = (pool.map_async(overhead_task, [(c, 500) for c in contenders
                                                   if c not in ("random", "ofat")]) if args.overhead else None)
        for i, run in enumerate(pool.imap_unordered(run_task, tasks, chunksize=1)):
            runs.append(run)
            if (i + 1) % max(1, len(tasks) // 10) == 0:
                print(f"#   {i + 1}/{len(tasks)} runs, {time.time() - started:.0f} s", flush=True)
        if opt_async is not None:
            for found in opt_async.get():
                optima[found["scenario"]] = found
                cache[found["scenario"]] = found
            cache_path.write_text(json.dumps(cache, indent=1, default=str))
        if ov_async is not None:
            overhead = dict(ov_async.get())
    import pickle

    (args.out / "runs.pkl").write_bytes(pickle.dumps((runs, optima, overhead, args.budget)))
    for name in scenarios:
        opt = optima[name]
        print(f"# optimum {name}: {opt['value']:.6g} ({opt['method']}, {opt['seconds']} s)")
    for name in scenarios:
        note = constraint_note(_problem(name, args.noise), optima[name])
        if note:
            print(f"# {name}: {note}")
    rows = summarise(runs, optima, args.budget, overhead)
    table = print_table(rows, optima, args.budget)
    notes = ofat_comparison(rows, args.default_engine)
    print()
    for scenario, text in notes.items():
        print(f"# {scenario}: {text}")
    csv_path = write_csv(rows, args.out)
    pngs = plot(rows, args.out, args.budget)
    (args.out / "table.txt").write_text(table + "\n")
    elapsed = time.time() - started
    print(f"# wrote {csv_path}, {args.out / 'curves.csv'} and {len(pngs)} plots in {args.out}")
    print(f"# finished in {elapsed:.0f} s")
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
