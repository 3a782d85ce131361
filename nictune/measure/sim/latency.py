"""Round-trip latency of a small message on the simulated pair: a model, not a measurement.

The request/response part of a workload (sockperf, :class:`~nictune.measure._base.LatencyProbe`)
runs after the throughput part, on an otherwise quiet pair. Both ends carry the same
settings, so a round trip is two one-way trips, each of them

1. **fixed**: ``hw_us`` (both NICs' DMA and PCIe, the switch, the cable), the message on the
   wire, the send path (``tx_call + tx_byte * size`` cycles) and the receive path
   (``k (drv + proto) + sys_udp + copy * size``; ``proto`` is UDP's or TCP's segment-and-ACK
   work), against the core's clock;
2. **delivery**: a reader blocked in ``recvfrom()`` is woken by the interrupt (``k irq + wake``
   cycles). A reader that spins (``net.core.busy_read``) takes the frame off the ring itself
   (``poll_us``) when the next message comes within its spin; otherwise it sleeps and is
   woken as above. PF_RING's active wait spins, passive wait is woken (``wake`` of PF_RING);
3. **moderation**: the NIC holds a frame until ``rx-usecs`` have passed or ``rx-frames`` have
   arrived (``mlx4``/``mlx5`` semantics: the timer starts at the first frame). A lone message
   (ping-pong: one in flight) waits the whole ``rx-usecs``: a timer of T adds 2 T to the
   round trip, a watermark of N > 1 frames its 512 us timeout twice. Messages that come
   closer together than the window share it, and wait between 0 and the window. Adaptive
   moderation picks ``rx-usecs`` from the packet rate: ``adaptive_idle_us`` at low rates,
   rising linearly from ``adaptive_rate_low`` to ``adaptive_high_us`` at
   ``adaptive_rate_high`` frames/s. Per-frame interrupts hold nothing. NAPI deferral
   (``napi_defer_hard_irqs`` and ``gro_flush_timeout`` both set) keeps the interrupt masked
   for ``napi_defer x gro_flush`` after a poll; a message in that window waits for the
   timer's poll, between 0 and ``gro_flush_timeout``, and no interrupt is taken. Busy
   polling bypasses the NIC's moderation;
4. **queueing** (``under-load`` only, at the end that receives the requests): messages at
   ``rate_mps`` against the per-message service time ``s`` of the busiest receiving core
   (interrupt and wake-up cost shared by the messages of one batch) wait as in an M/D/1 queue,
   ``rho s / (2 (1 - rho))`` on average; from ``rho`` = 1 (the rate at which the CPU becomes the
   bottleneck, reported as ``latency_cpu_limit_mps``) the queue in front of the slower stage
   (the socket buffer, or the rx ring when the softirq is the slower) is full, and a message
   waits for all of it to drain. sockperf replies to one message in :data:`REPLY_EVERY`;
5. **power**: on an idle host with the ondemand governor each round trip pays C-state exits
   (:data:`CSTATE_EXIT_S`, the TCP model's term);
6. **spread**: an exponential jitter of mean ``jitter_us`` and, for a ``hiccup_share`` of the
   round trips, a delay of mean ``hiccup_us`` (timer ticks, other softirq work).

The percentiles are those of :data:`SAMPLES` round trips drawn with fixed random numbers
(common to every evaluation), so the figures are deterministic and continuous in the
settings. Calibration: README, "Latency calibration"; ``tests/measure/test_sim_latency.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from nictune.measure._base import LatencyProbe, Workload

if TYPE_CHECKING:
    from nictune.measure.sim.profiles import Host, SimProfile

#: Round trips drawn for the percentiles (p99.9 rests on the largest 20).
SAMPLES = 20_000
#: sockperf ``under-load``: the server replies to one message in this many (``--reply-every``).
REPLY_EVERY = 100
#: C-state exits of an idle host under the ondemand governor, per round trip.
CSTATE_EXIT_S = 4e-6
#: The moderation timeout of a frame-count (watermark) setting without its own timer.
WATERMARK_TIMEOUT_US = 512.0
#: Frames an interrupt can cover (the NAPI weight).
BATCH_MAX = 64
_HEADERS = {"udp": 28, "tcp": 52}
_ETH_OVERHEAD = 38


@dataclass(frozen=True)
class Context:
    """What the throughput model knows that the latency model needs.

    Attributes:
        hz: clock of the receiving cores.
        irq_scale: multiplier on per-frame and interrupt cycles (driver, IRQ placement).
        shared: probability that the application shares the IRQ core.
        idle_ondemand: an idle host under the ondemand governor (C-state exits).
    """

    hz: float
    irq_scale: float
    shared: float
    idle_ondemand: bool


@dataclass(frozen=True)
class _End:
    """One receiving end of the probe: how often messages come and how they are delivered."""

    gap_s: float       # time between the messages it receives (the spin and NAPI windows)
    batch_gap_s: float  # spacing of the frames that can share one moderation window (inf: alone)


@lru_cache(maxsize=1)
def _uniforms() -> np.ndarray:
    return np.random.default_rng(20261130).random((7, SAMPLES))


def round_trip(profile: SimProfile, h: Host, wl: Workload, ctx: Context) -> tuple[dict[str, float], dict[str, float]]:
    """The latency metrics of ``wl``'s probe (round trips, microseconds) and a breakdown."""
    probe = wl.latency
    assert probe is not None
    terms, c = profile.latency, profile.costs
    k, hz = ctx.irq_scale, ctx.hz
    size = probe.msg_size
    proto = c.tcp if probe.protocol == "tcp" else c.udp
    wire_s = (size + _HEADERS[probe.protocol] + 14 + _ETH_OVERHEAD) * 8 / (profile.line_gbps * 1e9)
    tx_cycles = c.tx_call + c.tx_byte * size
    rx_cycles = k * (c.drv + proto) + c.sys_udp + c.copy * size
    fixed_s = terms.hw_us * 1e-6 + wire_s + (tx_cycles + rx_cycles) / hz
    spin_us, wake_cycles, irq_cycles = _delivery(profile, h)
    woken_s = (k * irq_cycles + wake_cycles) / hz
    polled_s = terms.poll_us * 1e-6

    # Each end: the server receives the requests, the client the replies.
    if probe.mode == "ping-pong":
        estimate = 2 * (fixed_s + (polled_s if spin_us > 0 else woken_s))
        ends = [_End(estimate, math.inf), _End(estimate, math.inf)]
    else:
        rate = float(_rate(probe))
        ends = [_End(1 / rate, 1 / rate), _End(REPLY_EVERY / rate, REPLY_EVERY / rate)]

    u = _uniforms()
    total = np.full(SAMPLES, 2 * fixed_s)
    detail: dict[str, float] = {"latency_fixed_us": 2e6 * fixed_s}
    batch = 1.0
    for i, end in enumerate(ends):
        spins = spin_us > 0 and end.gap_s * 1e6 <= spin_us
        if spins:
            total += polled_s
            continue
        lo, hi, batch_i, deferred = _hold(profile, h, end)
        total += lo * 1e-6 + (hi - lo) * 1e-6 * u[i]
        total += (wake_cycles if deferred else k * irq_cycles + wake_cycles) / hz
        if i == 0:
            batch = batch_i
            detail["latency_hold_us"] = hi
    if ctx.idle_ondemand:
        total += CSTATE_EXIT_S

    if probe.mode == "under-load":
        spins = spin_us > 0 and ends[0].gap_s * 1e6 <= spin_us
        wait = _queue(profile, h, probe, ctx, batch, spins, detail)
        total += wait(u[2], u[3])
    total += -terms.jitter_us * 1e-6 * np.log1p(-u[4])
    total += np.where(u[5] < terms.hiccup_share, -terms.hiccup_us * 1e-6 * np.log1p(-u[6]), 0.0)

    us = total * 1e6
    p50, p99, p999 = (float(v) for v in np.quantile(us, [0.5, 0.99, 0.999]))
    metrics = {"latency_p50_us": p50, "latency_p99_us": p99, "latency_p999_us": p999,
               "latency_mean_us": float(us.mean())}
    return metrics, detail


