"""Simulated host pairs: their hardware, cost constants and untuned settings.

Every number here is a model parameter, not a measurement. Where a constant was fitted
to a published figure rather than derived, the comment says so; the calibration tests in
``tests/measure/test_sim_calibration.py`` hold the model to the seeds' figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from nictune.search_spaces import Family, SettingValue

#: Part of a simulated testbed's fingerprint, so measurements of different model versions are
#: never mixed in the cache. 2: the runs report the bottleneck counters (drops per stage,
#: busiest cores), which the diagnose rounds of the bayes engine read. 3: a run shorter or
#: longer than 10 s is noisier or steadier and sees part of the ramp after an apply
#: (:mod:`nictune.measure.sim.fidelity`); 10 s runs read as before. 4: round-trip latency
#: (:mod:`nictune.measure.sim.latency`); a workload with a latency part reports its four figures.
MODEL_VERSION = "4"

#: A setting's identity: (family, target, device).
Key = tuple[str, str, str | None]


def key(family: Family, target: str, device: str | None = None) -> Key:
    return (family.value, target, device)


@dataclass(frozen=True)
class Host:
    """The settings the model reads, resolved from the profile defaults and a configuration
    (:func:`nictune.measure.sim.model.host_from`)."""

    mtu: int
    txqueuelen: int
    backlog: int
    rx_ring: int
    pause: bool
    adaptive: bool
    rx_usecs: int
    rx_frames: int
    busy_poll_us: int
    napi_defer: int
    gro_flush_ns: int
    gro: bool
    lro: bool
    tso: bool
    gso: bool
    rx_csum: bool
    sg: bool
    rmem_max: int
    wmem_max: int
    rmem_default: int
    wmem_default: int
    tcp_rmem_max: int
    tcp_wmem_max: int
    window_scaling: bool
    sack: bool
    timestamps: bool
    qdisc: str
    irq_policy: str
    placement: str
    governor: str
    sys_tune: bool
    high_rate_steer: bool
    numa_buffers: bool
    aligned: bool
    no_shared: bool
    pf: Mapping[str, tuple[str, int, int]]


@dataclass(frozen=True)
class Costs:
    """CPU cost constants in cycles (per frame, per byte or per call) of one host generation."""

    drv: float = 1500.0        # driver work per received frame
    gro: float = 600.0         # GRO work per received frame
    tcp: float = 4000.0        # TCP receive processing per (aggregated) segment, ACK included
    udp: float = 500.0         # UDP/IP receive work per frame
    reasm: float = 900.0       # IP reassembly per fragment
    irq: float = 4000.0        # one hardware interrupt and NAPI schedule
    copy: float = 0.35         # copy to user space, per byte, NUMA-local and cache-warm
    csum: float = 0.5          # software checksum per byte when rx checksum offload is off
    sys_tcp: float = 6000.0    # recv() system call on a TCP socket
    sys_udp: float = 3900.0    # recvmsg() of one UDP datagram
    tx_call: float = 4500.0    # send call, per call (route, skb, qdisc, driver, completion)
    tx_byte: float = 0.5       # send path, per byte (copy from user, checksum offloaded)
    tx_frame: float = 1200.0   # per frame sent without TSO/GSO
    wake: float = 12000.0      # waking a sleeping reader (PF_RING passive wait, poll())


@dataclass(frozen=True)
class Stalls:
    """Consumers that stop for a while: the queue in front of them overflows.

    ``nu`` stalls per second with exponentially distributed length of mean ``tau`` seconds.
    A queue of Q packets fed at rate r loses ``nu * tau * exp(-Q / (r * tau))`` of its input.
    """

    ring_duty: float = 0.95    # phenomenological, fitted to Benson P8 (see model docstring)
    ring_tau: float = 0.004
    ring_shape: int = 4        # ring stalls are of a typical length (Erlang-4), not memoryless
    pause_relief: float = 0.9  # PAUSE frames absorb this little of a ms-long stall
    backlog_nu: float = 1.9
    backlog_tau: float = 0.002
    qdisc_nu: float = 2.0
    qdisc_tau: float = 0.0126
    qdisc_shape: int = 2
    socket_nu: float = 4.0
    socket_tau: float = 0.004
    burst_frames: float = 32.0  # frames lost together: a full ring frees descriptors per NAPI poll
    rto_s: float = 0.2         # TCP time lost to a tail drop of whole aggregates (RTO)
    recovery_s: float = 0.0002  # TCP time lost to a single-frame drop (SACK fast recovery)


@dataclass(frozen=True)
class LatencyTerms:
    """The terms of a small message's round trip (:mod:`nictune.measure.sim.latency`).

    Where a term was fitted to a published figure the comment says which; the others are
    modelling assumptions (README, "Latency calibration").
    """

    hw_us: float = 2.0          # one way through both NICs (DMA, PCIe), the switch and the cable: assumption
    wake: float = 4000.0        # cycles to wake the blocked reader (fitted: Tamir's interrupt / busy-poll ratio)
    poll_us: float = 0.2        # a spinning reader finds the frame on the ring: assumption
    adaptive_idle_us: float = 3.5   # adaptive moderation's wait for a lone frame (fitted: Tamir, +7.1 us a round trip)
    adaptive_high_us: float = 64.0  # its wait at and above adaptive_rate_high (mlx4 OFED RX_COAL_TIME_HIGH)
    adaptive_rate_low: float = 100_000.0   # frames/s where adaptive moderation starts to rise (mlx4 OFED)
    adaptive_rate_high: float = 400_000.0  # frames/s where it reaches adaptive_high_us (mlx4 OFED)
    jitter_us: float = 1.5      # mean of the exponential spread of a round trip: assumption (tail rows T1)
    hiccup_share: float = 0.005  # round trips hit by a long delay (timer tick, other softirq work): assumption
    hiccup_us: float = 30.0     # mean length of such a delay: assumption


@dataclass(frozen=True)
class Nic:
    """One NIC's traffic in a multi-NIC profile (PF_RING study)."""

    name: str
    packet_bytes: int
    offered_mbps: float


