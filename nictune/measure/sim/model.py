"""The simulated receive path: a noise-free model of one benchmark on a simulated pair.

This is a model, not a measurement. It follows a frame from the sender to the receiving
application and asks, at each stage, how much work it costs and how much of it a core or a
queue can take:

1. Wire: frames of ``MTU + 38`` bytes on the wire (preamble, header, FCS, gap); payload
   ``MTU - 52`` for TCP with timestamps (``- 40`` without), ``MTU - 28`` for UDP. UDP
   datagrams larger than ``MTU - 28`` are cut into IP fragments.
2. Interrupts: frames per interrupt ``B`` from the interrupt mode: 1 per frame, ``rate x
   rx-usecs`` (timer), ``rx-frames`` with a timeout (watermark), about 64 us at high rates
   (adaptive), none at all for busy polling; at most 64 (the NAPI weight).
3. CPU: per-frame cycles ``drv + gro + tcp/A + irq/B`` (A = GRO aggregation) on the core
   that takes the NIC's IRQ, and per-byte copy plus per-call system-call cycles on the
   application's core, against each core's clock (governor and idle/busy scenario set it).
   Placement matters: a NUMA-remote or migrating application copies at twice the cost
   (kappa = 2); sharing the IRQ core adds the two loads on one core. Per-frame hardware
   interrupts without moderation preempt everything else: past the maximum loss-free
   receive rate the delivered rate of an unresponsive (UDP) flow falls as the offered rate
   rises (receive livelock, Mogul and Ramakrishnan).
4. TCP: the smallest of line rate, receiver CPU, sender CPU and window / RTT (the window
   comes from the socket buffers), then time lost to drops: a tail drop of whole
   aggregates at the backlog or the qdisc costs a retransmission timeout, a single-frame
   ring drop only a fast recovery.
5. Queues: a queue of Q packets in front of a consumer that stalls ``nu`` times a second
   for an exponentially distributed time of mean ``tau`` loses ``nu tau exp(-Q/(rate tau))``
   of its input. UDP loses those datagrams (all fragments of a datagram survive or it is
   lost; drops come in bursts of a few frames).

Phenomenological terms (not derived from first principles, fitted to a seed's figure):
the ring stall duty of the IRQ core (Benson P8: ~50% UDP loss at 1024 descriptors needs a
consumer away about two thirds of the time at high load: ksoftirqd time-sharing, scaled
here with the IRQ core's load), the effective RTT and application cost of the Mishra
pair, and the interaction of the three ixgbe driver fixes (Intel's table).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from nictune.measure._base import Workload
from nictune.measure.sim import latency
from nictune.measure.sim.profiles import Host, Key, SimProfile
from nictune.search_spaces import Setting, SettingValue

ETH_OVERHEAD = 38      # preamble 8 + header 14 + FCS 4 + inter-frame gap 12
GSO_BYTES = 65536      # largest TSO/GSO/GRO aggregate
NAPI_WEIGHT = 64
SEGMENTS_PER_DROP = 6.0  # segments a TCP tail drop takes with it (whole GRO/TSO aggregates)


# --------------------------------------------------------------------------- settings
def resolve(defaults: Mapping[Key, SettingValue], settings: list[Setting]) -> dict[Key, SettingValue]:
    """Profile defaults overlaid with ``settings`` (multi-field sysctls merged field by field)."""
    eff = dict(defaults)
    for s in settings:
        k: Key = (s.family.value, s.target, s.device)
        if s.index is None:
            eff[k] = s.value
        else:
            old = eff.get(k, ())
            fields = list(old) if isinstance(old, tuple) else [0, 0, 0]
            while len(fields) <= s.index:
                fields.append(0)
            fields[s.index] = int(s.value)  # type: ignore[arg-type]
            eff[k] = tuple(fields)
    return eff


def host_from(eff: Mapping[Key, SettingValue]) -> Host:
    def g(family: str, target: str, device: str | None = None) -> SettingValue:
        return eff[(family, target, device)]

    def i(family: str, target: str) -> int:
        return int(g(family, target))  # type: ignore[arg-type]

    def b(family: str, target: str) -> bool:
        return bool(g(family, target))

    def field3(target: str) -> int:
        v = g("sysctl", target)
        return int(v[2]) if isinstance(v, tuple) else int(v)

    # PF_RING devices: those of the profile (a profile without PF_RING NICs has none, and
    # PF_RING settings from another space change nothing: Testbed.ignored_knobs names them).
    pf = {
        dev: (str(eff[("pf_ring", "wait_mode", dev)]), int(eff[("pf_ring", "poll_duration", dev)]),  # type: ignore[arg-type]
              int(eff[("pf_ring", "poll_watermark", dev)]))  # type: ignore[arg-type]
        for (fam, tgt, dev) in list(eff)
        if fam == "pf_ring" and tgt == "wait_mode" and dev is not None
        and ("pf_ring", "poll_duration", dev) in eff and ("pf_ring", "poll_watermark", dev) in eff
    }
    return Host(
        mtu=i("ip_link", "mtu"),
        txqueuelen=i("ip_link", "txqueuelen"),
        backlog=i("sysctl", "net.core.netdev_max_backlog"),
        rx_ring=i("ethtool_rings", "rx"),
        pause=b("ethtool_pause", "rx") and b("ethtool_pause", "tx"),
        adaptive=b("ethtool_coalesce", "adaptive-rx"),
        rx_usecs=i("ethtool_coalesce", "rx-usecs"),
        rx_frames=i("ethtool_coalesce", "rx-frames"),
        busy_poll_us=i("sysctl", "net.core.busy_read"),
        napi_defer=i("sysfs", "napi_defer_hard_irqs"),
        gro_flush_ns=i("sysfs", "gro_flush_timeout"),
        gro=b("ethtool_features", "gro"),
        lro=b("ethtool_features", "lro"),
        tso=b("ethtool_features", "tso") and b("ethtool_features", "sg"),
        gso=b("ethtool_features", "gso"),
        rx_csum=b("ethtool_features", "rx"),
        sg=b("ethtool_features", "sg"),
        rmem_max=i("sysctl", "net.core.rmem_max"),
        wmem_max=i("sysctl", "net.core.wmem_max"),
        rmem_default=i("sysctl", "net.core.rmem_default"),
        wmem_default=i("sysctl", "net.core.wmem_default"),
        tcp_rmem_max=field3("net.ipv4.tcp_rmem"),
        tcp_wmem_max=field3("net.ipv4.tcp_wmem"),
        window_scaling=b("sysctl", "net.ipv4.tcp_window_scaling"),
        sack=b("sysctl", "net.ipv4.tcp_sack"),
        timestamps=b("sysctl", "net.ipv4.tcp_timestamps"),
        qdisc=str(g("qdisc", "root")),
        irq_policy=str(g("irq_affinity", "policy")),
        placement=str(g("placement", "receiver")),
        governor=str(g("cpu_governor", "scaling_governor")),
        sys_tune=b("module_param", "mlx4_core.enable_sys_tune"),
        high_rate_steer=b("module_param", "mlx4_core.high_rate_steer"),
        numa_buffers=b("platform", "numa_local_buffers"),
        aligned=b("platform", "buffer_alignment"),
        no_shared=b("platform", "no_shared_refs"),
        pf=pf,
    )


class _Reads(dict[Key, SettingValue]):
    """The profile's defaults, noting which of them :func:`host_from` reads."""

    def __init__(self, values: Mapping[Key, SettingValue]):
        super().__init__(values)
        self.read: set[Key] = set()

    def __getitem__(self, key: Key) -> SettingValue:
        self.read.add(key)
        return super().__getitem__(key)


