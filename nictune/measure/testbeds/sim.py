"""The simulated testbed (``sim:PROFILE``): the model of :mod:`nictune.measure.sim.model` plus
measurement noise."""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from nictune.errors import InvalidInputError
from nictune.measure._base import Sample, Testbed, TrialResult, Workload
from nictune.measure.appliers import APPLIERS, validate_settings
from nictune.measure.sim.fidelity import noise_factor, rate_factor
from nictune.measure.sim.model import evaluate, modelled_keys
from nictune.measure.sim.profiles import MODEL_VERSION, PROFILES, SimProfile
from nictune.measure.testbeds._base import register_testbed
from nictune.search_spaces import Setting
from nictune.search_spaces.space import SearchSpace

if TYPE_CHECKING:
    from nictune.measure.trial.dryrun import DryRun

#: Default coefficient of variation of simulated measurements.
DEFAULT_NOISE = 0.03
#: Drop counters: whole packets, as noisy as retransmits.
DROP_METRICS = ("qdisc_drops", "backlog_drops", "ring_drops", "socket_drops")


class SimTestbed(Testbed):
    """A simulated sender/receiver pair. Its figures come from a model, not from hardware.

    Args:
        profile: the simulated pair.
        noise: coefficient of variation of throughput between repeats (0 = noise-free).
    """

    kind = "sim"
    simulated = True

    def __init__(self, profile: SimProfile, noise: float = DEFAULT_NOISE):
        if not 0 <= noise <= 0.5:
            raise InvalidInputError(
                f"noise must be between 0 and 0.5 (a coefficient of variation), got {noise}",
                field="noise", allowed="0 <= noise <= 0.5",
            )
        self.profile = profile
        self.noise = noise
        self.name = profile.name
        if profile.forward_cores:
            cores = profile.forward_cores
            self.notices = (f"{profile.name} models L3 forwarding of small frames on {cores} cores, whatever the "
                            "workload's protocol (a TCP workload's frames are 64 bytes): loss_pct is the share of "
                            f"offered frames the cores drop, and cpu_rx_pct counts all {cores} cores "
                            f"({100 * cores} = every one busy)",)

    def fingerprint(self) -> dict[str, str]:
        return {
            "kind": "sim",
            "profile": self.profile.name,
            "model_version": MODEL_VERSION,
            "noise_cv": f"{self.noise:g}",
        }

    def default_space(self) -> str:
        return self.profile.space

    def measure(
        self, settings: list[Setting], workload: Workload, repeats: int, seed: int
    ) -> TrialResult:
        check_modelled(workload)
        # The values a real pair's appliers would refuse are refused here too (a model has no
        # host to protect, but a job that runs on it should run on hosts as well).
        validate_settings([s for s in settings if s.family in APPLIERS])
        result = evaluate(self.profile, settings, workload)
        clean = _at_duration(result.metrics, workload)
        cv = self.noise * noise_factor(workload.duration_s)
        # Noise never lets the receiver get more than the wire (TCP) or the sender (UDP) carried.
        ceiling = result.detail.get("wire_gbps", result.detail.get("offered_gbps", self.profile.line_gbps))
        samples = []
        start = datetime.now(UTC)
        # A repeat runs the throughput part, then the latency part.
        seconds = (workload.duration_s if workload.throughput else 0.0) + (
            workload.latency.duration_s if workload.latency is not None else 0.0)
        for rep in range(repeats):
            rng = random.Random(_seed(seed, rep, settings, workload))
            metrics = counted(self._noisy(clean, rng, ceiling, cv) if cv > 0 else dict(clean),
                              workload.duration_s)
            begin = start + timedelta(seconds=rep * seconds)
            samples.append(Sample(metrics, begin, begin + timedelta(seconds=seconds),
                                  counters={"simulated": True}))
        notes = ["simulated testbed: figures come from a model, not from hardware", *workload_notes(workload)]
        return TrialResult(samples, snapshot={"simulated": True, "profile": self.profile.name},
                           notes=notes)

    def dry_run(
        self, trials: Sequence[tuple[str, list[Setting]]], workload: Workload, repeats: int
    ) -> DryRun:
        """A model runs nothing anywhere: each trial lists the settings the model would be
        given, each marked with whether the model has a term for it."""
        from nictune.measure.trial.dryrun import DryRun, TrialPlan

        check_modelled(workload)
        known = modelled_keys(self.profile)
        run = DryRun(self.name, self.kind, True, notes=[
            f"{self.name} is a simulated testbed, a model: nothing runs on any host, no setting is read or "
            "changed and no benchmark starts; its figures would come from the model, not from hardware"])
        for label, settings in trials:
            rows = [{"family": s.family.value, "target": s.target, "index": s.index, "device": s.device,
                     "value": list(s.value) if isinstance(s.value, tuple) else s.value,
                     "modelled": (s.family.value, s.target, s.device) in known} for s in settings]
            run.trials.append(TrialPlan(label, rows, {}, [], repeats))
        return run

    def ignored_knobs(self, space: SearchSpace) -> list[str]:
        """Knobs of ``space`` none of whose settings the model reads (e.g. ``tx_ring``, or a
        ``veth`` space's CPU pinning): the model's figures are the same whatever their values."""
        known = modelled_keys(self.profile)
        out = []
        for name, knob in space.knobs.items():
            values = knob.values() or [knob.default]
            keys = {(s.family.value, s.target, s.device) for v in values for s in knob.to_settings(v)}
            if not keys & known:
                out.append(name)
        return out

    def clean(self, settings: list[Setting], workload: Workload) -> dict[str, float]:
        """The noise-free metrics: the model's values before noise.

        Away from the ceiling they are also what an infinite number of repeats would average
        to. A flow at the wire rate (TCP) or at its offered rate (UDP) cannot measure above
        it, so noise there only lowers a sample, and the repeats average slightly below
        these values (about 1.2 % below with 3 % noise). A run shorter than 10 s reads
        lower (:mod:`nictune.measure.sim.fidelity`).
        """
        return _at_duration(evaluate(self.profile, settings, workload).metrics, workload)

    @staticmethod
    def _noisy(clean: dict[str, float], rng: random.Random, ceiling: float, cv: float) -> dict[str, float]:
        sigma = math.sqrt(math.log(1 + cv * cv))
        m = dict(clean)
        if "latency_p50_us" in clean:
            m.update(_noisy_latency(clean, rng, sigma))
        if "throughput_gbps" not in clean:
            return m  # a latency-only workload
        factor = math.exp(rng.gauss(-sigma * sigma / 2, sigma))
        m["throughput_gbps"] = min(clean["throughput_gbps"] * factor, max(ceiling, clean["throughput_gbps"]))
        scale = m["throughput_gbps"] / clean["throughput_gbps"] if clean["throughput_gbps"] else 1.0
        m["packet_rate_mpps"] = clean["packet_rate_mpps"] * scale
        # Loss is noisier than throughput (rare events), and a tiny floor of noise shows up
        # even when the model says none.
        if clean["loss_pct"] > 0:
            m["loss_pct"] = min(100.0, clean["loss_pct"] * math.exp(rng.gauss(0, 2 * sigma)))
        m["retransmits"] = clean["retransmits"] * math.exp(rng.gauss(0, 2 * sigma))
        m["interrupts_per_s"] = max(0.0, clean["interrupts_per_s"] * (1 + rng.gauss(0, cv / 2)))
        gbps = max(m["throughput_gbps"], 1e-9)
        m["interrupts_per_gb"] = m["interrupts_per_s"] / (gbps / 8)
        m["cpu_rx_pct"] = max(0.0, clean["cpu_rx_pct"] * (1 + rng.gauss(0, cv / 2)))
        m["cpu_tx_pct"] = max(0.0, clean["cpu_tx_pct"] * (1 + rng.gauss(0, cv / 2)))
        for name in DROP_METRICS:  # rare events, like retransmits
            m[name] = clean[name] * math.exp(rng.gauss(0, 2 * sigma))
        for name in ("rx_core_busy_pct", "tx_core_busy_pct"):
            m[name] = min(100.0, max(0.0, clean[name] * (1 + rng.gauss(0, cv / 2))))
        return m


