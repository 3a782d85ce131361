"""The ``bayes`` engine's ``tpe`` surrogate: Optuna's multivariate TPE sampler through its
ask/tell interface. Optuna is imported only when this surrogate is chosen.
"""

from __future__ import annotations

import math
import random
import warnings
from typing import Any, Protocol

from nictune.optimizer.objectives import Score
from nictune.search_spaces import BoolKnob, ChoiceKnob, Configuration, SearchSpace, Value

#: Suggestions the ``tpe`` surrogate may make for one proposal before a uniform sample takes
#: its place: a converged TPE keeps suggesting configurations already measured (or ones the
#: space repairs), and each suggestion costs a pass over every trial. bench/engines.py, Nurika,
#: 20 seeds: 20 attempts spent 35 s per run of 100 evaluations on a slow day, most of the
#: bench's time.
TPE_ATTEMPTS = 5


class TpeHost(Protocol):
    """What the backend reads of its engine (:class:`nictune.optimizer.bayes.BayesEngine`)."""

    space: SearchSpace
    seed: int
    n_init: int
    rng: random.Random
    _told: list[Configuration]
    _scores: dict[str, Score]

    def _fresh(self, config: Configuration, taken: set[str]) -> bool: ...

    def _random_round(self, q: int) -> list[Configuration]: ...


class TpeBackend:
    """Optuna's TPE through ask/tell: trials are synced in a fixed order before each round."""

    def __init__(self, engine: TpeHost):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.engine = engine
        self.space = engine.space
        self.distributions: dict[str, Any] = {}
        self.index_knobs: dict[str, list[Value]] = {}
        for name, knob in self.space.knobs.items():
            listed = knob.values()
            if (isinstance(knob, ChoiceKnob) and not knob.ordered) or isinstance(knob, BoolKnob):
                self.distributions[name] = optuna.distributions.CategoricalDistribution(list(listed or []))
            elif listed is not None:
                self.index_knobs[name] = list(listed)
                self.distributions[name] = optuna.distributions.IntDistribution(0, len(listed) - 1)
            else:
                low, high = getattr(knob, "low", 0.0), getattr(knob, "high", 1.0)
                log = bool(getattr(knob, "log", False))
                if knob.kind == "float":
                    self.distributions[name] = optuna.distributions.FloatDistribution(low, high, log=log)
                else:
                    self.distributions[name] = optuna.distributions.IntDistribution(
                        int(low), int(high), log=log, step=1 if log else int(getattr(knob, "step", 1)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # multivariate/group are "experimental" in Optuna
            sampler = optuna.samplers.TPESampler(
                seed=engine.seed % (2**32), multivariate=True, group=True, constant_liar=True,
                n_startup_trials=max(1, engine.n_init),
            )
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self.synced: set[str] = set()
        self.pending: dict[str, Any] = {}  # config hash -> optuna Trial asked for it

    def _params(self, config: Configuration) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in config.items():
            out[name] = self.index_knobs[name].index(value) if name in self.index_knobs else value
        return out

    def _sync(self) -> None:
        ft = self.optuna.trial
        for config in self.engine._told:
            if config.hash in self.synced:
                continue
            self.synced.add(config.hash)
            score = self.engine._scores[config.hash]
            trial = self.pending.pop(config.hash, None)
            if not math.isfinite(score.value):
                if trial is not None:
                    self.study.tell(trial, state=ft.TrialState.FAIL)
                continue
            violation = score.violation if math.isfinite(score.violation) else 1e9
            if trial is not None:
                trial.set_constraint("violation", violation)
                self.study.tell(trial, score.value)
            else:
                params = self._params(config)
                self.study.add_trial(ft.create_trial(
                    params=params, distributions={n: self.distributions[n] for n in params},
                    value=score.value, system_attrs={"constraints:violation": violation},
                ))

    def _suggest(self, trial: Any) -> dict[str, Value]:
        values: dict[str, Value] = {}
        for name, knob in self.space.knobs.items():
            cond = knob.condition
            if cond is not None and not (cond.knob in values and cond.holds(values[cond.knob])):
                continue
            dist = self.distributions[name]
            raw: Any
            if isinstance(dist, self.optuna.distributions.CategoricalDistribution):
                raw = trial.suggest_categorical(name, list(dist.choices))
            elif isinstance(dist, self.optuna.distributions.FloatDistribution):
                raw = trial.suggest_float(name, dist.low, dist.high, log=dist.log)
            else:
                raw = trial.suggest_int(name, dist.low, dist.high, log=dist.log, step=dist.step)
            values[name] = self.index_knobs[name][int(raw)] if name in self.index_knobs else raw
        return values

    def propose(self, q: int) -> list[Configuration]:
        self._sync()
        out: list[Configuration] = []
        taken: set[str] = set()
        for _ in range(q):
            for _attempt in range(TPE_ATTEMPTS):
                trial = self.study.ask()
                config = self.space.repair(self._suggest(trial), self.engine.rng)
                if self.engine._fresh(config, taken) and self._params(config) == trial.params:
                    self.pending[config.hash] = trial
                    break
                # A repaired or already-known suggestion teaches TPE nothing new.
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
                if self.engine._fresh(config, taken):
                    break
            else:
                config = None
            if config is None or not self.engine._fresh(config, taken):
                fallback = self.engine._random_round(1)
                fallback = [c for c in fallback if c.hash not in taken]
                if not fallback:
                    break
                config = fallback[0]
            out.append(config)
            taken.add(config.hash)
        return out