def modelled_keys(profile: SimProfile) -> frozenset[Key]:
    """The settings (family, target, device) the model of ``profile`` has a term for; a
    setting outside them changes nothing in its figures."""
    reads = _Reads(profile.defaults)
    host_from(reads)
    return frozenset(reads.read)


# ---------------------------------------------------------------------- helpers
def _upper_gamma_q(k: int, y: float) -> float:
    """Regularised upper incomplete gamma Q(k, y): P(Erlang(k, 1) > y) (SciPy's ``gammaincc``;
    imported here, not at module level, so importing the model stays light)."""
    from scipy.special import gammaincc

    return float(gammaincc(k, y))


def overflow(nu: float, tau: float, queue: float, rate: float, shape: int = 1) -> float:
    """Fraction of a queue's input lost to consumer stalls (see module docstring).

    Stalls come ``nu`` times a second and last an Erlang(``shape``)-distributed time of mean
    ``tau`` (shape 1: exponential). A stall of length T loses ``rate * T - queue`` packets
    when that is positive.
    """
    if rate <= 0 or nu <= 0 or tau <= 0:
        return 0.0
    r = shape / tau
    x = queue / rate
    excess = sum(_upper_gamma_q(n + 1, r * x) for n in range(shape)) / r
    return min(1.0, nu * excess)