def _noisy_latency(clean: dict[str, float], rng: random.Random, sigma: float) -> dict[str, float]:
    """The round trips of one repeat: the median and mean move together a little, the tail
    (fewer samples behind it) more; the percentiles stay ordered."""
    body = math.exp(rng.gauss(-sigma * sigma / 8, sigma / 2))
    p50 = clean["latency_p50_us"] * body
    p99 = max(p50, clean["latency_p99_us"] * math.exp(rng.gauss(0, sigma)))
    p999 = max(p99, clean["latency_p999_us"] * math.exp(rng.gauss(0, 2 * sigma)))
    return {"latency_p50_us": p50, "latency_p99_us": p99, "latency_p999_us": p999,
            "latency_mean_us": clean["latency_mean_us"] * body}


def check_modelled(workload: Workload) -> None:
    """Refuse what the model cannot stand for: two directions at once (``bidir``).

    The model's two hosts are symmetric (the same profile on both ends), so a ``reverse``
    workload, the receiver sending, is modelled as the forward one.

    Raises:
        InvalidInputError: naming ``bidir``.
    """
    if workload.bidir:
        raise InvalidInputError(
            f"workload {workload.name!r}: a simulated testbed models one direction at a time; it has no model of "
            "both ends sending at once (bidir)", field="bidir",
            allowed="bidir off on a simulated testbed (reverse is modelled as forward: its hosts are symmetric)")


