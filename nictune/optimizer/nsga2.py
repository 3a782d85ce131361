"""NSGA-II (``nsga2``): multi-objective search that returns the Pareto front.

The engine learns every objective of the goal from :class:`~nictune.optimizer.pareto.MultiScore`
tells (the job loop builds them with ``MultiScore.from_goal(goal, mean_metrics)``); a plain
:class:`~nictune.optimizer.objectives.Score` counts as one objective, so the engine also runs
single-objective jobs (then it is a generational GA with NSGA-II's selection).

One generation (Deb et al. 2002), with DEAP's selection behind ``deap_adapter``:
parents by binary tournaments on dominance and crowding distance (``selTournamentDCD``),
uniform crossover over knobs (a conditional knob goes with its parent's choice), per-knob
mutation through ``Knob.mutate`` (at least one knob), repair; then parents and children
together are cut back to ``population`` by non-dominated sorting and crowding distance
(``selNSGA2``). Survivors are never measured again.

Constraints follow Deb's rule: every feasible configuration dominates every infeasible one,
and infeasible ones rank by their violation (their objective values are replaced by the
worst feasible value minus the violation before DEAP sees them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from nictune.optimizer import deap_adapter
from nictune.optimizer._base import Engine, Param, register_engine
from nictune.optimizer.deap_adapter import Member
from nictune.optimizer.objectives import Score
from nictune.optimizer.pareto import Vector, pareto_front, vector_of
from nictune.search_spaces import Configuration, Value

#: Re-mutations of a child that was measured already, before a random sample replaces it.
MAX_REMUTATIONS = 50
#: Stand-in for -inf (failed trials): DEAP's crowding distance needs finite values.
FLOOR = -1e300


@register_engine
class Nsga2Engine(Engine):
    """NSGA-II (``nsga2``). See the module docstring."""

    name: ClassVar[str] = "nsga2"
    PARAMS: ClassVar[Mapping[str, Param]] = {
        "population": Param(int, 12, low=4, high=1000, help="survivors (and children) per generation"),
        "cxpb": Param(float, 0.9, low=0.0, high=1.0, help="probability a pair of parents is crossed"),
        "mutpb": Param(float, None, low=0.0, high=1.0,
                       help="per-knob mutation probability (default 1/number of knobs)"),
        "mutation_scale": Param(float, 0.25, low=0.001, high=1.0,
                                help="step of a mutation, as a fraction of the knob's range"),
    }

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        p = self.params
        self.population: int = p["population"]
        self.cxpb: float = p["cxpb"]
        self.mutpb: float = p["mutpb"] if p["mutpb"] is not None else 1.0 / len(self.space.knobs)
        self.mutation_scale: float = p["mutation_scale"]
        self.generation = 0
        self._exhausted = False
        self._survivors: list[Member] = []
        self._children: list[Member] = self._first_generation()

    # ------------------------------------------------------------- ask / tell
    def _ask(self, n: int) -> list[Configuration]:
        return [m.config for m in self._children if not self.known(m.config)][:n]

    def _tell(self, config: Configuration, score: Score) -> None:
        if not self._exhausted and all(self.score_of(m.config) is not None for m in self._children):
            self._next_generation()

    @property
    def finished(self) -> bool:
        return self._exhausted

    def pareto_front(self) -> list[tuple[Configuration, Score]]:
        """The non-dominated feasible configurations told so far, in the order they were told."""
        configs = {c.hash: c for c in self._asked.values()}
        items = []
        for h, score in self._scores.items():
            config = configs.get(h)
            if config is not None:
                items.append((config, score))
        return pareto_front(items)

    def _state(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "population": len(self._survivors),
            "children": len(self._children),
            "evaluated_in_generation": sum(1 for m in self._children if self.score_of(m.config) is not None),
            "front": [c.hash for c, _ in self.pareto_front()],
            "mutpb": self.mutpb,
        }

    # ------------------------------------------------------------ generations
    def _genome(self, config: Configuration, carry: Mapping[str, Value] | None = None) -> dict[str, Value]:
        carry = carry or {}
        return {name: config[name] if name in config else carry.get(name, knob.default)
                for name, knob in self.space.knobs.items()}

    def _first_generation(self) -> list[Member]:
        members = [Member(self._genome(c), c) for c in self.start]
        seen = {m.config.hash for m in members}
        for _ in range(MAX_REMUTATIONS * self.population):
            if len(members) >= self.population:
                break
            config = self.space.sample(self.rng)
            if config.hash not in seen:
                seen.add(config.hash)
                inactive = {n: k.sample(self.rng) for n, k in self.space.knobs.items() if n not in config}
                members.append(Member(self._genome(config, inactive), config))
        return members

    def _vectors(self, members: list[Member]) -> list[Vector]:
        """DEAP fitness values: objective vectors with Deb's constraint rule folded in."""
        scores = [self.score_of(m.config) for m in members]
        raw = [vector_of(s) if s is not None else (FLOOR,) for s in scores]
        width = max(len(v) for v in raw)
        raw = [v if len(v) == width else (v[0],) * width for v in raw]
        feasible = [v for v, s in zip(raw, scores, strict=True)
                    if s is not None and s.feasible and all(math.isfinite(x) for x in v)]
        worst = [min(v[j] for v in feasible) for j in range(width)] if feasible else [0.0] * width
        spread = [max(1.0, max(v[j] for v in feasible) - worst[j]) for j in range(width)] if feasible \
            else [1.0] * width
        out: list[Vector] = []
        for v, s in zip(raw, scores, strict=True):
            if s is not None and s.feasible and all(math.isfinite(x) for x in v):
                out.append(v)
            elif s is None or not math.isfinite(s.violation):
                out.append((FLOOR,) * width)
            else:
                out.append(tuple(worst[j] - spread[j] * (1.0 + s.violation) for j in range(width)))
        return out

    def _next_generation(self) -> None:
        combined: list[Member] = []
        seen: set[str] = set()
        for m in [*self._survivors, *self._children]:
            if m.config.hash not in seen:
                seen.add(m.config.hash)
                combined.append(m)
        vectors = self._vectors(combined)
        individuals = []
        owner: dict[int, Member] = {}
        for member, values in zip(combined, vectors, strict=True):
            ind = deap_adapter.make_mo_individual(member.genome, values)
            owner[id(ind)] = member
            individuals.append(ind)
        survivors = deap_adapter.select_nsga2(individuals, min(self.population, len(individuals)))
        self._survivors = [owner[id(i)] for i in survivors]
        parents = deap_adapter.select_tournament_dcd(survivors, self.population, self.rng)
        genomes = [dict(p) for p in parents]
        taken: set[str] = set()
        children: list[Member] = []
        for i in range(0, len(genomes) - 1, 2):
            if self.rng.random() < self.cxpb:
                self._crossover(genomes[i], genomes[i + 1])
        for genome in genomes:
            child = self._child(genome, taken)
            if child is not None:
                taken.add(child.config.hash)
                children.append(child)
        self.generation += 1
        self._children = children
        if not children:
            self._exhausted = True

    # -------------------------------------------------------------- operators
    def _crossover(self, a: dict[str, Value], b: dict[str, Value]) -> None:
        swapped: dict[str, bool] = {}
        for name, knob in self.space.knobs.items():
            cond = knob.condition
            swap = swapped[cond.knob] if cond is not None else self.rng.random() < 0.5
            swapped[name] = swap
            if swap:
                a[name], b[name] = b[name], a[name]

    def _mutate(self, genome: dict[str, Value], *, force_one: bool) -> None:
        mutated = False
        active = self.space.active(genome)
        if not force_one:
            for name in active:
                if self.rng.random() < self.mutpb:
                    genome[name] = self.space.knobs[name].mutate(genome[name], self.rng, self.mutation_scale)
                    mutated = True
        if not mutated:
            name = self.rng.choice(active)
            genome[name] = self.space.knobs[name].mutate(genome[name], self.rng, self.mutation_scale)

    def _child(self, genome: dict[str, Value], taken: set[str]) -> Member | None:
        def fresh(config: Configuration) -> bool:
            return not self.known(config) and config.hash not in taken

        self._mutate(genome, force_one=False)
        for _ in range(MAX_REMUTATIONS):
            config = self.space.repair(genome, self.rng)
            genome.update(config.as_dict())
            if fresh(config):
                return Member(genome, config)
            self._mutate(genome, force_one=True)
        for _ in range(MAX_REMUTATIONS):
            sample = self.space.sample(self.rng)
            if fresh(sample):
                return Member(self._genome(sample, genome), sample)
        return None