def overflow_events(nu: float, tau: float, queue: float, rate: float, shape: int = 1) -> float:
    """Overflow events per second of the same queue (stalls longer than Q / rate)."""
    if rate <= 0:
        return 0.0
    return nu * _upper_gamma_q(shape, shape / tau * queue / rate)


@dataclass
class Coalescing:
    frames_per_irq: float
    latency_s: float
    per_frame_irq: bool  # hard IRQ per frame, no moderation: livelock-prone


def coalescing(h: Host, rate: float) -> Coalescing:
    """Frames per interrupt and the delay it adds, at ``rate`` frames/s."""
    rate = max(rate, 1.0)
    if h.busy_poll_us > 0:
        # The socket spins on the ring; interrupts only when it sleeps between reads.
        return Coalescing(NAPI_WEIGHT, 2e-6, False)
    if h.adaptive:
        usecs = 64e-6 if rate > 100_000 else 64e-6 * rate / 100_000
        b = min(NAPI_WEIGHT, max(1.0, rate * usecs))
        return Coalescing(b, min(usecs, b / rate), False)
    usecs = h.rx_usecs * 1e-6
    frames = h.rx_frames if h.rx_frames > 0 else math.inf
    if usecs <= 0 and frames <= 1:
        b = 1.0
        if h.napi_defer > 0 or h.gro_flush_ns > 0:
            # NAPI keeps polling instead of re-arming the IRQ: moderation in software.
            b = min(NAPI_WEIGHT, 1.0 + rate * max(h.napi_defer * 5e-6, h.gro_flush_ns * 1e-9))
            return Coalescing(b, b / rate, False)
        return Coalescing(1.0, 0.0, True)
    b = min(frames, max(1.0, rate * usecs)) if usecs > 0 else min(frames, NAPI_WEIGHT)
    if h.gro_flush_ns > 0:
        b = max(b, rate * h.gro_flush_ns * 1e-9)
    b = min(NAPI_WEIGHT, max(1.0, b))
    return Coalescing(b, min(usecs if usecs > 0 else 512e-6, b / rate), False)


@dataclass
class Placement:
    shared: bool      # application on the IRQ core
    kappa: float      # copy-cost multiplier of the application
    sys_scale: float  # system-call cost multiplier


def placements(h: Host, cores: int) -> list[tuple[float, Placement]]:
    """Where the application and the IRQ run, with probabilities."""
    if h.busy_poll_us > 0:
        return [(1.0, Placement(True, 1.0, 1.0))]
    if h.placement == "unpinned":
        # Wake-affine scheduling pulls the reader onto the IRQ core, and it migrates between
        # cores and sockets: a shared core and cache-cold, partly NUMA-remote copies.
        return [(1.0, Placement(True, 2.4, 1.5))]
    base = {
        "numa-local": Placement(False, 1.0, 1.0),
        "irq-core": Placement(True, 1.0, 1.0),
        "numa-remote": Placement(False, 2.0, 1.3),
    }.get(h.placement, Placement(False, 1.0, 1.0))
    if h.irq_policy in ("socket", "all") and not base.shared:
        # IRQs wander over the socket: now and then onto the application's core.
        p = 1.0 / cores
        return [(1.0 - p, base), (p, Placement(True, base.kappa, base.sys_scale))]
    return [(1.0, base)]


# ------------------------------------------------------------------------- model
@dataclass
class Result:
    """Noise-free metrics plus a breakdown used by tests and ``--explain``."""

    metrics: dict[str, float]
    detail: dict[str, float]


def evaluate(profile: SimProfile, settings: list[Setting], workload: Workload) -> Result:
    """The noise-free metrics of ``workload`` on ``profile`` with ``settings`` applied: those of
    its throughput part, then the round trips of its latency part (:mod:`.latency`), run after
    it on the quiet pair. A latency-only workload reports only the latency metrics."""
    h = host_from(resolve(profile.defaults, settings))
    result = Result({}, {})
    if workload.throughput:
        result = _throughput(profile, h, workload)
    if workload.latency is not None:
        ctx = latency.Context(
            hz=_clock(profile, h, workload), irq_scale=_irq_cost_scale(profile, h),
            shared=sum(prob for prob, pl in placements(h, profile.cores_per_socket) if pl.shared),
            idle_ondemand=workload.scenario == "idle" and h.governor == "ondemand")
        metrics, detail = latency.round_trip(profile, h, workload, ctx)
        result = Result({**result.metrics, **metrics}, {**result.detail, **detail})
    return result