def _rate(probe: LatencyProbe) -> int:
    if not probe.rate_mps or probe.rate_mps <= 0:
        raise ValueError("an under-load latency probe needs rate_mps")  # Workload validation refuses it first
    return probe.rate_mps


def _delivery(profile: SimProfile, h: Host) -> tuple[float, float, float]:
    """``(spin_us, wake_cycles, irq_cycles)``: how long a reader spins before it sleeps
    (0: it never spins, inf: it always does), and what waking it costs."""
    c = profile.costs
    if profile.nics:
        mode = h.pf.get(profile.nics[0].name, ("passive", 500, 128))[0]
        # PF_RING: active wait spins on the ring; passive and watermark block in poll().
        return (math.inf if mode == "active" else 0.0), c.wake, 0.0
    return float(h.busy_poll_us), profile.latency.wake, c.irq


def _moderation(profile: SimProfile, h: Host, rate: float) -> tuple[float, float]:
    """``(rx_usecs, rx_frames)`` the NIC applies at ``rate`` frames/s (frames inf: no count)."""
    t = profile.latency
    if profile.nics:
        mode, poll_ms, mark = h.pf.get(profile.nics[0].name, ("passive", 500, 128))
        # Passive wait wakes for the first packet; watermark for ``mark`` or the poll timeout.
        return (poll_ms * 1000.0, float(mark)) if mode == "watermark" else (0.0, 1.0)
    if h.adaptive:
        rise = min(1.0, max(0.0, (rate - t.adaptive_rate_low) / (t.adaptive_rate_high - t.adaptive_rate_low)))
        return t.adaptive_idle_us + rise * (t.adaptive_high_us - t.adaptive_idle_us), math.inf
    frames = float(h.rx_frames) if h.rx_frames > 0 else math.inf
    if h.rx_usecs <= 0:
        return (0.0, 1.0) if frames <= 1 else (WATERMARK_TIMEOUT_US, frames)
    return float(h.rx_usecs), frames