@dataclass(frozen=True)
class SimProfile:
    """A simulated sender/receiver pair.

    Attributes:
        name: the ``sim:`` name.
        description: one paragraph for humans.
        space: the built-in search space that fits it.
        line_gbps: link rate.
        cores_per_socket: cores of the NIC's NUMA node (IRQ spreading).
        clocks_ghz: clock of the busy cores by (scenario, governor); turbo makes idle hosts
            faster and the ondemand governor lets idle cores drop so the busy ones turbo higher.
        rtt_us: round-trip time of an empty path, stack included.
        cost_scale: multiplier on per-frame costs (older kernels and drivers cost more).
        app_cycles_per_byte: the receiving application's own work per byte (0 for iperf3).
        app_read_bytes: bytes per read() of the receiving application (TCP).
        app_sockbuf: SO_RCVBUF/SO_SNDBUF the application asks for (capped by r/wmem_max);
            ``None`` means kernel autotuning within tcp_rmem/tcp_wmem.
        adv_win_scale: net.ipv4.tcp_adv_win_scale: 2**-x of the buffer is overhead.
        forward_cores: cores doing packet forwarding (Intel ixgbe study), 0 otherwise.
        nics: the NICs of a multi-NIC profile.
        latency: the terms of a request/response round trip.
        defaults: the settings of the untuned host.
    """

    name: str
    description: str
    space: str
    line_gbps: float
    cores_per_socket: int
    clocks_ghz: Mapping[tuple[str, str], float]
    rtt_us: float
    costs: Costs = field(default_factory=Costs)
    stalls: Stalls = field(default_factory=Stalls)
    cost_scale: float = 1.0
    app_cycles_per_byte: float = 0.0
    app_read_bytes: int = 131072
    app_sockbuf: int | None = None
    adv_win_scale: int = 1
    forward_cores: int = 0
    nics: tuple[Nic, ...] = ()
    latency: LatencyTerms = field(default_factory=LatencyTerms)
    defaults: Mapping[Key, SettingValue] = field(default_factory=dict)

    def clock_hz(self, scenario: str, governor: str) -> float:
        ghz = self.clocks_ghz.get((scenario, governor))
        if ghz is None:
            ghz = self.clocks_ghz[(scenario, "performance")] * (0.45 if governor == "powersave" else 1)
        return ghz * 1e9


F = Family


