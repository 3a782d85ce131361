"""Round-trip latency of the simulated testbed: calibration rows and the modes' trade-off.

Each ``test_row_*`` is a row of the latency calibration table (README, "Latency calibration")
with its tolerance. All figures are noise-free model outputs (a model, not hardware). Tamir
= E. Tamir, "[RFC PATCH 0/5] net: low latency Ethernet device polling", LKML 2013-02-27
(ixgbe 82599, kernel 3.8-rc6, netperf TCP_RR / UDP_RR, "typical" configuration, C3/C6 off);
a transaction rate R is a mean round trip of 1 / R.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nictune.measure._base import LATENCY_METRICS, LatencyProbe, Workload
from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim import PROFILES, evaluate
from nictune.measure.sim.profiles import with_defaults
from nictune.measure.testbeds import SimTestbed
from nictune.search_spaces import Family, Setting, load_space
from nictune.search_spaces.space import SearchSpace

BENSON = PROFILES["sim:benson-40g"]
# Tamir's rows were taken with C-states off: the performance governor (no C-state exits).
BENSON_PERF = with_defaults(BENSON, {(Family.CPU_GOVERNOR.value, "scaling_governor", None): "performance"})
SPACE = load_space("benson-40g")
NIC = load_space("linux-nic")
LATENCY = get_workload("latency")
TCP_LATENCY = replace(LATENCY, latency=LatencyProbe("ping-pong", "tcp", 64))


def rtt(space: SearchSpace, wl: Workload = LATENCY, base: str | None = None, profile: object = BENSON_PERF,
        **changes: object) -> dict[str, float]:
    config = space.configuration(changes, base=base) if base else space.configuration(changes)
    return evaluate(profile, space.settings(config), wl).metrics  # type: ignore[arg-type]


def quiet(**changes: object) -> dict[str, float]:
    """linux-nic on Benson's pair with IRQs on one core and the reader NUMA-local (Tamir's tuning)."""
    return rtt(NIC, irq_affinity="single-core", app_cpu="numa-local", **changes)


def test_row_bp1_busy_polling_saves_the_interrupt_path() -> None:
    """BP1: Tamir UDP_RR, rx-usecs 0 56k/s vs busy polling 78k/s: ratio of round trips 1.39 +- 0.15."""
    ratio = quiet(rx_mode="interrupt")["latency_mean_us"] / quiet(rx_mode="busy-poll")["latency_mean_us"]
    assert 1.24 <= ratio <= 1.54


def test_row_ad1_adaptive_moderation_holds_a_lone_frame() -> None:
    """AD1: Tamir UDP_RR, adaptive 40k/s vs rx-usecs 0 56k/s: ratio 1.40 +- 0.15."""
    ratio = quiet(rx_mode="adaptive")["latency_mean_us"] / quiet(rx_mode="interrupt")["latency_mean_us"]
    assert 1.25 <= ratio <= 1.55


def test_row_tcp1_tcp_round_trip_costs_two_microseconds_more() -> None:
    """TCP1: Tamir rx-usecs 0, TCP_RR 50k/s (20.0 us) vs UDP_RR 56k/s (17.9 us): +2.1 +- 1.0 us."""
    extra = (quiet(rx_mode="interrupt", wl=TCP_LATENCY)["latency_mean_us"]
             - quiet(rx_mode="interrupt")["latency_mean_us"])
    assert 1.1 <= extra <= 3.1


def test_row_bp2_busy_polling_ignores_the_moderation_timer() -> None:
    """BP2: Tamir busy polling, rx-usecs 100 84k/s vs adaptive 79k/s: ratio 0.94 +- 0.10.

    A spinning reader takes the frame off the ring before the NIC's timer fires: the
    moderation behind it (the busy-poll mode's 64 us, a 100 us timer, adaptive) hardly matters."""
    config = NIC.settings(NIC.configuration({"rx_mode": "busy-poll", "irq_affinity": "single-core",
                                             "app_cpu": "numa-local"}))

    def with_coalesce(**fields: object) -> float:
        extra = [Setting(Family.ETHTOOL_COALESCE, k.replace("_", "-"), v) for k, v in fields.items()]  # type: ignore[arg-type]
        return evaluate(BENSON_PERF, config + extra, LATENCY).metrics["latency_mean_us"]

    adaptive = with_coalesce(adaptive_rx=True)
    assert 0.84 <= with_coalesce(rx_usecs=100) / adaptive <= 1.04
    assert quiet(rx_mode="timer", poll_usecs=128)["latency_mean_us"] > 5 * with_coalesce(rx_usecs=128)


def test_row_abs1_adaptive_round_trip_of_the_era() -> None:
    """ABS1: Tamir adaptive UDP_RR 40k/s = 25.0 us on a 10 GbE host of the same era: +-30 %
    (cross-hardware: Benson's pair is ConnectX-3 40 GbE)."""
    assert 17.5 <= rtt(SPACE, base="baseline")["latency_mean_us"] <= 32.5


def test_row_itr1_timer_sets_the_interrupt_rate() -> None:
    """ITR1: Intel 700 Series tuning guide: rx-usecs 62 ~ 16,000 and 84 ~ 12,000 interrupts/s,
    i.e. about 1e6 / rx-usecs under bulk load; the model at rx-usecs 64: within 10 % of 15,600."""
    m = rtt(SPACE, wl=get_workload("tcp"), base="baseline", rx_mode="timer", poll_usecs=64)
    assert abs(m["interrupts_per_s"] / (1e6 / 64) - 1) <= 0.10


def test_row_t1_tail_between_a_bypass_stack_and_a_virtual_machine() -> None:
    """T1 (assumption bounded by two published tails): sockperf on VMA (PR #73 of
    Mellanox/sockperf: p99/p50 1.20, p99.9/p50 2.22) is tighter than a kernel stack can be;
    lagscope between Azure VMs (PR #49 of microsoft/lagscope: 3.8 and 13.6) looser."""
    for m in (rtt(SPACE, profile=BENSON), quiet(rx_mode="busy-poll")):
        assert 1.20 <= m["latency_p99_us"] / m["latency_p50_us"] <= 3.8
        assert 2.22 <= m["latency_p999_us"] / m["latency_p50_us"] <= 13.6


def test_row_a1_a_timer_holds_a_lone_message_at_each_end() -> None:
    """A1 (assumption, mlx4/mlx5 semantics: the timer starts at the first frame): in ping-pong
    a timer of T adds 2 T to every round trip; a watermark above one frame its 512 us timeout."""
    base = rtt(SPACE, base="baseline", rx_mode="interrupt")["latency_mean_us"]
    for usecs in (2, 16, 128):
        timer = rtt(SPACE, base="baseline", rx_mode="timer", poll_usecs=usecs)["latency_mean_us"]
        assert timer - base == pytest.approx(2 * usecs, abs=0.5)
    watermark = rtt(SPACE, base="baseline", rx_mode="watermark", watermark_frames=8)["latency_mean_us"]
    assert watermark - base == pytest.approx(1024, abs=1)


def under_load(rate: int) -> Workload:
    return replace(LATENCY, latency=LatencyProbe("under-load", "udp", 64, rate))


def test_row_a2_latency_climbs_where_the_cpu_becomes_the_bottleneck() -> None:
    """A2 (mechanism): under load the round trip climbs as the rate nears what the receiving
    core can take; per-frame interrupts reach that rate first (an interrupt and a wake-up per
    message), so past it coalescing has the lower latency."""
    def p99(rate: int, mode: str) -> float:
        return rtt(SPACE, wl=under_load(rate), base="baseline", rx_mode=mode)["latency_p99_us"]

    limit = evaluate(BENSON_PERF, SPACE.settings(SPACE.configuration({"rx_mode": "interrupt"}, base="baseline")),
                     under_load(10_000)).detail["latency_cpu_limit_mps"]
    rates = [int(limit * f) for f in (0.1, 0.5, 0.8, 0.95)]
    climb = [p99(r, "interrupt") for r in rates]
    assert climb == sorted(climb) and climb[-1] > 1.5 * climb[0]
    assert p99(int(limit * 1.1), "interrupt") > 5 * p99(int(limit * 1.1), "adaptive")
    assert p99(int(limit * 0.1), "interrupt") < p99(int(limit * 0.1), "adaptive")


def test_napi_deferral_holds_messages_for_the_flush_timer() -> None:
    """napi_defer_hard_irqs with gro_flush_timeout: a message waits up to the timeout for the
    deferral timer's poll; either knob alone changes no round trip (the kernel needs both)."""
    plain = quiet(rx_mode="interrupt")
    both = quiet(rx_mode="interrupt", napi_defer_hard_irqs=4, gro_flush_timeout=50000)
    assert quiet(rx_mode="interrupt", gro_flush_timeout=50000) == plain
    assert quiet(rx_mode="interrupt", napi_defer_hard_irqs=4) == plain
    assert both["latency_p99_us"] > plain["latency_p99_us"] + 50
    assert both["latency_p50_us"] < plain["latency_p50_us"] + 100


def front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The (label, throughput, p99) points no other beats on both objectives, by throughput."""
    def beaten(p: tuple[str, float, float]) -> bool:
        return any(q[1] >= p[1] and q[2] <= p[2] and (q[1], q[2]) != (p[1], p[2]) for q in points)
    return sorted((p for p in points if not beaten(p)), key=lambda p: p[1])


def corners(space: SearchSpace, modes: list[dict[str, object]], profile: object, base: str | None,
            **common: object) -> list[tuple[str, float, float]]:
    bed = SimTestbed(profile, noise=0)  # type: ignore[arg-type]
    out = []
    for mode in modes:
        config = space.configuration({**common, **mode}, base=base) if base else space.configuration({**common, **mode})
        m = bed.clean(space.settings(config), get_workload("tcp+latency"))
        out.append((repr(mode), m["throughput_gbps"], m["latency_p99_us"]))
    return out


TIMERS = [{"rx_mode": "timer", "poll_usecs": u} for u in (2, 4, 16, 64, 512)]
WATERMARKS = [{"rx_mode": "watermark", "watermark_frames": n} for n in (2, 32, 256)]


def test_benson_front_runs_from_per_frame_interrupts_to_coalescing() -> None:
    """The trade-off on sim:benson-40g (tcp+latency, Table III baseline otherwise): the
    lowest-latency end of the front takes an interrupt per frame and gives up throughput; its
    highest-throughput end coalesces (at the wire rate) and pays in round-trip time."""
    modes = [{"rx_mode": "interrupt"}, {"rx_mode": "adaptive"}, *TIMERS, *WATERMARKS]
    pts = front(corners(SPACE, modes, BENSON, "baseline"))
    low, high = pts[0], pts[-1]
    assert "interrupt" in low[0]
    assert "interrupt" not in high[0] and high[1] > low[1] * 1.1 and high[2] > low[2]
    mode = next(m for m in modes if repr(m) == high[0])
    detail = evaluate(BENSON, SPACE.settings(SPACE.configuration(mode, base="baseline")), get_workload("tcp")).detail
    assert detail["frames_per_irq"] >= 8  # coalescing: at least 8 frames an interrupt under bulk load


def test_linux_nic_front_has_busy_polling_at_the_low_latency_end() -> None:
    modes = [{"rx_mode": "interrupt"}, {"rx_mode": "adaptive"}, {"rx_mode": "busy-poll"}, *TIMERS, *WATERMARKS]
    pts = front(corners(NIC, modes, BENSON_PERF, "vendor-guide"))
    assert "busy-poll" in pts[0][0]
    assert "busy-poll" not in pts[-1][0] and pts[-1][2] > pts[0][2]


def test_long_coalescing_costs_latency_not_throughput_at_the_wire() -> None:
    """Fixed long coalescing reaches the wire rate as adaptive moderation does (both hold
    ~64 us under bulk load) and holds a lone ping-pong message far longer: on a wire-bound
    pair it ties on throughput and loses on latency."""
    pts = dict((p[0], p[1:]) for p in corners(SPACE, [{"rx_mode": "adaptive"}, TIMERS[-1]], BENSON, "baseline"))
    (a_tput, a_p99), (t_tput, t_p99) = pts[repr({"rx_mode": "adaptive"})], pts[repr(TIMERS[-1])]
    assert t_tput == pytest.approx(a_tput, rel=0.01)
    assert t_p99 > 10 * a_p99


@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize("workload", ["latency", "tcp+latency"])
def test_every_profile_reports_ordered_plausible_round_trips(name: str, workload: str) -> None:
    profile = PROFILES[name]
    wl = get_workload(workload)
    m = evaluate(profile, [], wl).metrics
    assert m["latency_p50_us"] <= m["latency_p99_us"] <= m["latency_p999_us"]
    assert m["latency_p50_us"] <= m["latency_mean_us"] <= m["latency_p999_us"]
    assert 5 <= m["latency_p50_us"] <= 100  # a kernel UDP round trip on a LAN: microseconds, not ms
    assert set(m) == set(wl.measures())


def test_testbed_noise_is_seeded_ordered_and_latency_only_workloads_report_latency_only() -> None:
    bed = SimTestbed(BENSON)
    settings = SPACE.settings(SPACE.configuration({}, base="baseline"))
    first = bed.measure(settings, LATENCY, repeats=5, seed=7)
    again = bed.measure(settings, LATENCY, repeats=5, seed=7)
    assert [s.metrics for s in first.samples] == [s.metrics for s in again.samples]
    clean = bed.clean(settings, LATENCY)
    values = [s.metrics["latency_p50_us"] for s in first.samples]
    assert len(set(values)) == 5 and all(abs(v / clean["latency_p50_us"] - 1) < 0.15 for v in values)
    for s in first.samples:
        assert set(s.metrics) == set(LATENCY_METRICS)
        assert s.metrics["latency_p50_us"] <= s.metrics["latency_p99_us"] <= s.metrics["latency_p999_us"]
    both = bed.measure(settings, get_workload("tcp+latency"), repeats=2, seed=7).samples[0].metrics
    assert set(both) == set(get_workload("tcp+latency").measures())


def test_model_version_keys_simulated_figures() -> None:
    """Figures of the model without latency must not be reused: the fingerprint changed."""
    assert SimTestbed(BENSON).fingerprint()["model_version"] == "4"