def _throughput(profile: SimProfile, h: Host, workload: Workload) -> Result:
    if profile.nics:
        return _pf_ring(profile, h, workload)
    if profile.forward_cores:
        return _forwarding(profile, h, workload)
    if workload.protocol == "tcp":
        return _tcp(profile, h, workload)
    return _udp(profile, h, workload)


def _clock(profile: SimProfile, h: Host, workload: Workload) -> float:
    hz = profile.clock_hz(workload.scenario, h.governor)
    return hz * (1.01 if h.sys_tune else 1.0)


def _irq_cost_scale(profile: SimProfile, h: Host) -> float:
    scale = profile.cost_scale * (1.0 if h.high_rate_steer else 1.08)
    if h.irq_policy in ("socket", "all"):
        scale *= 1.15  # the IRQ core changes: cold caches for the driver and the flow
    return scale


def _tcp(profile: SimProfile, h: Host, wl: Workload) -> Result:
    c, st = profile.costs, profile.stalls
    hz = _clock(profile, h, wl)
    line = profile.line_gbps * 1e9
    hdr = 52 if h.timestamps else 40
    payload = h.mtu - hdr
    wire_goodput = line * payload / (h.mtu + ETH_OVERHEAD)
    streams = max(1, wl.streams)

    frame_rate_guess = wire_goodput / 8 / payload
    co = coalescing(h, frame_rate_guess / streams)
    agg = min(GSO_BYTES / payload, 45.0) if (h.gro or h.lro) else 1.0
    if h.lro:
        agg = min(agg * 1.0, 45.0)
    k = _irq_cost_scale(profile, h)
    per_frame = k * (c.drv + (c.gro if h.gro and not h.lro else 0.0) + c.tcp / agg)
    if not h.rx_csum:
        per_frame += c.csum * payload
    irq_per_frame = k * c.irq / co.frames_per_irq
    if not h.sack:
        per_frame *= 0.97  # no SACK blocks to build
    per_byte_app_base = c.sys_tcp / profile.app_read_bytes + profile.app_cycles_per_byte

    # Receiver CPU bound, over the placement mix.
    cpu_bound = 0.0
    detail_copy_share = 0.0
    for prob, pl in placements(h, profile.cores_per_socket):
        app_byte = pl.kappa * c.copy + pl.sys_scale * per_byte_app_base
        irq_byte = (per_frame + irq_per_frame) / payload
        # On a shared core the two loads add up; on two cores the slower one sets the pace.
        bound = hz / (app_byte + irq_byte) * 8 if pl.shared else min(hz / irq_byte, hz / app_byte) * 8
        # Streams spread over RSS queues and application threads up to the cores at hand.
        bound *= min(streams, profile.cores_per_socket / 2) if streams > 1 else 1.0
        cpu_bound += prob * bound
        detail_copy_share += prob * (pl.kappa * c.copy) / (app_byte + irq_byte)

    # Sender CPU: TSO/GSO send 64 KB at a time; without them every frame costs.
    seg = GSO_BYTES if (h.tso or h.gso) else payload
    tx_per_byte = c.tx_byte + c.tx_call / GSO_BYTES + (0 if h.tso else profile.cost_scale * c.tx_frame / payload)
    if not h.tso and h.gso:
        tx_per_byte += profile.cost_scale * 0.4 * c.tx_frame / payload
    tx_bound = hz / tx_per_byte * 8 * (min(streams, profile.cores_per_socket / 2) if streams > 1 else 1.0)

    # Window / RTT.
    if profile.app_sockbuf:
        rcvbuf = 2 * min(profile.app_sockbuf, h.rmem_max)
        sndbuf = 2 * min(profile.app_sockbuf, h.wmem_max)
    else:
        rcvbuf, sndbuf = h.tcp_rmem_max, h.tcp_wmem_max
    window = rcvbuf * (1 - 2.0 ** -profile.adv_win_scale)
    snd_window = sndbuf * 0.5
    if not h.window_scaling:
        window = min(window, 65535)
    rtt = profile.rtt_us * 1e-6 + co.latency_s
    if wl.scenario == "idle" and h.governor == "ondemand":
        rtt += latency.CSTATE_EXIT_S  # C-state exits on an idle host
    window_bound = min(window, snd_window) * 8 / rtt * streams

    # iperf3 -b paces each stream (TCP too): the offered rate, when there is one.
    paced = wl.bitrate_gbps * 1e9 * streams if wl.bitrate_gbps else math.inf
    base = min(wire_goodput, cpu_bound, tx_bound, window_bound, paced)
    limiter = {paced: "bitrate", wire_goodput: "wire", cpu_bound: "rx_cpu", tx_bound: "tx_cpu",
               window_bound: "window"}[base]

    # Time lost to drops.
    frame_rate = base / 8 / payload
    lost_time = 0.0
    bl_events = overflow_events(st.backlog_nu, st.backlog_tau, h.backlog, frame_rate)
    segments_rate = base / 8 / (seg if (h.tso or h.gso) else payload)
    qdisc_q = h.txqueuelen * (2.0 if h.qdisc == "fq" else 1.0)
    q_events = overflow_events(st.qdisc_nu, st.qdisc_tau, qdisc_q, segments_rate, st.qdisc_shape)
    lost_time += (bl_events + q_events) * st.rto_s
    inflight_frames = min(window, snd_window) / payload
    ring_events = 0.0
    if inflight_frames > h.rx_ring:
        duty = st.ring_duty * min(1.0, 0.5 + base / max(cpu_bound, 1.0))
        ring_events = overflow_events(duty / st.ring_tau, st.ring_tau, h.rx_ring, frame_rate,
                                      st.ring_shape)
        ring_events *= st.pause_relief if h.pause else 1.0
        lost_time += ring_events * st.recovery_s * (1.0 if h.sack else 2.0)
    throughput = base * max(0.05, 1.0 - lost_time)

    frames_per_s = throughput / 8 / payload
    drop_events = bl_events + q_events + ring_events
    retrans_per_s = drop_events * SEGMENTS_PER_DROP * (2.0 if not h.sack else 1.0)
    interrupts = frames_per_s / co.frames_per_irq * (0.0 if h.busy_poll_us > 0 else 1.0)
    # CPU on the receiver: IRQ core + application core.
    app_cycles = frames_per_s * payload * (c.copy + per_byte_app_base)
    irq_cycles = frames_per_s * (per_frame + irq_per_frame)
    cpu_rx = (app_cycles + irq_cycles) / hz * 100
    if h.busy_poll_us > 0:
        cpu_rx = max(cpu_rx, 100.0 * min(streams, profile.cores_per_socket))
    cpu_tx = throughput / 8 * tx_per_byte / hz * 100
    gbps = throughput / 1e9
    metrics = {
        "throughput_gbps": gbps,
        "packet_rate_mpps": frames_per_s / 1e6,
        "loss_pct": 100.0 * retrans_per_s / max(frames_per_s, 1.0),
        "retransmits": retrans_per_s * wl.duration_s,
        "interrupts_per_s": interrupts,
        "interrupts_per_gb": interrupts / max(gbps / 8, 1e-9),
        "cpu_rx_pct": cpu_rx,
        "cpu_tx_pct": cpu_tx,
        # Where the segments were dropped (each drop event ~6 segments), and how busy the
        # core that limits each end is: the throughput against the rate that saturates it.
        **_stage_metrics(wl, qdisc=q_events * SEGMENTS_PER_DROP, backlog=bl_events * SEGMENTS_PER_DROP,
                         ring=ring_events * SEGMENTS_PER_DROP, socket=0.0,
                         rx_busy=throughput / max(cpu_bound, 1.0), tx_busy=throughput / max(tx_bound, 1.0)),
    }
    detail = {
        "wire_gbps": wire_goodput / 1e9,
        "rx_cpu_gbps": cpu_bound / 1e9,
        "tx_cpu_gbps": tx_bound / 1e9,
        "window_gbps": window_bound / 1e9,
        "limiter_" + limiter: 1.0,
        "lost_time_fraction": lost_time,
        "copy_share": detail_copy_share,
        "frames_per_irq": co.frames_per_irq,
        "clock_ghz": hz / 1e9,
    }
    return Result(metrics, detail)


