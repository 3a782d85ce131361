"""Space-filling designs: configurations spread evenly over a space's knobs.

A scrambled Sobol sequence (SciPy's ``qmc.Sobol``) in one dimension per knob, each coordinate
mapped to a value by :meth:`~nictune.search_spaces._base.Knob.quantile`, so every value of a
discrete knob gets an equal share of the points and every pair of knobs is covered evenly
(the low-discrepancy property), which independent uniform draws only give on average. Used
for the first round of an engine (main effects screened from a handful of measurements) and
for the design of a measured table (``bench/collect_veth.py``).
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable

from nictune.search_spaces.space import Configuration, SearchSpace


def space_filling(
    space: SearchSpace,
    n: int,
    seed: int,
    *,
    exclude: Iterable[str] = (),
    skip: int = 0,
) -> list[Configuration]:
    """``n`` distinct configurations of ``space`` from a scrambled Sobol sequence.

    A point that breaks a constraint is repaired (:meth:`SearchSpace.repair`, the knobs of the
    broken constraint redrawn); conditional knobs take their coordinate only where active.

    Args:
        space: the space.
        n: how many configurations (fewer when the space has fewer distinct ones).
        seed: scrambling seed; the same seed gives the same design.
        exclude: configuration hashes to leave out (e.g. ones measured already).
        skip: points of the sequence to pass over first (a later part of the same design).
    """
    if n <= 0:
        return []
    from scipy.stats import qmc

    knobs = list(space.knobs.values())
    sobol = qmc.Sobol(d=max(1, len(knobs)), scramble=True, seed=seed % (2**32))
    rng = random.Random(seed)
    taken = set(exclude)
    out: list[Configuration] = []
    drawn = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "balance properties" warning for n not a power of 2
        if skip:
            sobol.fast_forward(skip)
        while len(out) < n and drawn < 20 * n + 64:
            block = sobol.random(max(8, n - len(out)))
            for row in block:
                drawn += 1
                values = {k.name: k.quantile(float(u)) for k, u in zip(knobs, row, strict=False)}
                config = space.repair(values, rng)
                if config.hash not in taken:
                    taken.add(config.hash)
                    out.append(config)
                    if len(out) >= n:
                        break
    return out
