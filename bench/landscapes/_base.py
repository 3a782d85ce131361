"""What every benchmark landscape is: a space, a goal, noisy and noise-free measurements.

A landscape stands in for a testbed + workload + goal: :meth:`Landscape.sample` is one noisy
measurement (what a job would get from one benchmark run), :meth:`Landscape.clean` the
noise-free metrics the figures of merit are computed from. Every contender sees only
:meth:`sample`; the benchmark scores the configuration a contender *recommends* with
:meth:`clean`.

Families (``FAMILIES``): ``table`` (real veth measurements, ``veth_table.py``), ``sim``
(randomised instances of the physical model, ``sim_random.py``) and ``synthetic``
(constructed structures over the built-in spaces, ``synthetic.py``). Every instance belongs
to the ``dev`` or the ``test`` split, fixed by its construction before any engine was tuned.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nictune.jobs.runner import start_configs
from nictune.optimizer import Goal, Score
from nictune.search_spaces import Configuration, SearchSpace

Split = Literal["dev", "test"]
FAMILIES = ("table", "sim", "synthetic")


@dataclass
class Optimum:
    """The best noise-free score of a landscape and how it was found."""

    value: float
    feasible: bool
    config: dict[str, Any]
    method: str
    #: Share of a uniform sample of the space that is feasible (noise-free), when constrained.
    feasible_share: float | None = None


@dataclass
class Landscape(ABC):
    """One benchmark instance.

    Attributes:
        name: unique, stable name (``table:udp-jumbo/loss<=0.1``, ``sim:r07`` ...).
        family: one of :data:`FAMILIES`.
        split: ``dev`` (engines may be tuned on it) or ``test`` (reported only).
        space: the search space the contenders search.
        goal: objective and constraints.
        description: one line for humans.
        counters: whether measurements carry the bottleneck counters (drops, busy cores).
    """

    name: str
    family: str
    split: Split
    space: SearchSpace
    goal: Goal
    description: str = ""
    counters: bool = False
    _clean_cache: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------- measurements
    @abstractmethod
    def _clean(self, config: Configuration) -> dict[str, float]:
        """Noise-free metrics of ``config``."""

    @abstractmethod
    def _sample(self, config: Configuration, rng: random.Random) -> dict[str, float]:
        """One noisy measurement of ``config`` drawn with ``rng``."""

    def clean(self, config: Configuration) -> dict[str, float]:
        found = self._clean_cache.get(config.hash)
        if found is None:
            if len(self._clean_cache) > 400_000:
                self._clean_cache.clear()
            found = self._clean(config)
            self._clean_cache[config.hash] = found
        return found

    def clean_many(self, configs: list[Configuration]) -> list[dict[str, float]]:
        """Noise-free metrics of several configurations (one batch for a model)."""
        missing = [c for c in configs if c.hash not in self._clean_cache]
        if missing:
            for c, m in zip(missing, self._clean_batch(missing), strict=True):
                self._clean_cache[c.hash] = m
        return [self._clean_cache[c.hash] for c in configs]

    def _clean_batch(self, configs: list[Configuration]) -> list[dict[str, float]]:
        return [self._clean(c) for c in configs]

    def clean_score(self, config: Configuration) -> Score:
        return self.goal.score(self.clean(config))

    def sample(self, config: Configuration, seed: int, number: int) -> dict[str, float]:
        """Measurement ``number`` of a run with seed ``seed``: the same arguments give the
        same figures, whichever contender asks."""
        digest = hashlib.sha256(f"{self.name}|{seed}|{number}|{config.hash}".encode()).digest()
        return self._sample(config, random.Random(int.from_bytes(digest[:8], "big")))

    # ------------------------------------------------------------- what everyone starts from
    def start(self) -> list[Configuration]:
        """The start configurations every contender gets: what a job's loop gives its engine
        (:func:`nictune.jobs.runner.start_configs`: the default, the stock profiles, the baseline)."""
        return start_configs(self.space)

    # ------------------------------------------------------------- identity
    def key(self) -> str:
        """Changes whenever the landscape's definition does (for caches of optima and runs)."""
        text = json.dumps([self.name, self.space.definition, self.goal.describe(), self._identity()],
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _identity(self) -> Any:
        """What else defines the landscape (model parameters, data file digests)."""
        return None

    def candidates(self) -> list[Configuration]:
        """Configurations the optimum search must consider besides its own (e.g. a table's rows)."""
        return []


def regret(score: Score | None, optimum: Optimum) -> float:
    """Simple regret of a noise-free score, in % of the optimum (100 when it breaks a
    constraint, is missing, or is worse than the optimum by more than the optimum's size)."""
    if score is None or not score.feasible or not math.isfinite(score.value):
        return 100.0
    opt = optimum.value
    gap = opt - score.value  # values are oriented: bigger is better
    if gap <= 0:
        return 0.0
    scale = abs(opt) if opt != 0 else 1.0
    return min(100.0, 100.0 * gap / scale)


def lognormal_factor(rng: random.Random, cv: float) -> float:
    """A multiplicative noise factor with mean 1 and coefficient of variation ``cv``."""
    if cv <= 0:
        return 1.0
    sigma = math.sqrt(math.log(1 + cv * cv))
    return math.exp(rng.gauss(-sigma * sigma / 2, sigma))


def as_metrics(values: Mapping[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items()}