def _udp(profile: SimProfile, h: Host, wl: Workload) -> Result:
    c, st = profile.costs, profile.stalls
    hz = _clock(profile, h, wl)
    line = profile.line_gbps * 1e9
    length = wl.length or 1472
    frag_payload = (h.mtu - 20) // 8 * 8
    nfrag = max(1, math.ceil((length + 8) / frag_payload))
    wire_bytes = length + 8 + nfrag * (20 + ETH_OVERHEAD)
    wire_bytes = max(wire_bytes, nfrag * 84)  # minimum Ethernet frame on the wire

    # Offered datagram rate: senders, the wire, or the requested bitrate.
    tx_cost = c.tx_call + c.tx_byte * length + (nfrag - 1) * profile.cost_scale * c.tx_frame
    tx_rate = max(1, wl.streams) * hz / tx_cost
    wire_rate = line / 8 / wire_bytes
    offered = min(tx_rate, wire_rate)
    if wl.bitrate_gbps:
        offered = min(offered, wl.bitrate_gbps * 1e9 / 8 / length * max(1, wl.streams))
    offered = min(offered, wire_rate)

    # Sender qdisc (UDP has no TSO: one packet per fragment). Packets in the qdisc are charged
    # to the sending socket, so a send buffer smaller than the queue blocks the sender
    # before the queue can overflow.
    sndbuf = 2 * (min(profile.app_sockbuf, h.wmem_max) if profile.app_sockbuf else h.wmem_default)
    tx_truesize = nfrag * (min(h.mtu, length + 28) + 576)
    q_loss = 0.0
    if sndbuf / tx_truesize > h.txqueuelen * nfrag:
        q_loss = overflow(st.qdisc_nu, st.qdisc_tau, h.txqueuelen, offered * nfrag, st.qdisc_shape)
    frames_in = offered * nfrag * (1 - q_loss)

    co = coalescing(h, frames_in)
    k = _irq_cost_scale(profile, h)
    per_frame = k * (c.drv + c.udp + (c.reasm if nfrag > 1 else 0.0))
    if not h.rx_csum:
        per_frame += c.csum * min(length, frag_payload)
    app_per_dgram_base = c.sys_udp + profile.app_cycles_per_byte * length

    best = None
    for prob, pl in placements(h, profile.cores_per_socket):
        app_per_dgram = pl.sys_scale * app_per_dgram_base + pl.kappa * c.copy * length
        irq_hz = hz
        app_hz = hz
        if pl.shared:
            # One core for both: split it in proportion to the work each datagram needs.
            work_irq = nfrag * (per_frame + k * c.irq / co.frames_per_irq)
            share = work_irq / (work_irq + app_per_dgram)
            irq_hz, app_hz = hz * share, hz * (1 - share)
        # Stage 1: the IRQ core.
        if co.per_frame_irq:
            spare = max(0.0, irq_hz - frames_in * k * c.irq)
            cap_frames = spare / per_frame
        else:
            cap_frames = irq_hz / (per_frame + k * c.irq / co.frames_per_irq)
        p_over = max(0.0, 1.0 - cap_frames / frames_in) if frames_in > 0 else 0.0
        through1 = min(frames_in, cap_frames)
        load = through1 / max(cap_frames, 1.0)
        duty = st.ring_duty * min(1.0, load / 0.4) * (0.3 if h.busy_poll_us > 0 else 1.0)
        p_ring = overflow(duty / st.ring_tau, st.ring_tau, h.rx_ring, through1, st.ring_shape)
        if h.pause:
            p_ring *= st.pause_relief
        p_bl = overflow(st.backlog_nu, st.backlog_tau, h.backlog, through1)
        survive_frame = (1 - p_over) * (1 - p_ring) * (1 - p_bl)
        n_eff = 1 + (nfrag - 1) / st.burst_frames
        survive_dgram = survive_frame ** n_eff
        arriving = offered * (1 - q_loss) * survive_dgram
        # Stage 2: the socket and the application.
        app_cap = app_hz / app_per_dgram
        p_app = max(0.0, 1.0 - app_cap / arriving) if arriving > 0 else 0.0
        through2 = min(arriving, app_cap)
        rcvbuf = 2 * min(profile.app_sockbuf, h.rmem_max) if profile.app_sockbuf else 2 * h.rmem_default
        truesize = nfrag * (min(h.mtu, length + 28) + 576)
        p_sock = overflow(st.socket_nu, st.socket_tau, rcvbuf / truesize, through2)
        delivered = through2 * (1 - p_sock)
        cand = {
            "delivered": delivered,
            "p_over": p_over,
            "p_ring": p_ring,
            "p_app": p_app,
            "p_sock": p_sock,
            "app_cap": app_cap,
            "cap_frames": cap_frames,
            "load": load,
            # Frames the IRQ core cannot take wait on the ring until it overflows.
            "ring_rate": frames_in - through1 + p_ring * through1,
            "backlog_rate": p_bl * (1 - p_ring) * through1,
            # Datagrams the application cannot take wait in the socket until it overflows.
            "socket_rate": arriving - through2 + p_sock * through2,
            "rx_busy": max(load, through2 / max(app_cap, 1.0)),
        }
        if best is None:
            best = {kk: prob * v for kk, v in cand.items()}
        else:
            for kk, v in cand.items():
                best[kk] += prob * v
    assert best is not None
    delivered = best["delivered"]
    frames_out = delivered * nfrag
    throughput = delivered * length * 8
    processed_frames = min(frames_in, best["cap_frames"])
    interrupts = frames_in if co.per_frame_irq else processed_frames / co.frames_per_irq
    if h.busy_poll_us > 0:
        interrupts = 0.0
    irq_cycles = (frames_in * k * c.irq if co.per_frame_irq else 0.0) + processed_frames * (
        per_frame + (0.0 if co.per_frame_irq else k * c.irq / co.frames_per_irq))
    app_cycles = min(delivered / max(1e-9, 1 - best["p_sock"]), best["app_cap"]) * (
        app_per_dgram_base + c.copy * length)
    cpu_rx = min(irq_cycles, hz) / hz * 100 + min(app_cycles, hz) / hz * 100
    if h.busy_poll_us > 0:
        cpu_rx = max(cpu_rx, 100.0)
    gbps = throughput / 1e9
    metrics = {
        "throughput_gbps": gbps,
        "packet_rate_mpps": frames_out / 1e6,
        "loss_pct": 100.0 * (1 - delivered / offered) if offered > 0 else 0.0,
        "retransmits": 0.0,
        "interrupts_per_s": interrupts,
        "interrupts_per_gb": interrupts / max(gbps / 8, 1e-9),
        "cpu_rx_pct": cpu_rx,
        "cpu_tx_pct": min(offered * tx_cost / hz * 100, 100.0 * max(1, wl.streams)),
        **_stage_metrics(wl, qdisc=q_loss * offered * nfrag, backlog=best["backlog_rate"], ring=best["ring_rate"],
                         socket=best["socket_rate"], rx_busy=best["rx_busy"],
                         tx_busy=offered * tx_cost / hz / max(1, wl.streams)),
    }
    detail = {
        "offered_gbps": offered * length * 8 / 1e9,
        "fragments": float(nfrag),
        "sender_qdisc_loss": q_loss,
        "frames_per_irq": co.frames_per_irq,
        "clock_ghz": hz / 1e9,
        **{k2: v for k2, v in best.items() if k2.startswith("p_") or k2 == "load"},
    }
    return Result(metrics, detail)


