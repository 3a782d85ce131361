"""The best noise-free value a simulated scenario allows, found by multi-start coordinate search.

Exhaustive enumeration of benson-40g (18.9 million configurations at ~50 us each) takes
about 16 minutes, too long for a test; ``bench/optimum.py`` runs that enumeration once. For
tests, coordinate descent from many starts (each knob in turn set to its best value until
nothing improves) finds the same value in a second: for Benson TCP it is the wire
goodput at MTU 9000, an upper bound no configuration can pass.
"""

from __future__ import annotations

import random

from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.testbeds import SimTestbed
from nictune.optimizer import Goal, Score
from nictune.search_spaces import Configuration, SearchSpace


def clean_score(bed: SimTestbed, space: SearchSpace, config: Configuration, workload: str, goal: Goal) -> Score:
    return goal.score(bed.clean(space.settings(config), get_workload(workload)))


def coordinate_optimum(
    bed: SimTestbed, space: SearchSpace, workload: str, goal: Goal, starts: int = 12, seed: int = 0
) -> tuple[Configuration, Score]:
    rng = random.Random(seed)
    best: tuple[Configuration, Score] | None = None
    seeds = [space.default(), *(space.profile(p) for p in space.profiles)]
    seeds += [space.sample(rng) for _ in range(starts)]
    for current in seeds:
        score = clean_score(bed, space, current, workload, goal)
        improved = True
        while improved:
            improved = False
            for _, cand in space.neighbours(current):
                s = clean_score(bed, space, cand, workload, goal)
                if s > score:
                    current, score, improved = cand, s, True
        if best is None or score > best[1]:
            best = (current, score)
    assert best is not None
    return best
