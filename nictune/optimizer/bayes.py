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
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from nictune.errors import InvalidInputError
from nictune.optimizer._base import Engine, Param, register_engine
from nictune.optimizer.diagnosis import relief_moves, relieved
from nictune.optimizer.gp import GaussianProcess
from nictune.optimizer.objectives import Score
from nictune.search_spaces import BoolKnob, ChoiceKnob, Configuration, Knob, SearchSpace, Value
from nictune.search_spaces.design import space_filling

#: Spaces with at most this many configurations (before constraints) are enumerated.
ENUMERATE_LIMIT = 4096
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
#: Suggestions the ``tpe`` surrogate may make for one proposal before a uniform sample takes
#: its place: a converged TPE keeps suggesting configurations already measured (or ones the
#: space repairs), and each suggestion costs a pass over every trial. bench/engines.py, Nurika,
#: 20 seeds: 20 attempts spent 35 s per run of 100 evaluations on a slow day, most of the
#: bench's time.
TPE_ATTEMPTS = 5



# ---------------------------------------------------------------------- encoding
class Encoder:
    """Configurations as vectors in [0, 1]^d (see the module docstring)."""

    def __init__(self, space: SearchSpace):
        self.space = space
        self.columns: list[tuple[str, Any]] = []  # (knob, None | category)
        # Per knob: name, default, knob, its first column, value -> [(column, position)].
        self._plan: list[tuple[str, Value, Knob, int, dict[Any, list[tuple[int, float]]] | None]] = []
        for name, knob in space.knobs.items():
            first = len(self.columns)
            table: dict[Any, list[tuple[int, float]]] | None = None
            if isinstance(knob, ChoiceKnob) and not knob.ordered and len(knob.choices) > 2:
                self.columns += [(name, c) for c in knob.choices]
                table = {c: [(first + i, 1.0)] for i, c in enumerate(knob.choices)}
            else:
                self.columns.append((name, None))
                listed = knob.values()
                if listed is not None:
                    table = {v: [(first, self._position(knob, v))] for v in listed}
            self._plan.append((name, knob.default, knob, first, table))
        self.width = len(self.columns)
        self._cache: dict[str, np.ndarray] = {}

    @staticmethod
    def _position(knob: Knob, value: Value) -> float:
        if isinstance(knob, BoolKnob):
            return 1.0 if value else 0.0
        return float(knob.encode(value))

    def encode(self, config: Configuration) -> np.ndarray:
        cached = self._cache.get(config.hash)
        if cached is not None:
            return cached
        row = np.zeros(self.width)
        for name, default, knob, first, table in self._plan:
            value = config.get(name, default)
            if table is not None:
                for i, v in table[value]:
                    row[i] = v
            else:
                row[first] = self._position(knob, value)
        if len(self._cache) > 200_000:
            self._cache.clear()
        self._cache[config.hash] = row
        return row

    def matrix(self, configs: Sequence[Configuration]) -> np.ndarray:
        if not configs:
            return np.empty((0, self.width))
        return np.vstack([self.encode(c) for c in configs])


def enumerate_space(space: SearchSpace, limit: int = ENUMERATE_LIMIT) -> list[Configuration] | None:
    """Every valid configuration of ``space`` in a fixed order, or ``None`` if there are
    more than ``limit`` (before constraints) or a knob cannot be listed."""
    size = space.size()
    if size is None or size > limit:
        return None
    knobs = list(space.knobs.values())
    out: list[Configuration] = []
    seen: set[str] = set()

    def walk(i: int, values: dict[str, Value]) -> None:
        if i == len(knobs):
            active = {n: values[n] for n in space.active(values) if n in values}
            if len(active) == len(space.active(active)) and not space.violations(active):
                config = Configuration.from_values(active)
                if config.hash not in seen:
                    seen.add(config.hash)
                    out.append(config)
            return
        knob = knobs[i]
        cond = knob.condition
        if cond is not None and not (cond.knob in values and cond.holds(values[cond.knob])):
            walk(i + 1, values)
            return
        for v in knob.values() or []:
            values[knob.name] = v
            walk(i + 1, values)
            del values[knob.name]

    walk(0, {})
    return out


