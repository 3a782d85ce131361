"""Where the ``bayes`` engine looks for its next proposal: the candidate pools its rounds score
with the acquisition.

* :meth:`CandidatePools.neighbours`: one-knob changes of a configuration (cached);
* :meth:`CandidatePools.coordinate`: the untried values of the next knob, in a shuffled round
  robin, of the best configuration so far;
* :meth:`CandidatePools.relief`: the relief moves (:func:`nictune.optimizer.diagnosis.relief_moves`)
  of the first center whose told counters show a bottleneck a knob relieves;
* :meth:`CandidatePools.broad`: the one-knob changes of the centers, multi-knob mutations of
  the first, and a standing pool of uniform samples refreshed a little each round.

Every pool leaves out what the engine knows (asked or told) and what the round has taken.
The pools draw from the engine's own random generator, in the engine's order, so the
proposals depend only on the seed and the tells.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

from nictune.optimizer.diagnosis import relief_moves
from nictune.search_spaces import Configuration, SearchSpace

#: The one-knob changes kept before the cache starts afresh.
NEIGHBOUR_CACHE = 20_000


class CandidatePools:
    """The candidate pools of one engine.

    Args:
        space: the space searched.
        rng: the engine's random generator (shared: the draws keep the engine's order).
        known: whether the engine has asked or been told a configuration already.
        candidates: uniform samples in the standing pool of :meth:`broad`.
    """

    def __init__(self, space: SearchSpace, rng: random.Random, known: Callable[[Configuration], bool],
                 candidates: int):
        self.space = space
        self.rng = rng
        self.known = known
        self.candidates = candidates
        self._neighbours: dict[str, list[tuple[str, Configuration]]] = {}
        self._coord_center = ""
        self._coord_queue: list[str] = []
        self._uniform: list[Configuration] = []

    def fresh(self, config: Configuration, taken: set[str]) -> bool:
        """Neither known to the engine nor taken by the round."""
        return not self.known(config) and config.hash not in taken

    def neighbours(self, config: Configuration) -> list[Configuration]:
        """One-knob changes of ``config`` (cached: the same centers come back round after round)."""
        return [c for _, c in self.named_neighbours(config)]

    def named_neighbours(self, config: Configuration) -> list[tuple[str, Configuration]]:
        """One-knob changes of ``config``, each with the knob it changes."""
        found = self._neighbours.get(config.hash)
        if found is None:
            if len(self._neighbours) > NEIGHBOUR_CACHE:
                self._neighbours.clear()
            found = self.space.neighbours(config)
            self._neighbours[config.hash] = found
        return found

    def coordinate(self, center: Configuration | None, taken: set[str]) -> list[Configuration]:
        """Untried changes of the next knob (round robin) of ``center``, the best configuration
        so far (a new center starts a new pass)."""
        if center is None:
            return []
        if center.hash != self._coord_center:
            self._coord_center = center.hash
            self._coord_queue = []
        for _ in range(2):
            if not self._coord_queue:  # a new pass over the knobs, in a fresh order
                self._coord_queue = [n for n in center if n in self.space.knobs]
                self.rng.shuffle(self._coord_queue)
            while self._coord_queue:
                name = self._coord_queue.pop()
                pool = [c for n, c in self.named_neighbours(center) if n == name and self.fresh(c, taken)]
                if pool:
                    return pool
        return []

    def relief(self, centers: list[Configuration], metrics_of: Callable[[Configuration], Mapping[str, float]],
               taken: set[str]) -> list[Configuration]:
        """The untried relief moves (:func:`relief_moves`) of the first of ``centers`` whose
        measured counters (``metrics_of``) show a saturated stage that a knob of the space relieves."""
        for center in centers:
            moves = [c for c in relief_moves(self.space, center, metrics_of(center)) if self.fresh(c, taken)]
            if moves:
                return moves
        return []

    def broad(self, centers: list[Configuration], taken: set[str]) -> list[Configuration]:
        """The one-knob changes of ``centers``, multi-knob mutations of the first one, and the
        standing pool of uniform samples (encoded once, refreshed by an eighth each round)."""
        pool: dict[str, Configuration] = {}

        def add(config: Configuration) -> None:
            if config.hash not in pool and self.fresh(config, taken):
                pool[config.hash] = config

        for center in centers:
            for nb in self.neighbours(center):
                add(nb)
        n = self.candidates
        for _ in range(n // 8 if centers else 0):
            best = centers[0]
            values = dict(best)
            for _ in range(self.rng.choice((2, 2, 3, 4))):
                name = self.rng.choice(self.space.active(values))
                values[name] = self.space.knobs[name].mutate(values.get(name, self.space.knobs[name].default),
                                                             self.rng, 0.3)
            add(self.space.repair(values, self.rng))
        fresh = n if not self._uniform else max(1, n // 8)
        self._uniform.extend(self.space.sample(self.rng) for _ in range(fresh))
        del self._uniform[: max(0, len(self._uniform) - n)]
        for config in self._uniform:
            add(config)
        return list(pool.values())
