"""Synthetic landscapes over the built-in spaces: structures no engine was developed on.

Each instance lays a constructed function over a built-in space (``linux-nic``,
``benson-40g``, ``veth``, ``linux-tcp``, ``nurika-pfring``). The figures are *constructed*, not
measured nor modelled: "throughput_gbps" is a score with a base of 10 and ``loss_pct`` a
constraint metric. Four kinds, each instance drawing its knobs, targets and weights at random
(never a target equal to the default's or the ``baseline`` profile's value):

* ``together``: three knobs that pay off only together (a bonus of 30-80 % when all three sit
  at their targets, nothing for two of three), mild additive effects of 1-5 % on 6-10 other
  knobs after that;
* ``ends``: optima at range ends: 4-7 knobs with monotone effects (15-40 % for the first,
  then decreasing) whose best value is the low or the high end at random, and one pair
  that adds 10 % together;
* ``narrow``: the objective grows with 5-8 knobs, and so does the loss; the constraint
  ``loss <= threshold`` leaves about 5-15 % of a uniform sample feasible, so the optimum sits
  on the boundary of a narrow feasible region;
* ``conditional``: one interrupt mode that is not the default's pays off (40-70 %) only
  with its conditional knob (poll interval, watermark, busy-poll time) at a target value; the
  mode alone gives 5 %; mild additive effects elsewhere (spaces with conditional knobs only).

Measurement noise: 3 % CV on the objective (log-normal), loss twice as noisy. Instances are
fixed by their index (``random.Random(INSTANCE_SEED + i)``); the kind cycles with the index;
the split was set before any engine was tuned: ``dev`` when ``i % 5`` is 0 or 2, else
``test``.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

from bench.landscapes._base import Landscape, Split, lognormal_factor
from nictune.optimizer import Goal
from nictune.search_spaces import BoolKnob, ChoiceKnob, Configuration, Knob, SearchSpace, load_space

INSTANCE_SEED = 28_500
DEFAULT_COUNT = 48
NOISE = 0.03
BASE = 10.0
KINDS = ("together", "ends", "narrow", "conditional")
SPACES = ("linux-nic", "benson-40g", "veth", "linux-tcp", "nurika-pfring")
CONDITIONAL_SPACES = ("linux-nic", "benson-40g", "nurika-pfring")


def _ordered(knob: Knob) -> bool:
    return not (isinstance(knob, ChoiceKnob) and not knob.ordered) and not isinstance(knob, BoolKnob)


@dataclasses.dataclass
class Effect:
    """A main effect of one knob: ``weight * shape(value)`` with shape in [0, 1]."""

    knob: str
    weight: float
    #: value -> shape in [0, 1] for listed knobs; for others, (direction, peak) on the position
    table: dict[Any, float]


def _positions(knob: Knob) -> dict[Any, float]:
    values = knob.values() or []
    n = len(values)
    return {v: (i / (n - 1) if n > 1 else 0.0) for i, v in enumerate(values)}


def _shape(knob: Knob, rng: random.Random, mode: str) -> dict[Any, float]:
    """value -> [0, 1]: ``up``/``down`` monotone (curved), ``peak`` at a random value, ``cat``
    random scores for unordered knobs."""
    pos = _positions(knob)
    if not _ordered(knob) or mode == "cat":
        scores = {v: rng.random() for v in pos}
        top = max(scores.values()) or 1.0
        return {v: s / top for v, s in scores.items()}
    gamma = rng.uniform(0.5, 2.0)
    if mode == "up":
        return {v: p ** gamma for v, p in pos.items()}
    if mode == "down":
        return {v: (1 - p) ** gamma for v, p in pos.items()}
    peak = rng.random()
    width = rng.uniform(0.2, 0.5)
    return {v: math.exp(-(((p - peak) / width) ** 2)) for v, p in pos.items()}


@dataclasses.dataclass
class SyntheticLandscape(Landscape):
    """A constructed landscape (see the module docstring)."""

    kind: str = "together"
    effects: list[Effect] = dataclasses.field(default_factory=list)
    #: knob -> target value (``together``), all must hold for the bonus
    targets: dict[str, Any] = dataclasses.field(default_factory=dict)
    bonus: float = 0.0
    #: (knob a, value a, knob b, value b, bonus) of the ``ends`` pair
    pair: tuple[str, Any, str, Any, float] | None = None
    #: loss model of ``narrow``: knob -> loss exponent per unit of shape
    loss_effects: list[Effect] = dataclasses.field(default_factory=list)
    loss_scale: float = 0.0
    #: ``conditional``: (mode knob, mode, child knob, child target, bonus)
    mode_bonus: tuple[str, Any, str, Any, float] | None = None
    noise: float = NOISE

    def _value(self, config: Configuration) -> tuple[float, float]:
        gain = 0.0
        for e in self.effects:
            value = config.get(e.knob)
            if value is not None:
                gain += e.weight * e.table.get(value, 0.0)
        score = BASE * (1.0 + gain)
        if self.targets and all(config.get(k) == v for k, v in self.targets.items()):
            score *= 1.0 + self.bonus
        if self.pair is not None:
            a, va, b, vb, extra = self.pair
            if config.get(a) == va and config.get(b) == vb:
                score *= 1.0 + extra
        if self.mode_bonus is not None:
            mode_knob, mode, child, target, extra = self.mode_bonus
            if config.get(mode_knob) == mode:
                score *= 1.0 + (extra if config.get(child) == target else 0.05)
        loss = 0.0
        if self.loss_effects:
            exponent = sum(e.weight * e.table.get(config.get(e.knob), 0.0) for e in self.loss_effects
                           if config.get(e.knob) is not None)
            loss = self.loss_scale * math.exp(exponent)
        return score, loss

    def _clean(self, config: Configuration) -> dict[str, float]:
        score, loss = self._value(config)
        return {"throughput_gbps": score, "loss_pct": loss}

    def _sample(self, config: Configuration, rng: random.Random) -> dict[str, float]:
        clean = self.clean(config)
        return {"throughput_gbps": clean["throughput_gbps"] * lognormal_factor(rng, self.noise),
                "loss_pct": clean["loss_pct"] * lognormal_factor(rng, 2 * self.noise)}

    def _identity(self) -> Any:
        return [self.kind, repr(self.effects), self.targets, self.bonus, self.pair, repr(self.loss_effects),
                self.loss_scale, self.mode_bonus, self.noise]

    def candidates(self) -> list[Configuration]:
        """The construction's own best guess, for the optimum search to start from."""
        values: dict[str, Any] = {}
        for e in self.effects:
            values[e.knob] = max(e.table, key=lambda v: e.table[v])
        values.update(self.targets)
        if self.pair is not None:
            values[self.pair[0]], values[self.pair[2]] = self.pair[1], self.pair[3]
        if self.mode_bonus is not None:
            values[self.mode_bonus[0]], values[self.mode_bonus[2]] = self.mode_bonus[1], self.mode_bonus[3]
        try:
            return [self.space.repair(values, random.Random(0))]
        except Exception:
            return []