def normal_scores(y: np.ndarray) -> np.ndarray:
    """Rank-based normal scores of ``y`` (ties share their average rank)."""
    from scipy.stats import norm, rankdata

    return np.asarray(norm.ppf((rankdata(y) - 0.5) / len(y)), dtype=float)


def _norm_cdf(z: np.ndarray) -> np.ndarray:
    from scipy.special import ndtr

    return np.asarray(ndtr(z), dtype=float)


def _norm_pdf(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def expected_improvement(mu: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """EI of a maximisation at predictions ``mu`` +- ``sd`` over ``best``."""
    z = (mu - best) / sd
    return (mu - best) * _norm_cdf(z) + sd * _norm_pdf(z)


#: The grid that integrates over a normal prediction (standard scores, +-8 sd): dense, because
#: the improvement has a kink at the incumbent (a Gauss-Hermite rule is off by 10 % in the tail).
_GRID_Z = np.linspace(-8.0, 8.0, 3201)
_GRID_W = np.exp(-0.5 * _GRID_Z**2)
_GRID_W = _GRID_W / _GRID_W.sum()


def value_map(scores: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The copula's map from normal scores back to the objective's values: the knots
    ``(score, mean value)`` of the told configurations, and the slopes used beyond the lowest
    and the highest (from the extreme knot to the one a quarter of the way in, so one odd
    value at the top does not set it)."""
    knots = np.unique(scores)
    means = np.array([values[scores == k].mean() for k in knots])
    if len(knots) < 2:
        return knots, means, 0.0, 0.0
    q = max(1, (len(knots) - 1) // 4)
    low = (means[q] - means[0]) / (knots[q] - knots[0])
    high = (means[-1] - means[-1 - q]) / (knots[-1] - knots[-1 - q])
    return knots, means, float(low), float(high)


def _to_value(y: np.ndarray, vmap: tuple[np.ndarray, np.ndarray, float, float]) -> np.ndarray:
    knots, means, low, high = vmap
    out = np.interp(y, knots, means)
    out = np.where(y < knots[0], means[0] + low * (y - knots[0]), out)
    return np.where(y > knots[-1], means[-1] + high * (y - knots[-1]), out)


def expected_gain(mu: float, sd: float, best: float,
                  vmap: tuple[np.ndarray, np.ndarray, float, float]) -> tuple[float, float]:
    """Expected improvement in the objective's units of a prediction ``mu`` +- ``sd`` (normal
    scores) over the incumbent ``best`` (a normal score), and the incumbent's value."""
    incumbent = float(_to_value(np.array([best]), vmap)[0])
    gains = np.maximum(_to_value(mu + sd * _GRID_Z, vmap) - incumbent, 0.0)
    return float(gains @ _GRID_W), incumbent


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
        self._tpe: _TpeBackend | None = None
        self._neighbours: dict[str, list[tuple[str, Configuration]]] = {}
        self._coord_center = ""
        self._coord_queue: list[str] = []
        self._uniform: list[Configuration] = []
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
    def neighbours(self, config: Configuration) -> list[Configuration]:
        """One-knob changes of ``config`` (cached: the same centers come back round after round)."""
        return [c for _, c in self._named_neighbours(config)]

    def _named_neighbours(self, config: Configuration) -> list[tuple[str, Configuration]]:
        found = self._neighbours.get(config.hash)
        if found is None:
            if len(self._neighbours) > 20_000:
                self._neighbours.clear()
            found = self.space.neighbours(config)
            self._neighbours[config.hash] = found
        return found

    def _coordinate_pool(self, taken: set[str]) -> list[Configuration]:
        """Untried changes of the next knob (round robin) of the best configuration so far."""
        best = self.best()
        if best is None:
            return []
        center = best[0]
        if center.hash != self._coord_center:
            self._coord_center = center.hash
            self._coord_queue = []
        for _ in range(2):
            if not self._coord_queue:  # a new pass over the knobs, in a fresh order
                self._coord_queue = [n for n in center if n in self.space.knobs]
                self.rng.shuffle(self._coord_queue)
            while self._coord_queue:
                name = self._coord_queue.pop()
                pool = [c for n, c in self._named_neighbours(center) if n == name and self._fresh(c, taken)]
                if pool:
                    return pool
        return []

    def _fresh(self, config: Configuration, taken: set[str]) -> bool:
        return not self.known(config) and config.hash not in taken

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
            neighbours = list(self.neighbours(self.start[-1]))
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
                self._tpe = _TpeBackend(self)
            kind = self._round_kind()
            if kind in ("coordinate", "diagnose") and self.all_configs is None:
                # No model to rank the moves: one at random, around the best measured ones.
                ranked = sorted(self._told, key=lambda c: self._scores[c.hash], reverse=True)[:3]
                out: list[Configuration] = []
                taken: set[str] = set()
                for _ in range(self.batch):
                    pool = self._coordinate_pool(taken) if kind == "coordinate" else self._relief_pool(ranked, taken)
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
            gain *= float(_norm_cdf(-cm / cs)[0])
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
            pf = _norm_cdf(-cm / cs)
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
        pool = self._coordinate_pool(taken) if kind == "coordinate" else []
        if kind == "diagnose" and self.all_configs is None:
            pool = self._relief_pool(centers, taken)
            kind = "diagnose" if pool else "global"
        if self.all_configs is not None:
            pool = [c for c in self.all_configs if self._fresh(c, taken)]
        elif kind == "explore":
            # Space-filling: the next points of the first round's Sobol sequence not asked yet.
            pool = space_filling(self.space, 1, self.seed, exclude=set(self._asked) | taken)
            return pool[0] if pool else None
        elif kind == "global":
            pool = self._pool([], taken)
        elif not pool:
            kind = "local"
            pool = self._pool(centers, taken)
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
                    for nb in self.neighbours(center):
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

    def _relief_pool(self, centers: list[Configuration], taken: set[str]) -> list[Configuration]:
        """The untried relief moves (:func:`relief_moves`) of the first of ``centers`` whose
        measured counters show a saturated stage that a knob of the space relieves."""
        for center in centers:
            moves = [c for c in relief_moves(self.space, center, self.metrics_of(center)) if self._fresh(c, taken)]
            if moves:
                return moves
        return []

    def _pool(self, centers: list[Configuration], taken: set[str]) -> list[Configuration]:
        pool: dict[str, Configuration] = {}

        def add(config: Configuration) -> None:
            if config.hash not in pool and self._fresh(config, taken):
                pool[config.hash] = config

        for center in centers:
            for nb in self.neighbours(center):
                add(nb)
        n = self.params["candidates"]
        for _ in range(n // 8 if centers else 0):
            best = centers[0]
            values = dict(best)
            for _ in range(self.rng.choice((2, 2, 3, 4))):
                name = self.rng.choice(self.space.active(values))
                values[name] = self.space.knobs[name].mutate(values.get(name, self.space.knobs[name].default),
                                                             self.rng, 0.3)
            add(self.space.repair(values, self.rng))
        # Uniform samples: a standing pool (encoded once) that is refreshed a little each round.
        fresh = n if not self._uniform else max(1, n // 8)
        self._uniform.extend(self.space.sample(self.rng) for _ in range(fresh))
        del self._uniform[: max(0, len(self._uniform) - n)]
        for config in self._uniform:
            add(config)
        return list(pool.values())

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


# ---------------------------------------------------------------------- Optuna TPE
class _TpeBackend:
    """Optuna's TPE through ask/tell: trials are synced in a fixed order before each round."""

    def __init__(self, engine: BayesEngine):
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
