"""Randomised instances of the physical model: simulated pairs nobody tuned an engine on.

Each instance draws a simulated host pair from ranges of the model's parameters (NIC line
rate, CPU clock per governor and scenario, cores per socket, RTT, per-frame and per-byte
cost constants, queue-stall rates and lengths, the receiving application's work and socket
buffers, TCP's window overhead), a space (``linux-nic``, ``benson-40g`` or ``linux-tcp``), a
workload and a goal, so the optimum moves around the space from one instance to the next
(which binds: the wire, a core, the window, a queue). Figures are the model's
(``nictune.measure.sim``), with its own measurement noise (3 % CV, loss and counters noisier):
a model, not hardware.

Instances ``0 .. count-1`` are fixed by their index (``random.Random(INSTANCE_SEED + i)``);
the split was set before any engine was tuned: ``dev`` when ``i % 5`` is 0 or 2, else
``test`` (16 dev and 24 test of the default 40).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from bench.landscapes._base import Landscape, Split
from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES
from nictune.measure.sim.profiles import Costs, SimProfile, Stalls
from nictune.measure.testbeds import SimTestbed
from nictune.optimizer import Goal
from nictune.search_spaces import Configuration, load_space

INSTANCE_SEED = 28_000
DEFAULT_COUNT = 40
NOISE = 0.03

#: (space, workload, objective, constraints): the goals an instance draws from. ``KEEP``
#: in a constraint stands for "throughput at least 95 % of the default configuration's".
KEEP = "keep-default-throughput"
GOALS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("linux-nic", "tcp", "throughput", ()),
    ("linux-nic", "tcp-parallel", "throughput", ()),
    ("linux-nic", "udp", "throughput", ("loss<=0.1",)),
    ("linux-nic", "udp-jumbo", "throughput", ("loss<=1",)),
    ("linux-nic", "tcp", "cpu", (KEEP,)),
    ("linux-nic", "udp", "interrupts", (KEEP,)),
    ("benson-40g", "tcp", "throughput", ()),
    ("benson-40g", "udp", "throughput", ("loss<=0.1",)),
    ("benson-40g", "tcp-parallel", "throughput", ()),
    ("benson-40g", "udp-jumbo", "throughput", ("loss<=0.1",)),
    ("linux-tcp", "tcp", "throughput", ()),
    ("linux-tcp", "tcp-parallel", "throughput", ()),
]


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return float(low * (high / low) ** rng.random())


def random_profile(rng: random.Random, name: str) -> SimProfile:
    """A simulated pair drawn from ranges around the calibrated ones (every field a model
    parameter; the ranges span the seed papers' hosts and a decade of hardware)."""
    base = PROFILES["sim:benson-40g"]
    perf = rng.uniform(2.0, 3.6)
    ondemand = perf * rng.uniform(0.9, 1.12)   # turbo headroom or a slow ramp-up
    busy = perf * rng.uniform(0.8, 0.97)
    costs = Costs(**{f.name: getattr(Costs(), f.name) * _log_uniform(rng, 0.7, 1.45)
                     for f in dataclasses.fields(Costs)})
    stalls = dataclasses.replace(
        Stalls(),
        ring_duty=rng.uniform(0.5, 0.98),
        ring_tau=_log_uniform(rng, 0.002, 0.008),
        backlog_nu=_log_uniform(rng, 0.5, 5.0),
        backlog_tau=_log_uniform(rng, 0.0008, 0.005),
        qdisc_nu=_log_uniform(rng, 0.5, 5.0),
        qdisc_tau=_log_uniform(rng, 0.004, 0.03),
        socket_nu=_log_uniform(rng, 1.0, 10.0),
        socket_tau=_log_uniform(rng, 0.001, 0.01),
        rto_s=rng.choice((0.2, 0.2, 0.05)),
    )
    return dataclasses.replace(
        base,
        name=name,
        description="randomised simulated pair (bench/landscapes/sim_random.py): a model, not hardware",
        line_gbps=rng.choice((10.0, 25.0, 40.0, 50.0, 100.0)),
        cores_per_socket=rng.choice((4, 6, 8, 12, 16, 24)),
        clocks_ghz={("idle", "performance"): perf, ("idle", "ondemand"): ondemand,
                    ("busy", "performance"): busy, ("busy", "ondemand"): busy * rng.uniform(0.85, 1.0)},
        rtt_us=_log_uniform(rng, 10.0, 400.0),
        costs=costs,
        stalls=stalls,
        cost_scale=rng.uniform(0.6, 1.6),
        app_cycles_per_byte=0.0 if rng.random() < 0.6 else rng.uniform(0.3, 4.0),
        app_read_bytes=rng.choice((16384, 65536, 131072)),
        app_sockbuf=None if rng.random() < 0.7 else rng.choice((4, 16, 24)) * 1024 * 1024,
        adv_win_scale=rng.choice((1, 1, 2)),
    )


@dataclasses.dataclass
class SimLandscape(Landscape):
    """A randomised simulated pair with one workload and goal."""

    profile: SimProfile | None = None
    workload_name: str = "tcp"
    noise: float = NOISE
    counters: bool = True

    def __post_init__(self) -> None:
        assert self.profile is not None
        self.bed = SimTestbed(self.profile, self.noise)
        self.workload = get_workload(self.workload_name)

    def _clean(self, config: Configuration) -> dict[str, float]:
        return self.bed.clean(self.space.settings(config), self.workload)

    def _sample(self, config: Configuration, rng: random.Random) -> dict[str, float]:
        result = self.bed.measure(self.space.settings(config), self.workload, 1, rng.getrandbits(48))
        return result.samples[0].metrics

    def _identity(self) -> Any:
        return [repr(self.profile), self.workload.key(), self.noise]


def instance(i: int) -> SimLandscape:
    """Instance ``i`` of the family (the same ``i`` always gives the same landscape)."""
    rng = random.Random(INSTANCE_SEED + i)
    name = f"sim:r{i:02d}"
    profile = random_profile(rng, name)
    space_name, workload, objective, constraints = GOALS[rng.randrange(len(GOALS))]
    space = load_space(space_name)
    split: Split = "dev" if i % 5 in (0, 2) else "test"
    keep = KEEP in constraints
    goal = Goal.from_names([objective], [c for c in constraints if c != KEEP])
    land = SimLandscape(name=name, family="sim", split=split, space=space, goal=goal, profile=profile,
                        workload_name=workload)
    if keep:
        base = land.clean(space.default())["throughput_gbps"]
        goal = Goal.from_names([objective], [f"throughput>={0.95 * base:.6g}"])
        land.goal = goal
    land.description = (f"{space_name}, {workload}, {objective}"
                        + (f" ({', '.join(str(c) for c in land.goal.constraints)})" if land.goal.constraints else "")
                        + f"; {profile.line_gbps:g} GbE, {profile.clocks_ghz[('idle', 'performance')]:.2f} GHz, "
                          f"RTT {profile.rtt_us:.0f} us")
    return land


def family(count: int = DEFAULT_COUNT) -> list[Landscape]:
    return [instance(i) for i in range(count)]
