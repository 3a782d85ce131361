"""Pure-Python toy fitness functions over search spaces (no testbed involved)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nictune.optimizer import Engine, Score
from nictune.search_spaces import ChoiceKnob, Configuration, SearchSpace, Value

#: A configuration of benson-40g that is neither the default nor the baseline profile.
BENSON_TARGET: dict[str, Value] = {
    "enable_sys_tune": True,
    "high_rate_steer": False,
    "rx_ring": 2048,
    "tx_ring": 4096,
    "rx_mode": "timer",
    "poll_usecs": 64,
    "pause": False,
    "mtu": 4000,
    "txqueuelen": 2000,
    "netdev_max_backlog": 30000,
    "buffers": "large",
    "irq_affinity": "single-core",
    "governor": "performance",
    "app_cpu": "irq-core",
}


def distance(space: SearchSpace, name: str, a: Value, b: Value) -> float:
    """0 when equal; for ordered knobs the distance of their encodings, else 1."""
    knob = space.knobs[name]
    if a == b:
        return 0.0
    if (isinstance(knob, ChoiceKnob) and not knob.ordered) or isinstance(a, bool | str):
        return 1.0
    return abs(knob.encode(a) - knob.encode(b))


Fitness = Callable[[Configuration], float]


def separable(space: SearchSpace, target: Mapping[str, Value]) -> Fitness:
    """A score whose unique maximum (0) is ``target``: minus the summed knob distances."""

    def fitness(config: Configuration) -> float:
        total = 0.0
        for name, want in target.items():
            total += distance(space, name, config[name], want) if name in config else 1.0
        return -total

    return fitness


def drive(engine: Engine, fitness: Fitness, budget: int, batch: int = 4) -> list[Configuration]:
    """Run the ask/tell loop with ``fitness`` until ``budget`` trials or the engine stops."""
    asked: list[Configuration] = []
    while len(asked) < budget and not engine.finished:
        configs = engine.ask(min(batch, budget - len(asked)))
        if not configs:
            break
        asked.extend(configs)
        for config in configs:
            engine.tell(config, Score(True, fitness(config)))
    return asked