def _linux_defaults(overrides: Mapping[Key, SettingValue] | None = None) -> dict[Key, SettingValue]:
    """Settings of a stock host of the 2014 era (CentOS 6 on a 40 GbE mlx4 NIC)."""
    d: dict[Key, SettingValue] = {
        key(F.IP_LINK, "mtu"): 1500,
        key(F.IP_LINK, "txqueuelen"): 1000,
        key(F.SYSCTL, "net.core.netdev_max_backlog"): 1000,
        key(F.SYSCTL, "net.core.netdev_budget"): 300,
        key(F.SYSCTL, "net.core.rmem_max"): 262144,
        key(F.SYSCTL, "net.core.wmem_max"): 262144,
        key(F.SYSCTL, "net.core.rmem_default"): 262144,
        key(F.SYSCTL, "net.core.wmem_default"): 262144,
        key(F.SYSCTL, "net.ipv4.tcp_rmem"): (4096, 87380, 6291456),
        key(F.SYSCTL, "net.ipv4.tcp_wmem"): (4096, 16384, 4194304),
        key(F.SYSCTL, "net.ipv4.tcp_window_scaling"): True,
        key(F.SYSCTL, "net.ipv4.tcp_sack"): True,
        key(F.SYSCTL, "net.ipv4.tcp_timestamps"): True,
        key(F.SYSCTL, "net.core.busy_read"): 0,
        key(F.SYSCTL, "net.core.busy_poll"): 0,
        key(F.ETHTOOL_RINGS, "rx"): 1024,
        key(F.ETHTOOL_RINGS, "tx"): 1024,
        key(F.ETHTOOL_COALESCE, "adaptive-rx"): True,
        key(F.ETHTOOL_COALESCE, "rx-usecs"): 16,
        key(F.ETHTOOL_COALESCE, "rx-frames"): 44,
        key(F.ETHTOOL_PAUSE, "rx"): True,
        key(F.ETHTOOL_PAUSE, "tx"): True,
        key(F.ETHTOOL_CHANNELS, "combined"): 8,
        key(F.ETHTOOL_FEATURES, "gro"): True,
        key(F.ETHTOOL_FEATURES, "lro"): False,
        key(F.ETHTOOL_FEATURES, "tso"): True,
        key(F.ETHTOOL_FEATURES, "gso"): True,
        key(F.ETHTOOL_FEATURES, "sg"): True,
        key(F.ETHTOOL_FEATURES, "rx"): True,
        key(F.ETHTOOL_FEATURES, "tx"): True,
        key(F.SYSFS, "napi_defer_hard_irqs"): 0,
        key(F.SYSFS, "gro_flush_timeout"): 0,
        key(F.QDISC, "root"): "pfifo_fast",
        key(F.IRQ_AFFINITY, "policy"): "socket",
        key(F.CPU_GOVERNOR, "scaling_governor"): "ondemand",
        key(F.PLACEMENT, "receiver"): "unpinned",
        key(F.MODULE_PARAM, "mlx4_core.enable_sys_tune"): False,
        key(F.MODULE_PARAM, "mlx4_core.high_rate_steer"): False,
        key(F.PLATFORM, "numa_local_buffers"): True,
        key(F.PLATFORM, "buffer_alignment"): True,
        key(F.PLATFORM, "no_shared_refs"): True,
    }
    d.update(overrides or {})
    return d


BENSON = SimProfile(
    name="sim:benson-40g",
    description=(
        "Model of Benson's pair: two dual-socket E5-2650 v2 hosts (2.6 GHz, turbo to 3.4) "
        "with ConnectX-3 40 GbE NICs on one switch, CentOS 6.5. Untuned settings by default."
    ),
    space="benson-40g",
    line_gbps=40.0,
    cores_per_socket=8,
    clocks_ghz={
        ("idle", "performance"): 3.2,
        ("idle", "ondemand"): 3.4,
        ("busy", "performance"): 2.9,
        ("busy", "ondemand"): 2.8,
    },
    rtt_us=30.0,
    defaults=_linux_defaults(),
)

MISHRA = SimProfile(
    name="sim:mishra-10g",
    description=(
        "Model of Mishra et al.'s pair: 2.93 GHz Xeon hosts, ConnectX 10 GbE over a crossover "
        "cable, CentOS 6.2 (kernel 2.6.32), traffic from their UTGen tool (15000-byte "
        "messages, 24 MB socket buffers requested with setsockopt)."
    ),
    space="linux-tcp",
    line_gbps=10.0,
    cores_per_socket=4,
    clocks_ghz={("idle", "performance"): 2.93, ("idle", "ondemand"): 2.93,
                ("busy", "performance"): 2.93, ("busy", "ondemand"): 2.93},
    # Fitted to M1 (1.2 Gbps with the default 128 KB buffers): the effective RTT of a
    # 2.6.32 receiver, delayed ACKs and interrupt moderation included.
    rtt_us=833.0,
    cost_scale=1.6,
    # Fitted to M2 (3.66 Gbps tuned): UTGen's own per-byte work on the receiver.
    app_cycles_per_byte=5.65,
    app_read_bytes=15000,
    app_sockbuf=24 * 1024 * 1024,
    adv_win_scale=2,
    stalls=Stalls(qdisc_nu=2.0, qdisc_tau=0.0055),
    defaults=_linux_defaults({
        key(F.SYSCTL, "net.core.rmem_max"): 131071,
        key(F.SYSCTL, "net.core.wmem_max"): 131071,
        key(F.SYSCTL, "net.core.rmem_default"): 129024,
        key(F.SYSCTL, "net.core.wmem_default"): 129024,
        key(F.SYSCTL, "net.ipv4.tcp_rmem"): (4096, 87380, 4194304),
        key(F.SYSCTL, "net.ipv4.tcp_wmem"): (4096, 16384, 4194304),
        key(F.IRQ_AFFINITY, "policy"): "single-core",
        key(F.PLACEMENT, "receiver"): "numa-local",
        key(F.CPU_GOVERNOR, "scaling_governor"): "performance",
    }),
)

