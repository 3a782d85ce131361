"""Bottleneck diagnosis: where a measurement says the path is saturated, and what relieves it.

A benchmark run reports more than its objective: drop counters per stage (the sender's
qdisc, the receiver's NIC ring, its per-CPU backlog, the socket) and the utilisation of
the busiest core at each end (see ``METRICS`` in :mod:`nictune.measure._base`). A stage
is *saturated* in a configuration when its counter passes :data:`THRESHOLDS` on the mean of
the configuration's runs: a drop every run or more, or a core busy 95 % of the time.

A space says which knobs relieve which stage (``relieves:`` in its YAML, e.g. ``txqueuelen:
{relieves: {qdisc_drops: up}}``). :func:`relief_moves` turns that into one-knob changes of
a configuration, one per knob that relieves one of its saturated stages: the ``bayes``
engine measures the most promising of them in its ``diagnose`` rounds, which is how a
tuner reads ``tc -s qdisc`` or ``/proc/net/softnet_stat`` before it touches a knob.

Why it pays (``bench/engines.py``, simulated testbeds, 3 % noise): a knob that costs a few
per cent near the optimum (txqueuelen, the rx ring, GRO) is as large as one run's noise in
the objective, but its counter is zero or not: the objective alone does not tell the
model which knob to change, the counter does.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from nictune.errors import InvalidInputError
from nictune.search_spaces import BOTTLENECKS, Configuration, SearchSpace, Value

#: When a counter's mean says its stage is saturated: at least one dropped packet per run,
#: or the busiest core busy at least 95 % of the run.
THRESHOLDS: dict[str, float] = {
    name: (95.0 if name.endswith("_busy_pct") else 1.0) for name in BOTTLENECKS
}


def saturated(metrics: Mapping[str, float]) -> list[str]:
    """The bottleneck counters of ``metrics`` past their threshold: drops first (most
    dropped first), then busy cores (busiest first)."""
    hit = [name for name, limit in THRESHOLDS.items() if float(metrics.get(name, 0.0)) >= limit]
    return sorted(hit, key=lambda n: (n.endswith("_busy_pct"), -float(metrics[n])))


def relief_moves(space: SearchSpace, config: Configuration, metrics: Mapping[str, float]) -> list[Configuration]:
    """One-knob changes of ``config`` that relieve a stage its ``metrics`` say is saturated,
    in the order of :func:`saturated`, then of the space's knobs. Changes that break a
    constraint of the space are left out."""
    out: dict[str, Configuration] = {}
    values = config.as_dict()
    for metric in saturated(metrics):
        for name, knob in space.knobs.items():
            if name not in values:  # inactive under the configuration's modes
                continue
            for relief in knob.relieves:
                if relief.metric != metric:
                    continue
                new = knob.relief_value(values[name], relief)
                if new is None:
                    continue
                try:
                    moved = space.configuration({**values, name: new}, strict=False)
                except InvalidInputError:
                    continue
                out.setdefault(moved.hash, moved)
    return list(out.values())


def relieved(space: SearchSpace, base: Configuration) -> Configuration | None:
    """``base`` with every knob that relieves some bottleneck moved all the way in that
    direction (the end of its range) or to its relief value: a configuration in which no
    stage the space knows of should saturate, what a tuner tries first on a new host (large
    MTU, rings, buffers and queues, offloads on). Knobs whose reliefs disagree keep their
    value; ``None`` when nothing changes. A prior, never a rule: the engine measures it like
    any other proposal and learns from what it gives."""
    values = base.as_dict()
    for name, knob in space.knobs.items():
        if name not in values or not knob.relieves:
            continue
        targets: set[Value] = set()
        for relief in knob.relieves:
            if relief.direction is None:
                if relief.value is not None:
                    targets.add(relief.value)
            else:
                listed = knob.values()
                ends = (listed[0], listed[-1]) if listed else (knob.decode(0.0), knob.decode(1.0))
                targets.add(ends[1] if relief.direction == "up" else ends[0])
        if len(targets) == 1:
            values[name] = targets.pop()
    try:
        moved = space.configuration(values, strict=False)
    except InvalidInputError:
        moved = space.repair(values, random.Random(0))
    return None if moved.hash == base.hash else moved