def workload_notes(workload: Workload) -> list[str]:
    """What the user should know about how the model reads ``workload``."""
    notes = []
    if workload.reverse:
        notes.append("the model's two hosts are symmetric: a reverse run (-R) is modelled as the forward one")
    if workload.protocol == "tcp" and workload.length is not None and workload.throughput:
        notes.append("the model has no term for the TCP write length (-l): it changes nothing in its figures")
    return notes


def _at_duration(metrics: dict[str, float], workload: Workload) -> dict[str, float]:
    """The model's figures as a run of ``workload.duration_s`` measures them (a short run
    still sees part of the ramp after an apply: :mod:`nictune.measure.sim.fidelity`).
    Round trips do not ramp: a latency-only workload reads as the model says."""
    factor = rate_factor(workload.protocol, workload.duration_s, workload.omit_s)
    if factor == 1.0 or not workload.throughput:
        return metrics
    m = dict(metrics)
    for name in ("throughput_gbps", "packet_rate_mpps"):
        m[name] = metrics[name] * factor
    if m["throughput_gbps"] > 0:
        m["interrupts_per_gb"] = m["interrupts_per_s"] / (m["throughput_gbps"] / 8)
    return m


def counted(metrics: dict[str, float], duration_s: float) -> dict[str, float]:
    """``metrics`` as a benchmark counts them: whole retransmitted segments, and a loss made
    of whole packets of the run's (so a model loss of 1e-40 % reads 0, as iperf3 would say)."""
    m = dict(metrics)
    if "throughput_gbps" not in m:
        return m  # round trips only: nothing is counted in whole packets
    m["retransmits"] = float(round(m["retransmits"]))
    for name in DROP_METRICS:
        m[name] = float(round(m[name]))
    packets = m["packet_rate_mpps"] * 1e6 * duration_s
    if packets >= 1.0:
        m["loss_pct"] = 100.0 * round(m["loss_pct"] / 100.0 * packets) / packets
    return m


def _seed(seed: int, rep: int, settings: list[Setting], workload: Workload) -> int:
    text = repr((seed, rep, sorted((*s.key, repr(s.value)) for s in settings), workload.key()))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@register_testbed("sim", matches=lambda name: name in PROFILES, names=lambda: list(PROFILES))
def open_sim(name: str, noise: float | None) -> SimTestbed:
    """``sim:PROFILE``: the model of a profile of :data:`~nictune.measure.sim.PROFILES`."""
    return SimTestbed(PROFILES[name], DEFAULT_NOISE if noise is None else noise)