NURIKA = SimProfile(
    name="sim:nurika-pfring",
    description=(
        "Model of a Nurika-style capture node: three 1 GbE NICs read through PF_RING by one "
        "2.4 GHz core each, fed by hping3 at low rates with different packet sizes (their "
        "Table 1: 1400, 536 and 220 bytes). The workload's datagram size is not used: each "
        "NIC carries its own traffic."
    ),
    space="nurika-pfring",
    line_gbps=1.0,
    cores_per_socket=4,
    clocks_ghz={("idle", "performance"): 2.4, ("idle", "ondemand"): 2.4,
                ("busy", "performance"): 2.2, ("busy", "ondemand"): 2.2},
    rtt_us=100.0,
    nics=(Nic("nic1", 1400, 40.4), Nic("nic2", 536, 15.4), Nic("nic3", 220, 6.1)),
    defaults=_linux_defaults({
        key(F.PF_RING, "wait_mode", "nic1"): "passive",
        key(F.PF_RING, "poll_duration", "nic1"): 500,
        key(F.PF_RING, "poll_watermark", "nic1"): 128,
        key(F.PF_RING, "wait_mode", "nic2"): "passive",
        key(F.PF_RING, "poll_duration", "nic2"): 500,
        key(F.PF_RING, "poll_watermark", "nic2"): 128,
        key(F.PF_RING, "wait_mode", "nic3"): "passive",
        key(F.PF_RING, "poll_duration", "nic3"): 500,
        key(F.PF_RING, "poll_watermark", "nic3"): 128,
    }),
)

IXGBE = SimProfile(
    name="sim:ixgbe-10g",
    description=(
        "Model of Intel's ixgbe NUMA study: L3 forwarding of 64-byte frames, 8 flows on 8 "
        "Nehalem cores at 2.53 GHz (no SMT), one dual-port 82599. The stock driver (no NUMA-"
        "aware allocation, no alignment, shared references) is the default."
    ),
    space="ixgbe-numa",
    line_gbps=10.0,
    cores_per_socket=4,
    clocks_ghz={("idle", "performance"): 2.53, ("idle", "ondemand"): 2.53,
                ("busy", "performance"): 2.53, ("busy", "ondemand"): 2.53},
    rtt_us=30.0,
    forward_cores=8,
    defaults=_linux_defaults({
        key(F.PLATFORM, "numa_local_buffers"): False,
        key(F.PLATFORM, "buffer_alignment"): False,
        key(F.PLATFORM, "no_shared_refs"): False,
        key(F.IRQ_AFFINITY, "policy"): "single-core",
        key(F.PLACEMENT, "receiver"): "numa-local",
    }),
)

CAI = SimProfile(
    name="sim:cai-100g",
    description=(
        "Model of Cai et al.'s host-stack study: 100 GbE, 3.4 GHz cores, a recent kernel with "
        "TSO/GRO, jumbo frames and aRFS (the IRQ follows the application onto its core)."
    ),
    space="linux-nic",
    line_gbps=100.0,
    cores_per_socket=24,
    clocks_ghz={("idle", "performance"): 3.4, ("idle", "ondemand"): 3.4,
                ("busy", "performance"): 3.4, ("busy", "ondemand"): 3.4},
    rtt_us=20.0,
    # A 2020 kernel and mlx5 driver: per-frame work about 20% below the 2014 stack.
    cost_scale=0.8,
    defaults=_linux_defaults({
        key(F.IP_LINK, "mtu"): 9000,
        key(F.SYSCTL, "net.core.netdev_max_backlog"): 250000,
        key(F.SYSCTL, "net.ipv4.tcp_rmem"): (4096, 131072, 67108864),
        key(F.SYSCTL, "net.ipv4.tcp_wmem"): (4096, 16384, 67108864),
        key(F.ETHTOOL_RINGS, "rx"): 4096,
        key(F.IP_LINK, "txqueuelen"): 10000,
        key(F.QDISC, "root"): "fq",
        key(F.IRQ_AFFINITY, "policy"): "single-core",
        key(F.PLACEMENT, "receiver"): "irq-core",
        key(F.CPU_GOVERNOR, "scaling_governor"): "performance",
    }),
)

PROFILES: dict[str, SimProfile] = {p.name: p for p in (BENSON, MISHRA, NURIKA, IXGBE, CAI)}


def with_defaults(profile: SimProfile, changes: Mapping[Key, SettingValue]) -> SimProfile:
    """A copy of ``profile`` whose untuned settings differ (used by tests and benches)."""
    merged: dict[Key, SettingValue] = dict(profile.defaults)
    merged.update(changes)
    return replace(profile, defaults=merged)
