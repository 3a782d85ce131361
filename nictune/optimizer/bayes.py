"""Bayesian optimization (``bayes``) for mixed, conditional spaces and expensive noisy trials.

Surrogate ``gp`` (the default, chosen by ``bench/engines.py``): a Gaussian process
(:mod:`nictune.optimizer.gp`) over the encoded space: booleans and two-way choices as 0/1,
unordered choices one-hot, everything ordered (sizes, powers of two, numbers) through
``Knob.encode``; an inactive conditional knob sits at its default's position. Kernel: a
constant times an ARD Matern 5/2 plus white noise (the noise of the measurements, at least
``noise_floor``), fitted by maximum a posteriori with a sparsity prior on the length scales
(SAAS, Eriksson & Jankowiak 2021), so a knob counts as relevant only where the data say so.
Targets are rank-transformed to normal scores (a Gaussian copula), so a few huge values
(interrupts per GB spanning decades) do not flatten the rest.

Constraints: a second GP models ``log(1 + violation)`` (feasible trials sit just below 0);
the acquisition is expected improvement over the best *predicted* feasible value (robust to
one lucky sample) times the probability of feasibility. Before anything feasible is seen,
the probability of feasibility alone is maximised.

The first round (``init=sobol``): the start configurations, the default with every knob that
relieves a bottleneck moved all the way (``hints``: the space's ``relieves:`` declarations used
as a prior: larger rings, buffers, MTU usually help until a limit; measured once, never
assumed), and a scrambled Sobol design over the knobs' values
(:func:`nictune.search_spaces.design.space_filling`), which screens main effects and
interactions far from any profile. ``init=mixed`` is the older first round: one-knob changes
of the last start configuration and uniform samples.

Model rounds cycle through ``rounds`` (default ``diagnose,local``):

* ``diagnose``: over the relief moves (:mod:`nictune.optimizer.diagnosis`) of the first of
  the three configurations predicted best whose told metrics show a bottleneck (drops at a
  stage, a saturated core) that a knob of the space relieves; a ``global`` round when none
  does (no counters told, nothing saturated, every move measured);
* ``local`` (a trust region around the incumbents): over every one-knob change of the best
  few configurations, multi-knob mutations of the best and the uniform pool, then hill
  climbing on the acquisition through one-knob changes;
* ``global``: the acquisition maximised over a standing pool of uniform samples;
* ``coordinate``: over the untried values of the next knob, in a shuffled round robin, of
  the best configuration so far;
* ``explore``: the next point of the Sobol design. A model round explores instead whenever
  the fitted GP's signal-to-noise ratio is below ``flat_snr`` (the data look like noise, so
  the model has nothing to exploit yet), and once after ``stall`` proposals without a better
  score.

Small spaces are enumerated and scored whole.

Surrogate ``tpe``: Optuna's multivariate TPE sampler driven through its ask/tell interface
(it takes the ``global`` and ``local`` rounds; ``coordinate`` and ``diagnose`` rounds stay,
with a move drawn at random, around the best told configurations); Optuna stays inside this
module and is imported only when that surrogate is chosen.

Rounds and batches: proposals come in rounds of ``batch`` configurations. The first round
holds the start configurations and ``n_init`` initial ones (above); every later round is computed once
everything asked before has been told, with a kriging believer (a constant liar that lies
with the model's mean) inside the round. So the proposals depend only on the seed and the
tells, never on how many configurations each ``ask`` requested.

Stopping (``ei_stop``, ``ei_rounds``; off by default): the engine finishes, with
``stop_reason`` ``expected-improvement``, when for ``ei_rounds`` model rounds in a row the
expected improvement of the round's best proposal, in the objective's own units, is below
``ei_stop`` times the incumbent's ``|value|``. The GP models normal scores, so the improvement
is taken back to the objective's units through the copula's own map (:func:`value_map`) and
integrated over the prediction (:func:`expected_gain`); times the probability of feasibility
under constraints. Only rounds that maximise the acquisition over a broad pool count
(``local``, ``global``, an enumerated space): a ``diagnose`` round's few relief moves or an
exploring round say nothing about the rest of the space, so they neither count nor reset.
Off by default: on a noisy testbed the model's expectation of "nothing better" is an
estimate, and spending the budget is what a user who set one asked for.

Warm start: :meth:`BayesEngine.warm_start` (or plain ``tell`` of configurations the engine
did not ask for) adds past trials to the model before (or while) it proposes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from nictune.errors import InvalidInputError
from nictune.optimizer._base import Engine, Param, register_engine
from nictune.optimizer.acquisition import expected_gain, expected_improvement, norm_cdf, normal_scores, value_map
from nictune.optimizer.candidates import CandidatePools
from nictune.optimizer.diagnosis import relieved
from nictune.optimizer.encoding import Encoder, enumerate_space
from nictune.optimizer.gp import GaussianProcess
from nictune.optimizer.objectives import Score
from nictune.search_spaces import Configuration
from nictune.search_spaces.design import space_filling

if TYPE_CHECKING:
    from nictune.optimizer.tpe_backend import TpeBackend

#: Feasible trials sit this far below 0 in the constraint model's target.
FEASIBLE_MARGIN = 0.5
#: Hill-climbing rounds on the acquisition, and how many candidates climb.
CLIMB_ROUNDS = 2
CLIMBERS = 3
#: Model rounds cycle diagnose (the relief moves of the best configurations' bottleneck; a
#: global round where no counters point anywhere) and local (trust region: one-knob changes and
#: mutations of the best few, then hill climbing on the acquisition). Chosen on the development
#: instances of bench/engines.py (sim and synthetic families, 20 seeds, budgets 20/30/60), over
#: (diagnose, global), (local, coordinate) and (global,); see the README's engine section.
ROUND_CYCLE: tuple[str, ...] = ("diagnose", "local")
#: Configurations of the first round besides the start ones.
N_INIT = 6
ROUND_KINDS = ("global", "local", "coordinate", "diagnose", "explore")



# ---------------------------------------------------------------------- the engine
@register_engine
class BayesEngine(Engine):
    """Bayesian optimization (``bayes``). See the module docstring."""

    name: ClassVar[str] = "bayes"
    PARAMS: ClassVar[Mapping[str, Param]] = {
        "surrogate": Param(str, "gp",
                           help="gp (Gaussian process, nictune.optimizer.gp: ARD Matern 5/2) or tpe (Optuna's TPE)"),
        "batch": Param(int, 1, low=1, high=64,
                       help="configurations per round (set it to the number of parallel testbeds)"),
        "n_init": Param(int, N_INIT, low=0, high=100,
                        help="configurations in the first round besides the start ones"),
        "candidates": Param(int, 512, low=16, high=100_000,
                            help="uniform samples in the acquisition pool"),
        "refit_every": Param(float, 0.2, low=0.0, high=10.0,
                             help="refit GP hyperparameters when the data grew by this fraction"),
        "init": Param(str, "sobol",
                      help="first round: mixed (one-knob changes of the last start configuration and "
                           "uniform samples) or sobol (a space-filling design)"),
        "hints": Param(int, 1, low=0, high=1,
                       help="1: the first round also measures the default with every knob that relieves a "
                            "bottleneck moved all the way (the space's relieves:)"),
        "flat_snr": Param(float, 3.0, low=0.0, high=1000.0,
                          help="a model round whose GP sees a signal-to-noise ratio below this explores instead "
                               "(0: never)"),
        "noise_floor": Param(float, 0.03, low=1e-6, high=0.5,
                             help="smallest noise variance of the GP (standardised targets)"),
        "stall": Param(int, 0, low=0, high=100,
                       help="after this many proposals without a better score, one space-filling proposal "
                            "(0: never)"),
        "rounds": Param(str, None,
                        help="the cycle of model rounds, comma-separated kinds of "
                             f"{', '.join(ROUND_KINDS)} (default: {','.join(ROUND_CYCLE)})"),
        "ei_stop": Param(float, 0.0, low=0.0, high=1.0,
                         help="stop when the expected improvement of the best proposal is below this fraction "
                              "of the best value for ei_rounds model rounds in a row (0: never; gp only)"),
        "ei_rounds": Param(int, 3, low=1, high=100,
                           help="model rounds in a row with a small expected improvement before ei_stop stops"),
    }

    def _check_params(self, params: dict[str, Any]) -> None:
        if params["surrogate"] not in ("gp", "tpe"):
            raise self.param_error("surrogate", "must be gp or tpe")
        if params["init"] not in ("mixed", "sobol"):
            raise self.param_error("init", "must be mixed or sobol")
        kinds = params["rounds"].split(",") if params["rounds"] is not None else list(ROUND_CYCLE)
        if not kinds or any(k not in ROUND_KINDS for k in kinds):
            raise self.param_error("rounds", f"must be a comma-separated list of {', '.join(ROUND_KINDS)}")
        if params["ei_stop"] and params["surrogate"] != "gp":
            raise self.param_error("ei_stop", "needs surrogate gp (tpe has no expected improvement)")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.surrogate: str = self.params["surrogate"]
        self.batch: int = self.params["batch"]
        self.n_init: int = self.params["n_init"]
        rounds = self.params["rounds"]
        self.cycle: tuple[str, ...] = tuple(rounds.split(",")) if rounds is not None else ROUND_CYCLE
        self.encoder = Encoder(self.space)
        self.all_configs = enumerate_space(self.space)
        self._queue: list[Configuration] = []
        self._told: list[Configuration] = []  # in tell order, for the model
        self.rounds = 0
        self._exhausted = False
        self._value_gp = GaussianProcess(self.encoder.width, noise_min=self.params["noise_floor"])
        self._constraint_gp = GaussianProcess(self.encoder.width, noise_min=self.params["noise_floor"])
        self._tpe: TpeBackend | None = None
        self.candidates = CandidatePools(self.space, self.rng, self.known, self.params["candidates"])
        self._explore_now = False
        self._explored_at = -1
        #: The expected-improvement rule: the last counted rounds' gains (fractions of the
        #: incumbent's |value|), and whether it stopped the engine.
        self._low_gains: list[float] = []
        self._ei_stopped = False
        self._pick_counts = False
        self._queue = self._first_round()

    # ------------------------------------------------------------ ask / tell
    def _ask(self, n: int) -> list[Configuration]:
        out: list[Configuration] = []
        while len(out) < n:
            if not self._queue:
                if out or self.awaiting or self._exhausted:
                    break  # a round is computed only once everything asked was told
                self._queue = self._next_round()
                if not self._queue:
                    self._exhausted = True
                    break
            config = self._queue.pop(0)
            if not self.known(config):  # told meanwhile (warm start): skip it
                out.append(config)
        return out

    def _tell(self, config: Configuration, score: Score) -> None:
        self._told.append(config)

    def _training_order(self) -> list[Configuration]:
        """Told configurations in ask order (outsiders after, in tell order): the model must
        not depend on the order of the tells inside a round."""
        position = {h: i for i, h in enumerate(self._asked)}
        told = list(enumerate(self._told))
        told.sort(key=lambda t: (0, position[t[1].hash], 0) if t[1].hash in position else (1, 0, t[0]))
        return [c for _, c in told]

    def warm_start(self, history: Iterable[tuple[Any, ...]]) -> int:
        """Tell past trials (configuration, score[, mean metrics]) before asking; returns how
        many were new.

        Configurations that are not valid in this space are skipped; the ones told are never
        proposed again, and the model learns from them (and from their counters, when given).
        """
        added = 0
        for entry in history:
            raw: Mapping[str, Any] | Configuration = entry[0]
            score: Score = entry[1]
            metrics: Mapping[str, float] | None = entry[2] if len(entry) > 2 else None
            try:
                config = raw if isinstance(raw, Configuration) else self.space.configuration(dict(raw))
                config = self.space.configuration(config.as_dict(), strict=True)
            except InvalidInputError:  # another space's configuration: nothing to learn here
                continue
            if self.score_of(config) is None:
                self.tell(config, score, metrics)
                added += 1
        return added

    @property
    def finished(self) -> bool:
        return self._exhausted and not self.awaiting

    @property
    def stop_reason(self) -> str | None:
        return "expected-improvement" if self._ei_stopped and self.finished else None

    @property
    def stop_detail(self) -> str | None:
        if self.stop_reason is None:
            return None
        last = self._low_gains[-1]
        return (f"the {self.name} model expected less than {self.params['ei_stop']:.3g} of the best value "
                f"({self.params['ei_stop']:.1%}) to be gained for {self.params['ei_rounds']} model rounds in a row "
                f"(ei_stop={self.params['ei_stop']:g}, ei_rounds={self.params['ei_rounds']}; last round "
                f"{last:.2%})")

    def _state(self) -> dict[str, Any]:
        return {
            "surrogate": self.surrogate,
            "rounds": self.rounds,
            "queued": len(self._queue),
            "exhausted": self._exhausted,
            "hyperparameters_fitted_at": self._value_gp.fitted_at,
            "low_gain_rounds": len(self._low_gains),
            "stopped_by_expected_improvement": self._ei_stopped,
        }

    # ---------------------------------------------------------------- rounds
    def _fresh(self, config: Configuration, taken: set[str]) -> bool:
        return not self.known(config) and config.hash not in taken

    def _best_config(self) -> Configuration | None:
        best = self.best()
        return best[0] if best is not None else None

    def _first_round(self) -> list[Configuration]:
        out = list(self.start)
        taken = {c.hash for c in out}
        n_init = self.n_init
        if self.all_configs is not None:
            pool = [c for c in self.all_configs if c.hash not in taken]
            self.rng.shuffle(pool)
            return out + pool[:n_init]
        if self.params["hints"] and n_init > 0:
            bold = relieved(self.space, self.start[0] if self.start else self.space.default())
            if bold is not None and bold.hash not in taken:
                out.append(bold)
                taken.add(bold.hash)
                n_init -= 1
        if self.params["init"] == "sobol":
            return out + space_filling(self.space, n_init, self.seed, exclude=taken)
        wanted = len(out) + n_init
        if self.start:
            neighbours = list(self.candidates.neighbours(self.start[-1]))
            self.rng.shuffle(neighbours)
            for config in neighbours[: n_init // 2]:
                if self._fresh(config, taken):
                    taken.add(config.hash)
                    out.append(config)
        for _ in range(50 * max(1, n_init)):
            if len(out) >= wanted:
                break
            config = self.space.sample(self.rng)
            if self._fresh(config, taken):
                taken.add(config.hash)
                out.append(config)
        return out

    def _round_kind(self) -> str:
        """Model rounds cycle through the plan's kinds (see the module docstring); a stalled
        search explores."""
        if self._explore_now:
            return "explore"
        return self.cycle[self.rounds % len(self.cycle)]

    def _stalled(self) -> bool:
        """The best told score has not improved over the last ``stall`` proposals of the engine
        (nor since the last exploring round)."""
        n = self.params["stall"]
        if not n:
            return False
        best: Score | None = None
        since = 0
        for i, config in enumerate(self._told):
            score = self._scores[config.hash]
            if best is None or score > best:
                best, since = score, 0
            else:
                since += 1
            if i == self._explored_at:
                since = 0
        return since >= n

    def _next_round(self) -> list[Configuration]:
        self.rounds += 1
        if self.surrogate == "tpe":
            if self._tpe is None:
                from nictune.optimizer.tpe_backend import TpeBackend

                self._tpe = TpeBackend(self)
            kind = self._round_kind()
            if kind in ("coordinate", "diagnose") and self.all_configs is None:
                # No model to rank the moves: one at random, around the best measured ones.
                ranked = sorted(self._told, key=lambda c: self._scores[c.hash], reverse=True)[:3]
                out: list[Configuration] = []
                taken: set[str] = set()
                for _ in range(self.batch):
                    if kind == "coordinate":
                        pool = self.candidates.coordinate(self._best_config(), taken)
                    else:
                        pool = self.candidates.relief(ranked, self.metrics_of, taken)
                    if not pool:
                        break
                    pick = pool[self.rng.randrange(len(pool))]
                    out.append(pick)
                    taken.add(pick.hash)
                if out:
                    return out
            return self._tpe.propose(self.batch)
        self._explore_now = self._stalled()
        if self._explore_now:
            self._explored_at = len(self._told) - 1 + self.batch
        return self._gp_round(self.batch)

    # ------------------------------------------------------------ GP proposals
    def _training(self) -> tuple[list[Configuration], np.ndarray, np.ndarray, bool]:
        """Told configurations, their value and constraint targets, and whether any is infeasible."""
        configs = self._training_order()
        scores = [self._scores[c.hash] for c in configs]
        finite = [s.value for s in scores if math.isfinite(s.value)]
        floor = min(finite) if finite else 0.0
        values = np.array([s.value if math.isfinite(s.value) else floor for s in scores], dtype=float)
        finite_c = [math.log1p(s.violation) for s in scores if not s.feasible and math.isfinite(s.violation)]
        top = max(finite_c) + 1.0 if finite_c else 5.0
        cons = np.array([-FEASIBLE_MARGIN if s.feasible else
                         (math.log1p(s.violation) if math.isfinite(s.violation) else top) for s in scores])
        return configs, values, cons, any(not s.feasible for s in scores)

    def _should_refit(self, gp: GaussianProcess, n: int) -> bool:
        return gp.fitted_at == 0 or n >= max(gp.fitted_at + 1, gp.fitted_at * (1.0 + self.params["refit_every"]))

    def _gp_round(self, q: int) -> list[Configuration]:
        configs, values, cons, constrained = self._training()
        if len(configs) < 2:
            return self._random_round(q)
        x = self.encoder.matrix(configs)
        y = normal_scores(values)
        self._value_gp.fit(x, y, refit=self._should_refit(self._value_gp, len(y)))
        if constrained:
            self._constraint_gp.fit(x, cons, refit=self._should_refit(self._constraint_gp, len(y)))
        feasible = np.array([self._scores[c.hash].feasible for c in configs])
        out: list[Configuration] = []
        taken: set[str] = set()
        for j in range(q):
            if j > 0:  # kriging believer: the model's own mean for the pending ones
                x_all = np.vstack([x, self.encoder.matrix(out)])
                y_lie, _ = self._value_gp.predict(self.encoder.matrix(out))
                self._value_gp.fit(x_all, np.concatenate([y, y_lie]), refit=False)
                if constrained:
                    c_lie, _ = self._constraint_gp.predict(self.encoder.matrix(out))
                    self._constraint_gp.fit(x_all, np.concatenate([cons, c_lie]), refit=False)
                    feasible_all = np.concatenate([feasible, c_lie < 0])
                else:
                    feasible_all = np.concatenate([feasible, np.ones(len(out), dtype=bool)])
                pick = self._propose_one(configs + out, x_all, feasible_all, constrained, taken)
            else:
                pick = self._propose_one(configs, x, feasible, constrained, taken)
                if pick is not None and self.params["ei_stop"] and self._gain_is_small(pick, values, y, x,
                                                                                       feasible, constrained):
                    self._ei_stopped = True
                    return []
            if pick is None:
                break
            out.append(pick)
            taken.add(pick.hash)
        return out

    def _gain_is_small(self, pick: Configuration, values: np.ndarray, y: np.ndarray, x: np.ndarray,
                       feasible: np.ndarray, constrained: bool) -> bool:
        """Count a round for the ``ei_stop`` rule (see the module docstring); True when it is
        the ``ei_rounds``-th in a row whose best proposal's expected gain is small."""
        if not self._pick_counts or not feasible.any():
            return False
        mu_seen, _ = self._value_gp.predict(x)
        best = float(mu_seen[feasible].max())
        xp = self.encoder.matrix([pick])
        mu, sd = self._value_gp.predict(xp)
        gain, incumbent = expected_gain(float(mu[0]), float(sd[0]), best, value_map(y, values))
        if constrained:
            cm, cs = self._constraint_gp.predict(xp)
            gain *= float(norm_cdf(-cm / cs)[0])
        fraction = gain / abs(incumbent) if incumbent else math.inf
        if fraction >= self.params["ei_stop"]:
            self._low_gains = []
            return False
        self._low_gains.append(fraction)
        return len(self._low_gains) >= self.params["ei_rounds"]

    def _acquisition(self, xc: np.ndarray, best: float | None, constrained: bool) -> np.ndarray:
        mu, sd = self._value_gp.predict(xc)
        if constrained:
            cm, cs = self._constraint_gp.predict(xc)
            pf = norm_cdf(-cm / cs)
        else:
            pf = np.ones(len(xc))
        if best is None:  # nothing feasible yet: find the feasible region first
            return pf
        ei = expected_improvement(mu, sd, best)
        if float(ei.max(initial=0.0)) <= 1e-12:
            ei = ei + 1e-9 * np.exp(mu + 2.0 * sd - (mu + 2.0 * sd).max(initial=0.0))
        return ei * pf

    def _propose_one(self, configs: list[Configuration], x: np.ndarray, feasible: np.ndarray,
                     constrained: bool, taken: set[str]) -> Configuration | None:
        self._pick_counts = False
        mu_seen, _ = self._value_gp.predict(x)
        best = float(mu_seen[feasible].max()) if feasible.any() else None
        # Centers: the best configurations by predicted value (feasible ones first).
        order = sorted(range(len(configs)), key=lambda i: (not feasible[i], -mu_seen[i]))
        centers = [configs[i] for i in order[:3]]
        kind = self._round_kind()
        if self.params["flat_snr"] and self._value_gp.signal_to_noise < self.params["flat_snr"]:
            kind = "explore"  # the data look like noise: nothing to exploit yet
        pool = self.candidates.coordinate(self._best_config(), taken) if kind == "coordinate" else []
        if kind == "diagnose" and self.all_configs is None:
            pool = self.candidates.relief(centers, self.metrics_of, taken)
            kind = "diagnose" if pool else "global"
        if self.all_configs is not None:
            pool = [c for c in self.all_configs if self._fresh(c, taken)]
        elif kind == "explore":
            # Space-filling: the next points of the first round's Sobol sequence not asked yet.
            pool = space_filling(self.space, 1, self.seed, exclude=set(self._asked) | taken)
            return pool[0] if pool else None
        elif kind == "global":
            pool = self.candidates.broad([], taken)
        elif not pool:
            kind = "local"
            pool = self.candidates.broad(centers, taken)
        if not pool:
            return None
        # A broad pool: its best proposal speaks for the space (the ei_stop rule counts it).
        self._pick_counts = best is not None and (self.all_configs is not None or kind in ("local", "global"))
        acq = self._acquisition(self.encoder.matrix(pool), best, constrained)
        scored = {c.hash: (float(a), c) for a, c in zip(acq, pool, strict=True)}
        if self.all_configs is None and kind == "local":
            for _ in range(CLIMB_ROUNDS):
                top = sorted(scored.values(), key=lambda t: (-t[0], t[1].hash))[:CLIMBERS]
                fresh = []
                for _, center in top:
                    for nb in self.candidates.neighbours(center):
                        if nb.hash not in scored and self._fresh(nb, taken):
                            fresh.append(nb)
                            scored[nb.hash] = (-math.inf, nb)
                if not fresh:
                    break
                acq = self._acquisition(self.encoder.matrix(fresh), best, constrained)
                for a, c in zip(acq, fresh, strict=True):
                    scored[c.hash] = (float(a), c)
        # Highest acquisition; ties by hash, which depends only on the configuration.
        return max(scored.values(), key=lambda t: (t[0], t[1].hash))[1]

    def _random_round(self, q: int) -> list[Configuration]:
        out: list[Configuration] = []
        taken: set[str] = set()
        pool = self.all_configs
        for _ in range(200 * q):
            if len(out) >= q:
                break
            if pool is not None:
                fresh = [c for c in pool if self._fresh(c, taken)]
                if not fresh:
                    break
                config = fresh[self.rng.randrange(len(fresh))]
            else:
                config = self.space.sample(self.rng)
            if self._fresh(config, taken):
                taken.add(config.hash)
                out.append(config)
        return out