def _avoid(space: SearchSpace) -> dict[str, set[Any]]:
    """Values a target must not take: the default's and the baseline profile's."""
    out: dict[str, set[Any]] = {name: {knob.default} for name, knob in space.knobs.items()}
    for profile in ("baseline",):
        if profile in space.profiles:
            for name, value in space.profile(profile).items():
                out[name].add(value)
    return out


def _free_knobs(space: SearchSpace) -> list[str]:
    """Unconditional knobs with at least two listed values, no constraint on them."""
    constrained = {n for c in space.constraints for n in c.names}
    return [n for n, k in space.knobs.items()
            if k.condition is None and (k.values() or []) and len(k.values() or []) >= 2 and n not in constrained]


def instance(i: int) -> SyntheticLandscape:
    rng = random.Random(INSTANCE_SEED + i)
    kind = KINDS[i % len(KINDS)]
    space_name = rng.choice(CONDITIONAL_SPACES if kind == "conditional" else SPACES)
    space = load_space(space_name)
    avoid = _avoid(space)
    free = _free_knobs(space)
    rng.shuffle(free)
    split: Split = "dev" if i % 5 in (0, 2) else "test"
    goal = Goal.from_names(["throughput"])
    land = SyntheticLandscape(name=f"syn:{kind}-{i:02d}", family="synthetic", split=split, space=space, goal=goal,
                              kind=kind)

    def mild(names: list[str]) -> list[Effect]:
        return [Effect(n, rng.uniform(0.01, 0.05), _shape(space.knobs[n], rng, rng.choice(("up", "down", "peak"))))
                for n in names]

    if kind == "together":
        chosen = free[:3]
        for name in chosen:
            options = [v for v in space.knobs[name].values() or [] if v not in avoid[name]]
            land.targets[name] = rng.choice(options) if options else space.knobs[name].default
        land.bonus = rng.uniform(0.3, 0.8)
        land.effects = mild(free[3:3 + rng.randint(6, 10)])
    elif kind == "ends":
        count = rng.randint(4, 7)
        top = rng.uniform(0.15, 0.4)
        for j, name in enumerate(free[:count]):
            knob = space.knobs[name]
            table = _shape(knob, rng, rng.choice(("up", "down"))) if _ordered(knob) else _shape(knob, rng, "cat")
            land.effects.append(Effect(name, top * (0.6 ** j), table))
        a, b = free[count], free[count + 1]
        va = rng.choice(space.knobs[a].values() or [space.knobs[a].default])
        vb = rng.choice(space.knobs[b].values() or [space.knobs[b].default])
        land.pair = (a, va, b, vb, 0.1)
        land.effects += mild(free[count + 2:count + 2 + rng.randint(3, 6)])
    elif kind == "narrow":
        count = rng.randint(5, 8)
        for name in free[:count]:
            knob = space.knobs[name]
            table = _shape(knob, rng, rng.choice(("up", "down")) if _ordered(knob) else "cat")
            weight = rng.uniform(0.05, 0.3)
            land.effects.append(Effect(name, weight, table))
            # The loss grows with what the objective likes (most of it) plus noise in the structure.
            land.loss_effects.append(Effect(name, rng.uniform(1.0, 3.0) * weight / 0.3, table))
        for name in free[count:count + rng.randint(1, 3)]:
            land.loss_effects.append(Effect(name, rng.uniform(0.5, 1.5), _shape(space.knobs[name], rng, "peak")))
        land.loss_scale = 1.0
        draws = sorted(land._value(space.sample(rng))[1] for _ in range(4000))
        share = rng.uniform(0.05, 0.15)
        # Scaled so that the threshold is a loss figure users write (0.1, 0.5 or 1 %).
        threshold = rng.choice((0.1, 0.5, 1.0))
        land.loss_scale = threshold / draws[int(share * len(draws))] * (1 + 1e-9)
        land.goal = Goal.from_names(["throughput"], [f"loss<={threshold:g}"])
    else:  # conditional
        mode_knob = next(n for n, k in space.knobs.items()
                         if any(c.condition is not None and c.condition.knob == n for c in space.knobs.values()))
        children = {value: c.name for c in space.knobs.values()
                    if c.condition is not None and c.condition.knob == mode_knob for value in c.condition.values}
        modes = [m for m in children if m not in avoid[mode_knob]]
        mode = rng.choice(modes)
        child = children[mode]
        options = [v for v in space.knobs[child].values() or [] if v != space.knobs[child].default]
        land.mode_bonus = (mode_knob, mode, child, rng.choice(options), rng.uniform(0.4, 0.7))
        land.effects = mild([n for n in free if n != mode_knob][: rng.randint(6, 10)])
    constraint = f" ({land.goal.constraints[0]})" if land.goal.constraints else ""
    land.description = f"{kind} on {space_name}{constraint} (constructed, not measured)"
    return land


def family(count: int = DEFAULT_COUNT) -> list[Landscape]:
    return [instance(i) for i in range(count)]
