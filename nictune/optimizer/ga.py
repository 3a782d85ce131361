"""A generational genetic algorithm over the knobs of a space (DEAP behind an adapter).

The genome is a dict knob -> value over every knob of the space: the active ones decide
the configuration, inactive ones are carried along (a poll interval survives a spell in
another interrupt mode). The configuration a genome stands for is always the canonical,
repaired one, so the engine never proposes an invalid configuration.

One generation: tournament selection, uniform crossover over knobs (a conditional knob
follows its parent's choice), per-knob mutation through ``Knob.mutate`` (at least one knob
per child), repair, and elitism (the best ``elite`` survive without being measured again).
A child that was already measured in this run is mutated again (up to 50 times), then
replaced by a random valid sample; duplicates inside a generation are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from nictune.optimizer import deap_adapter
from nictune.optimizer._base import Engine, Param, register_engine
from nictune.optimizer.deap_adapter import Member
from nictune.optimizer.objectives import Score
from nictune.search_spaces import Configuration, Value

#: Re-mutations of a child that was measured already, before a random sample replaces it.
MAX_REMUTATIONS = 50


@register_engine
class GeneticEngine(Engine):
    """Genetic algorithm (``ga``). See the module docstring for the procedure."""

    name: ClassVar[str] = "ga"
    PARAMS: ClassVar[Mapping[str, Param]] = {
        "population": Param(int, 10, low=4, help="individuals per generation"),
        "elite": Param(int, None, low=0,
                       help="best individuals that survive unchanged (default 2; 1 below population 8)"),
        "tournament": Param(int, 3, low=1, help="tournament size of the selection"),
        "cxpb": Param(float, 0.6, low=0.0, high=1.0, help="probability a pair is crossed"),
        "mutpb": Param(float, None, low=0.0, high=1.0,
                       help="per-knob mutation probability (default 1/number of knobs)"),
        "mutation_scale": Param(float, 0.25, low=0.001, high=1.0,
                                help="step of a mutation, as a fraction of the knob's range"),
        "local": Param(int, None, low=0,
                       help="children per generation that change one knob of the best (local search; "
                            "default 2; 1 below population 8)"),
    }

    def _check_params(self, params: dict[str, Any]) -> None:
        small = params["population"] < 8
        for name in ("elite", "local"):
            if params[name] is None:
                params[name] = 1 if small else 2
        if params["elite"] >= params["population"]:
            raise self.param_error("elite", "must be smaller than population")
        if params["tournament"] > params["population"]:
            raise self.param_error("tournament", "must not exceed population")
        if params["elite"] + params["local"] >= params["population"]:
            raise self.param_error("local", "elite + local must be smaller than population")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        p = self.params
        self.population: int = p["population"]
        self.elite: int = p["elite"]
        self.tournament: int = p["tournament"]
        self.cxpb: float = p["cxpb"]
        self.mutpb: float = p["mutpb"] if p["mutpb"] is not None else 1.0 / len(self.space.knobs)
        self.mutation_scale: float = p["mutation_scale"]
        self._local_queue: list[str] = []
        self._local_center = ""
        self.local: int = p["local"]
        self.generation = 0
        self._exhausted = False
        self._members = self._first_generation()

    # ------------------------------------------------------------- ask / tell
    def _ask(self, n: int) -> list[Configuration]:
        return [m.config for m in self._members if not self.known(m.config)][:n]

    def _tell(self, config: Configuration, score: Score) -> None:
        # Breed as soon as the generation is complete, so `finished` is accurate at once.
        if not self._exhausted and all(
            self.score_of(m.config) is not None for m in self._members
        ):
            self._breed()

    @property
    def finished(self) -> bool:
        return self._exhausted

    @property
    def members(self) -> list[Configuration]:
        """The configurations of the current generation (elites first)."""
        return [m.config for m in self._members]

    def _state(self) -> dict[str, Any]:
        scored = sum(1 for m in self._members if self.score_of(m.config) is not None)
        return {
            "generation": self.generation,
            "population": len(self._members),
            "evaluated_in_generation": scored,
            "mutpb": self.mutpb,
        }

    # ------------------------------------------------------------ generations
    def _genome(self, config: Configuration, carry: Mapping[str, Value] | None) -> dict[str, Value]:
        """A full genome: the configuration's values, other knobs from ``carry`` or defaults."""
        carry = carry or {}
        return {name: config[name] if name in config else carry.get(name, knob.default)
                for name, knob in self.space.knobs.items()}

    def _random_genome(self, config: Configuration) -> dict[str, Value]:
        inactive = {n: k.sample(self.rng) for n, k in self.space.knobs.items() if n not in config}
        return self._genome(config, inactive)

    def _first_generation(self) -> list[Member]:
        members = [Member(self._genome(c, None), c) for c in self.start]
        seen = {m.config.hash for m in members}
        # Half of the rest: one-knob changes of the known-good start (the last one, e.g. a
        # baseline profile); the other half: uniform samples for diversity.
        if self.start:
            seeded = (self.population - len(members)) // 2
            for _ in range(MAX_REMUTATIONS * max(1, seeded)):
                if len(members) >= len(self.start) + seeded:
                    break
                genome = self._genome(self.start[-1], None)
                self._mutate_next(genome)
                config = self._repair(genome)
                if config.hash not in seen:
                    seen.add(config.hash)
                    members.append(Member(genome, config))
        for _ in range(MAX_REMUTATIONS * self.population):
            if len(members) >= self.population:
                break
            config = self.space.sample(self.rng)
            if config.hash not in seen:
                seen.add(config.hash)
                members.append(Member(self._random_genome(config), config))
        return members

    def _breed(self) -> None:
        individuals = []
        owner: dict[int, Member] = {}
        for member in self._members:
            ind = deap_adapter.make_individual(member.genome)
            score = self.score_of(member.config)
            assert score is not None
            deap_adapter.set_score(ind, score)
            owner[id(ind)] = member
            individuals.append(ind)
        ranked = [owner[id(i)] for i in deap_adapter.select_best(individuals, max(1, self.elite))]
        elites = ranked[: self.elite]
        parents = deap_adapter.select_tournament(
            individuals, self.population - self.elite - self.local, self.tournament, self.rng
        )
        genomes: list[dict[str, Value]] = []
        for i in range(0, len(parents), 2):
            pair = [dict(p) for p in parents[i:i + 2]]
            if len(pair) == 2 and self.rng.random() < self.cxpb:
                self._crossover(pair[0], pair[1])
            genomes.extend(pair)
        members = list(elites)
        taken = {m.config.hash for m in members}
        children = 0
        # Memetic step: a few one-knob changes of the best so far. Crossover with poor
        # individuals rarely keeps a good configuration intact; these children do.
        best_genome = ranked[0].genome
        if ranked[0].config.hash != self._local_center:
            self._local_center, self._local_queue = ranked[0].config.hash, []
        for _ in range(self.local):
            genome = dict(best_genome)
            self._mutate_next(genome)
            child = self._local_child(genome, taken)
            if child is not None:
                taken.add(child.config.hash)
                members.append(child)
                children += 1
        for genome in genomes:
            child = self._child(genome, taken)
            if child is not None:
                taken.add(child.config.hash)
                members.append(child)
                children += 1
        self.generation += 1
        self._members = members
        if children == 0:  # nothing new left to try around this population
            self._exhausted = True

    # -------------------------------------------------------------- operators
    def _crossover(self, a: dict[str, Value], b: dict[str, Value]) -> None:
        """Uniform crossover in place; a conditional knob goes with its parent's choice."""
        swapped: dict[str, bool] = {}
        for name, knob in self.space.knobs.items():
            cond = knob.condition
            swap = swapped[cond.knob] if cond is not None else self.rng.random() < 0.5
            swapped[name] = swap
            if swap:
                a[name], b[name] = b[name], a[name]

    def _mutate_one(self, genome: dict[str, Value]) -> None:
        name = self.rng.choice(self.space.active(genome))
        genome[name] = self.space.knobs[name].mutate(genome[name], self.rng, self.mutation_scale)

    def _mutate(self, genome: dict[str, Value]) -> None:
        mutated = False
        for name in self.space.active(genome):
            if self.rng.random() < self.mutpb:
                knob = self.space.knobs[name]
                genome[name] = knob.mutate(genome[name], self.rng, self.mutation_scale)
                mutated = True
        if not mutated:
            self._mutate_one(genome)

    def _repair(self, genome: dict[str, Value]) -> Configuration:
        config = self.space.repair(genome, self.rng)
        genome.update(config.as_dict())
        return config

    def _mutate_next(self, genome: dict[str, Value]) -> None:
        """Mutate the next knob of a shuffled round over the active knobs (each knob in turn)."""
        if not self._local_queue:
            self._local_queue = list(self.space.active(genome))
            self.rng.shuffle(self._local_queue)
        name = self._local_queue.pop()
        if name in genome:
            genome[name] = self.space.knobs[name].mutate(genome[name], self.rng, self.mutation_scale)

    def _local_child(self, genome: dict[str, Value], taken: set[str]) -> Member | None:
        """A repaired one-knob change that is new, or ``None`` after a few tries."""
        base = dict(genome)
        for _ in range(MAX_REMUTATIONS):
            config = self._repair(genome)
            if not self.known(config) and config.hash not in taken:
                return Member(genome, config)
            genome = dict(base)
            self._mutate_one(genome)
        return None

    def _child(self, genome: dict[str, Value], taken: set[str]) -> Member | None:
        """Mutate and repair ``genome``; ``None`` when nothing new could be found."""

        def fresh(config: Configuration) -> bool:
            return not self.known(config) and config.hash not in taken

        self._mutate(genome)
        config = self._repair(genome)
        for _ in range(MAX_REMUTATIONS):
            if fresh(config):
                return Member(genome, config)
            self._mutate_one(genome)
            config = self._repair(genome)
        if fresh(config):
            return Member(genome, config)
        for _ in range(MAX_REMUTATIONS):
            sample = self.space.sample(self.rng)
            if fresh(sample):
                return Member(self._genome(sample, genome), sample)
        return None