def _forwarding(profile: SimProfile, h: Host, wl: Workload) -> Result:
    """L3 forwarding of small frames on ``forward_cores`` cores (Intel ixgbe study).

    Cycles per packet = 3,500 of work plus memory stalls. Phenomenological, fitted to
    Intel's table: a NUMA-remote buffer costs ~9,700 cycles whatever else is done (remote
    misses dominate), and once buffers are local, misalignment and shared references cost
    1,530 and 3,300 cycles alone but 9,240 together (a misaligned buffer spans two lines,
    each of which then bounces with the shared counters).
    """
    hz = _clock(profile, h, wl)
    length = wl.length or 64
    frame = max(64, length + 28 + 18)
    if not h.numa_buffers:
        stall = 9700.0 - (150.0 if h.aligned else 0.0) - (50.0 if h.no_shared else 0.0)
    else:
        a = 0.0 if h.aligned else 1.0
        s = 0.0 if h.no_shared else 1.0
        stall = 1530.0 * a + 3300.0 * s + 4410.0 * a * s
    cycles = 3500.0 + stall + max(0, frame - 64) * 0.35
    cpu_rate = profile.forward_cores * hz / cycles
    line_rate = profile.line_gbps * 1e9 / 8 / (frame + 20)
    offered = line_rate if not wl.bitrate_gbps else min(line_rate, wl.bitrate_gbps * 1e9 / 8 / frame)
    rate = min(offered, cpu_rate)
    gbps = rate * length * 8 / 1e9
    metrics = {
        "throughput_gbps": gbps,
        "packet_rate_mpps": rate / 1e6,
        "loss_pct": 100.0 * (1 - rate / offered),
        "retransmits": 0.0,
        "interrupts_per_s": rate / NAPI_WEIGHT,
        "interrupts_per_gb": (rate / NAPI_WEIGHT) / max(gbps / 8, 1e-9),
        "cpu_rx_pct": 100.0 * profile.forward_cores * min(1.0, rate * cycles / (profile.forward_cores * hz)),
        "cpu_tx_pct": 0.0,
        # The forwarding cores drop what they cannot take off the rings.
        **_stage_metrics(wl, qdisc=0.0, backlog=0.0, ring=offered - rate, socket=0.0,
                         rx_busy=rate * cycles / (profile.forward_cores * hz), tx_busy=0.0),
    }
    return Result(metrics, {"cycles_per_packet": cycles, "line_rate_mpps": line_rate / 1e6})


