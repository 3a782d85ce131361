"""The contenders of ``bench/engines.py`` and how each is driven on a landscape.

Every contender gets the same start configurations (:meth:`Landscape.start`: nictune's engines
through ``start=``, Optuna through ``enqueue_trial``, SMAC through its initial design), the
same budget counted in measurements (repeats and a final race included) and the same
measurements (:meth:`Landscape.sample` is a function of the landscape, the seed, the
measurement's number and the configuration). Each is scored on the configuration it would
recommend after each measurement, re-evaluated noise-free by the benchmark.

* nictune's engines run the job loop's procedure (``nictune/jobs/runner.py``): every new
  configuration measured once and the engine told its score and mean metrics, then the final
  race (``RacingPolicy.finalists`` measured once more, the recommended one to three runs;
  as many finalists as a job of that budget races, ``RacingPolicy.final_race_for``),
  reserved inside the budget; recommendation ``RacingPolicy.recommend``. Engines do not know
  the budget, so the answer at budget ``B`` is the prefix of one run, finalised.
* Optuna's samplers and SMAC run as their users write them: one measurement per trial, the
  recommendation is the best trial (``study.best_trial``; SMAC's incumbent).
* ``random`` is nictune's random engine with the recommendation of the best single measurement.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.landscapes._base import Landscape
from nictune.optimizer import Goal, Score, make_engine
from nictune.optimizer.racing import RacingPolicy
from nictune.search_spaces import BoolKnob, ChoiceKnob, Configuration, FloatKnob, IntKnob


@dataclass
class Run:
    """One contender on one landscape with one seed."""

    landscape: str
    contender: str
    seed: int
    budget: int
    #: After each measurement (1..budget): the configuration the contender would recommend.
    recommended: list[dict[str, Any] | None] = field(default_factory=list)
    #: After each measurement: the best configuration measured so far (noise-free), what was *found*.
    found: list[dict[str, Any] | None] = field(default_factory=list)
    ask_ms: list[float] = field(default_factory=list)
    evaluations: int = 0
    configurations: int = 0
    seconds: float = 0.0
    error: str = ""


def _pad(xs: list[Any], budget: int) -> list[Any]:
    """A run that ended early keeps its last answer up to the budget."""
    return xs + [xs[-1] if xs else None] * (budget - len(xs))


# ------------------------------------------------------------------ nictune
def run_nictune(land: Landscape, engine: str, seed: int, budget: int, params: dict[str, Any] | None = None,
                racing: bool = True, final_race: Callable[[int], int] | None = None) -> Run:
    """The job loop's procedure without a database (see the module docstring).

    ``final_race`` maps a budget to the size of the final race (the job's rule by default).
    """
    started = time.perf_counter()
    eng = make_engine(engine, land.space, seed=seed, params=params, start=land.start())
    race_size = final_race or RacingPolicy.final_race_for
    #: budget -> the policy of a job with that budget and the measurements its race reserves
    policies: dict[int, RacingPolicy] = {}
    for b in range(1, budget + 1):
        size = race_size(b)
        if size not in policies:
            policies[size] = RacingPolicy(land.goal, final_race=size)
    reserve_of = {size: p.final_race + max(0, p.max_repeats - 2) if racing else 0 for size, p in policies.items()}
    limit = max(1, budget - reserve_of[race_size(budget)])
    score_policy = policies[race_size(budget)]  # scores what the engine is told
    run = Run(land.name, engine, seed, budget)
    trials: dict[str, list[dict[str, float]]] = {}
    configs: dict[str, Configuration] = {}
    best_found: tuple[Score, Configuration] | None = None
    plain: list[str | None] = []
    final: dict[int, list[str | None]] = {size: [] for size in policies}

    def finalised(policy: RacingPolicy, reserve: int) -> str | None:
        """The recommendation of the job that ends here, after its final race (the job loop's
        ``JobRunner._final_race``), the race cut short where the budget ends."""
        t = {k: list(v) for k, v in trials.items()}
        k = 0

        def again(key: str) -> None:
            nonlocal k
            t[key].append(land.sample(configs[key], seed, 10_000_000 + 10 * run.evaluations + k))
            k += 1

        for key in policy.finalists(t):
            if k < reserve:
                again(key)
        while k < reserve:
            step = policy.race_step(t)
            if step is None:
                return policy.final_choice(t, decided=True)
            for _ in range(min(step[1], reserve - k)):
                again(step[0])
        return policy.final_choice(t, decided=policy.race_step(t) is None)

    def measure(config: Configuration) -> dict[str, float]:
        nonlocal best_found
        metrics = land.sample(config, seed, run.evaluations)
        run.evaluations += 1
        trials.setdefault(config.hash, []).append(metrics)
        configs[config.hash] = config
        clean = land.clean_score(config)
        if best_found is None or clean > best_found[0]:
            best_found = (clean, config)
        run.found.append(best_found[1].as_dict())
        if racing:
            plain.append(score_policy.recommend(trials))
            for size, policy in policies.items():
                final[size].append(finalised(policy, reserve_of[size]))
        else:
            best = max(trials, key=lambda h: land.goal.score(trials[h][0]))
            plain.append(best)
        return metrics

    while run.evaluations < limit and not eng.finished:
        t0 = time.perf_counter()
        batch = eng.ask(1)
        run.ask_ms.append((time.perf_counter() - t0) * 1000)
        if not batch:
            break
        for config in batch:
            if run.evaluations >= limit:
                break
            measure(config)
            eng.tell(config, score_policy.stats.score(trials[config.hash]), Goal.mean_metrics(trials[config.hash]))
    for e in range(1, budget + 1):
        size = race_size(e)
        reserve = reserve_of[size]
        if racing and e > reserve:
            answers = final[size]
            rec = answers[min(e - reserve, len(answers)) - 1] if answers else None
        else:
            rec = plain[min(e, len(plain)) - 1] if plain else None
        run.recommended.append(configs[rec].as_dict() if rec else None)
    run.found = _pad(run.found, budget)
    run.configurations = len(trials)
    run.seconds = time.perf_counter() - started
    return run


# ------------------------------------------------------------------ Optuna
def optuna_params(trial: Any, land: Landscape) -> dict[str, Any]:
    """Define-by-run parameters, as an Optuna user would write them for the space."""
    values: dict[str, Any] = {}
    for name, knob in land.space.knobs.items():
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


def optuna_sampler(kind: str, seed: int) -> Any:
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # multivariate/group and GPSampler are "experimental"
        if kind == "optuna-tpe":
            return optuna.samplers.TPESampler(seed=seed)
        if kind == "optuna-tpe-mv":
            return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True,
                                              warn_independent_sampling=False)
        if kind == "optuna-gp":
            # Conditional knobs are sampled independently (a documented limitation): no warning.
            return optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False)
        if kind == "optuna-random":
            return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(kind)


def run_optuna(land: Landscape, kind: str, seed: int, budget: int) -> Run:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    goal = land.goal
    study = optuna.create_study(direction=goal.objective.direction, sampler=optuna_sampler(kind, seed))
    for config in land.start():
        study.enqueue_trial(dict(config), skip_if_exists=True)
    run = Run(land.name, kind, seed, budget)
    started = time.perf_counter()
    configs: dict[int, Configuration] = {}
    rng = random.Random(seed)
    best_found: tuple[Score, Configuration] | None = None
    for number in range(budget):
        t0 = time.perf_counter()
        trial = study.ask()
        values = optuna_params(trial, land)
        run.ask_ms.append((time.perf_counter() - t0) * 1000)
        # The user keeps the space's rules (rmem_default <= rmem_max) by fixing what breaks them.
        config = land.space.repair(values, rng)
        configs[trial.number] = config
        metrics = land.sample(config, seed, number)
        run.evaluations += 1
        for c in goal.constraints:  # Optuna: feasible when every constraint value is <= 0
            x = metrics[c.metric]
            trial.set_constraint(str(c), x - c.threshold if c.op in ("<=", "<") else c.threshold - x)
        value = goal.objective.value(metrics)
        study.tell(trial, value if math.isfinite(value) else None,
                   state=None if math.isfinite(value) else optuna.trial.TrialState.FAIL)
        clean = land.clean_score(config)
        if best_found is None or clean > best_found[0]:
            best_found = (clean, config)
        run.found.append(best_found[1].as_dict())
        try:
            run.recommended.append(configs[study.best_trial.number].as_dict())
        except ValueError:  # nothing feasible (or nothing complete) yet
            run.recommended.append(None)
    run.configurations = len({c.hash for c in configs.values()})
    run.seconds = time.perf_counter() - started
    return run


# ------------------------------------------------------------------ SMAC3
def smac_available() -> bool:
    try:
        import smac  # noqa: F401
    except ImportError:
        return False
    return True


def _plain(value: Any) -> Any:
    """A numpy scalar from ConfigSpace as a plain Python value."""
    return value.item() if hasattr(value, "item") else value


def run_smac(land: Landscape, seed: int, budget: int) -> Run:
    """SMAC3's hyperparameter-optimisation facade (random forest), ask/tell, one measurement
    per trial, the start configurations as its initial design, incumbent as recommendation."""
    from ConfigSpace import (
        Categorical,
        ConfigurationSpace,
        EqualsCondition,
        InCondition,
        Integer,
    )
    from ConfigSpace import Configuration as CSConfiguration
    from smac import HyperparameterOptimizationFacade as HPO
    from smac import Scenario
    from smac.runhistory.dataclasses import TrialValue

    space = land.space
    cs = ConfigurationSpace(seed=seed)
    encode: dict[str, Callable[[Any], Any]] = {}
    decode: dict[str, Callable[[Any], Any]] = {}
    for name, knob in space.knobs.items():
        listed = knob.values()
        if isinstance(knob, BoolKnob) or (isinstance(knob, ChoiceKnob) and not knob.ordered):
            labels = [str(v) for v in listed or []]
            table = dict(zip(labels, listed or [], strict=True))
            cs.add(Categorical(name, labels))
            encode[name] = str
            decode[name] = table.__getitem__
        elif listed is not None:
            # Ordered values (sizes, powers of two): an ordinal over their indices.
            from ConfigSpace import OrdinalHyperparameter

            cs.add(OrdinalHyperparameter(name, list(range(len(listed)))))
            encode[name] = listed.index
            decode[name] = listed.__getitem__
        else:
            assert isinstance(knob, IntKnob | FloatKnob)
            if isinstance(knob, IntKnob):
                cs.add(Integer(name, (knob.low, knob.high), log=knob.log))
            else:
                from ConfigSpace import Float

                cs.add(Float(name, (knob.low, knob.high), log=knob.log))
            encode[name] = decode[name] = lambda v: v
    for name, knob in space.knobs.items():
        cond = knob.condition
        if cond is not None:
            parent = cs[cond.knob]
            values = [encode[cond.knob](v) for v in cond.values]
            cs.add(EqualsCondition(cs[name], parent, values[0]) if len(values) == 1
                   else InCondition(cs[name], parent, values))
    outdir = Path(tempfile.mkdtemp(prefix="nictune-smac-"))
    scenario = Scenario(cs, deterministic=True, n_trials=budget, seed=seed, output_directory=outdir)
    starts = [CSConfiguration(cs, {n: encode[n](v) for n, v in c.items()}) for c in land.start()]
    initial = HPO.get_initial_design(scenario, n_configs=0, additional_configs=starts)
    intensifier = HPO.get_intensifier(scenario, max_config_calls=1)
    # overwrite: a leftover run in the folder is not resumed (and never prompts); logging_level
    # False: SMAC leaves the root logger alone.
    smac = HPO(scenario, target_function=None, initial_design=initial, intensifier=intensifier,
               overwrite=True, logging_level=False)
    run = Run(land.name, "smac", seed, budget)
    started = time.perf_counter()
    rng = random.Random(seed)
    best_found: tuple[Score, Configuration] | None = None
    sign = -1.0 if land.goal.objective.direction == "maximize" else 1.0
    measured: set[str] = set()
    for number in range(budget):
        t0 = time.perf_counter()
        info = smac.ask()
        run.ask_ms.append((time.perf_counter() - t0) * 1000)
        proposed = {n: decode[n](_plain(v)) for n, v in dict(info.config).items()}
        config = space.repair(proposed, rng)
        measured.add(config.hash)
        metrics = land.sample(config, seed, number)
        run.evaluations += 1
        score = land.goal.score(metrics)
        # One cost: infeasible measurements cost more than any feasible one (SMAC has no
        # constraint handling of its own); the violation orders them.
        value = land.goal.objective.value(metrics)
        cost = sign * value if score.feasible and math.isfinite(value) else 1e6 * (1 + min(score.violation, 1e6))
        smac.tell(info, TrialValue(cost=cost), save=False)
        clean = land.clean_score(config)
        if best_found is None or clean > best_found[0]:
            best_found = (clean, config)
        run.found.append(best_found[1].as_dict())
        incumbent = smac.intensifier.get_incumbent()
        if incumbent is None:
            run.recommended.append(None)
        else:
            rec = space.repair({n: decode[n](_plain(v)) for n, v in dict(incumbent).items()}, random.Random(0))
            run.recommended.append(rec.as_dict())
    run.configurations = len(measured)
    run.seconds = time.perf_counter() - started
    shutil.rmtree(outdir, ignore_errors=True)
    return run


# ------------------------------------------------------------------ registry
#: name -> (kind, engine or sampler, engine params)
CONTENDERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "bayes": ("nictune", "bayes", {}),
    "ga": ("nictune", "ga", {}),
    "random": ("nictune-plain", "random", {}),
    # Experiments: bayes without the final race (recommendation = best single measurement).
    "bayes-norace": ("nictune-plain", "bayes", {}),
    "optuna-tpe": ("optuna", "optuna-tpe", {}),
    "optuna-tpe-mv": ("optuna", "optuna-tpe-mv", {}),
    "optuna-gp": ("optuna", "optuna-gp", {}),
    "smac": ("smac", "smac", {}),
}
DEFAULT_CONTENDERS = ("bayes", "ga", "random", "optuna-tpe", "optuna-tpe-mv", "optuna-gp", "smac")
OPTUNA = ("optuna-tpe", "optuna-tpe-mv", "optuna-gp")


def parse_contender(name: str) -> tuple[str, str, dict[str, Any]]:
    """``bayes`` or an engine with parameters: ``bayes:surrogate=tpe,rounds=global/local``
    (experiments; ``/`` stands for a comma inside a value)."""
    base, _, rest = name.partition(":")
    if base not in CONTENDERS:
        raise ValueError(f"unknown contender {base!r}; known: {', '.join(CONTENDERS)}")
    kind, engine, params = CONTENDERS[base]
    params = dict(params)
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        params[key] = value.replace("/", ",")  # a list inside a value: rounds=global/local
    return kind, engine, params


def available(name: str) -> str | None:
    """Why a contender cannot run here, or ``None``."""
    kind, engine, _ = parse_contender(name)
    if kind == "smac" and not smac_available():
        return "SMAC3 is not installed (pip install smac; see bench/notes-install.md)"
    if engine == "optuna-gp":
        try:
            import torch  # noqa: F401
        except ImportError:
            return "Optuna's GPSampler needs torch (pip install torch)"
    return None


#: Other rules for the size of the final race by budget (``bayes:race=NAME``; ``bayes:race=N``
#: for a fixed size), measured against the job's own (:meth:`RacingPolicy.final_race_for`).
RACE_RULES: dict[str, Callable[[int], int]] = {
    "tenth": lambda b: max(1, min(3, b // 10 - 1)),
}


def run_contender(land: Landscape, name: str, seed: int, budget: int) -> Run:
    kind, engine, params = parse_contender(name)
    if kind == "optuna":
        run = run_optuna(land, engine, seed, budget)
    elif kind == "smac":
        run = run_smac(land, seed, budget)
    else:
        race = params.pop("race", None)  # experiments: race=N (a fixed final race) or a RACE_RULES name
        sizes = None if race is None else RACE_RULES[race] if race in RACE_RULES else (lambda b, n=int(race): n)
        run = run_nictune(land, engine, seed, budget, params or None, racing=kind == "nictune", final_race=sizes)
    run.contender = name
    run.recommended = _pad(run.recommended, budget)
    run.found = _pad(run.found, budget)
    return run