def _hold(profile: SimProfile, h: Host, end: _End) -> tuple[float, float, float, bool]:
    """How long the receive side holds a message before the reader hears of it:
    ``(lowest_us, highest_us, messages_per_interrupt, deferred)``; the hold is uniform between
    the two bounds, ``deferred`` when NAPI deferral took the place of the interrupt."""
    rate = 0.0 if math.isinf(end.batch_gap_s) else 1.0 / end.batch_gap_s
    usecs, frames = _moderation(profile, h, rate)
    window = 0.0 if frames <= 1 else usecs
    gap_us = end.batch_gap_s * 1e6
    if frames > 1 and not math.isinf(gap_us):
        window = min(window, (frames - 1) * gap_us)
    if math.isinf(gap_us) or gap_us >= window:
        lo, batch = window, 1.0
    else:
        lo, batch = window - math.floor(window / gap_us) * gap_us, min(float(BATCH_MAX), 1 + window / gap_us)
    hi = window
    flush_us = h.gro_flush_ns / 1000.0
    deferred = h.napi_defer > 0 and flush_us > 0 and end.gap_s * 1e6 <= h.napi_defer * flush_us
    if deferred:
        # The IRQ stays masked: the next message waits for the deferral timer's poll.
        hi += flush_us
        if not math.isinf(gap_us) and gap_us < flush_us:
            batch = max(batch, min(float(BATCH_MAX), flush_us / gap_us))
    return lo, hi, batch, deferred


def _queue(profile: SimProfile, h: Host, probe: LatencyProbe, ctx: Context, batch: float, spins: bool,
           detail: dict[str, float]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The server end's queueing wait at the probe's rate, as a function of two uniforms."""
    c, k, hz = profile.costs, ctx.irq_scale, ctx.hz
    proto = c.tcp if probe.protocol == "tcp" else c.udp
    rate = float(_rate(probe))
    softirq = k * (c.drv + proto) + (0.0 if spins else k * c.irq / batch)
    app = (c.sys_udp + c.copy * probe.msg_size + (0.0 if spins else profile.latency.wake / batch)
           + (c.tx_call + c.tx_byte * probe.msg_size) / REPLY_EVERY)
    shared = 1.0 if spins else ctx.shared
    cycles = shared * (softirq + app) + (1 - shared) * max(softirq, app)
    service_s = cycles / hz
    rho = rate * service_s
    truesize = min(h.mtu, probe.msg_size + _HEADERS[probe.protocol]) + 576
    queue = h.rx_ring if (softirq > app and shared < 0.5) else 2 * h.rmem_default / truesize
    full_s = queue * service_s
    detail["latency_cpu_limit_mps"] = 1 / service_s
    detail["latency_load"] = rho
    if rho >= 1.0:
        return lambda u1, u2: np.full_like(u1, full_s)
    mean_s = min(rho * service_s / (2 * (1 - rho)), full_s)
    # M/D/1: a message finds a queue with probability rho; the wait then is about exponential.
    return lambda u1, u2: np.where(u1 < rho, np.minimum(-mean_s / rho * np.log1p(-u2), full_s), 0.0)