def _pf_ring(profile: SimProfile, h: Host, wl: Workload) -> Result:
    """Several NICs read through PF_RING, each by its own core, at the profile's loads.

    Active wait spins (a whole core, no wake-ups); passive wait wakes the reader for the
    first queued packet or after the poll timeout; watermark wakes it for N packets or after
    the timeout. At these loads every mode keeps up: the mode moves CPU and wake-ups, and
    throughput only by the packets still queued when the transfer ends.
    """
    hz = _clock(profile, h, wl)
    c = profile.costs
    total_bits = 0.0
    offered_bits = 0.0
    wakeups = 0.0
    cpu = 0.0
    lost = 0.0
    busiest = 0.0
    for nic in profile.nics:
        mode, poll_ms, mark = h.pf.get(nic.name, ("passive", 500, 128))
        pkt_rate = nic.offered_mbps * 1e6 / 8 / nic.packet_bytes
        per_pkt = c.drv + c.udp + c.copy * nic.packet_bytes
        if mode == "active":
            wake = 0.0
            busy = hz
            tail = 0.0
        else:
            n = 1 if mode == "passive" else mark
            wake = min(pkt_rate / n + 1000.0 / poll_ms, pkt_rate + 1000.0 / poll_ms)
            busy = pkt_rate * per_pkt + wake * c.wake
            # Packets waiting for the watermark when the stream ends (1 s transfers).
            tail = min(n / pkt_rate, poll_ms / 1000.0) if mode == "watermark" else 0.0
        ring_loss = 0.0 if busy <= hz else 1.0 - hz / busy
        delivered = pkt_rate * (1 - ring_loss) * (1 - min(0.5, tail / max(wl.duration_s, 1.0)))
        total_bits += delivered * nic.packet_bytes * 8
        offered_bits += pkt_rate * nic.packet_bytes * 8
        wakeups += wake
        cpu += min(busy, hz) / hz * 100
        lost += pkt_rate - delivered
        busiest = max(busiest, min(busy, hz) / hz)
    gbps = total_bits / 1e9
    metrics = {
        "throughput_gbps": gbps,
        "packet_rate_mpps": sum(n.offered_mbps * 1e6 / 8 / n.packet_bytes for n in profile.nics) / 1e6,
        "loss_pct": 100.0 * (1 - total_bits / offered_bits),
        "retransmits": 0.0,
        "interrupts_per_s": wakeups,
        "interrupts_per_gb": wakeups / max(gbps / 8, 1e-9),
        "cpu_rx_pct": cpu,
        "cpu_tx_pct": 0.0,
        **_stage_metrics(wl, qdisc=0.0, backlog=0.0, ring=lost, socket=0.0, rx_busy=busiest, tx_busy=0.0),
    }
    return Result(metrics, {"offered_gbps": offered_bits / 1e9})


def _stage_metrics(wl: Workload, *, qdisc: float, backlog: float, ring: float, socket: float,
                   rx_busy: float, tx_busy: float) -> dict[str, float]:
    """The drop counters of one run (packets per second at each stage times the run's length)
    and the busiest core of each end in percent (``*_busy`` are fractions of one core)."""
    return {
        "qdisc_drops": qdisc * wl.duration_s,
        "backlog_drops": backlog * wl.duration_s,
        "ring_drops": ring * wl.duration_s,
        "socket_drops": socket * wl.duration_s,
        "rx_core_busy_pct": 100.0 * min(1.0, max(0.0, rx_busy)),
        "tx_core_busy_pct": 100.0 * min(1.0, max(0.0, tx_busy)),
    }
