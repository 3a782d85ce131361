"""The simulated testbed as a Testbed: noise, determinism, fingerprint, speed of the model."""

from __future__ import annotations

import statistics

import pytest

from nictune.measure.benchmarks.workloads import get_workload
from nictune.measure.sim.model import modelled_keys
from nictune.measure.sim.profiles import PROFILES
from nictune.measure.testbeds import SimTestbed, open_testbed
from nictune.search_spaces import builtin_names, load_space


def test_noise_is_seeded_and_has_the_requested_spread() -> None:
    bed = open_testbed("sim:benson-40g", noise=0.03)
    space = load_space(bed.default_space())
    settings = space.settings(space.profile("baseline"))
    wl = get_workload("udp-jumbo")
    a = [s.metrics["throughput_gbps"] for s in bed.measure(settings, wl, 40, seed=7).samples]
    b = [s.metrics["throughput_gbps"] for s in bed.measure(settings, wl, 40, seed=7).samples]
    c = [s.metrics["throughput_gbps"] for s in bed.measure(settings, wl, 40, seed=8).samples]
    assert a == b and a != c
    cv = statistics.stdev(a) / statistics.fmean(a)
    assert 0.015 < cv < 0.05
    clean = bed.clean(settings, wl)["throughput_gbps"]  # type: ignore[attr-defined]
    assert abs(statistics.fmean(a) - clean) / clean < 0.03


def test_noise_free_repeats_are_identical_and_fingerprint_says_so() -> None:
    bed = open_testbed("sim:mishra-10g", noise=0)
    space = load_space("linux-tcp")
    samples = bed.measure(space.settings(space.default()), get_workload("tcp"), 3, seed=1).samples
    assert len({s.metrics["throughput_gbps"] for s in samples}) == 1
    assert bed.fingerprint()["noise_cv"] == "0" and bed.simulated
    assert open_testbed("sim:mishra-10g").fingerprint() != bed.fingerprint()


def test_samples_count_whole_packets_and_segments_as_a_benchmark_does() -> None:
    """A tuned pair the model says loses (almost) nothing reports no loss and no retransmits,
    not 1e-47 %; a lossy one reports its loss in whole packets of the run."""
    bed = open_testbed("sim:benson-40g", noise=0.03)
    space = load_space(bed.default_space())
    tcp, udp = get_workload("tcp"), get_workload("udp-jumbo")
    tuned = space.settings(space.profile("baseline"))
    assert 0 < bed.clean(tuned, tcp)["loss_pct"] < 1e-9  # type: ignore[attr-defined]
    for sample in bed.measure(tuned, tcp, 5, seed=3).samples:
        assert sample.metrics["loss_pct"] == 0.0 and sample.metrics["retransmits"] == 0.0
    lossy = space.settings(space.default())
    for sample in bed.measure(lossy, udp, 5, seed=3).samples:
        m = sample.metrics
        packets = m["packet_rate_mpps"] * 1e6 * udp.duration_s
        lost = m["loss_pct"] / 100 * packets
        assert m["loss_pct"] > 0 and abs(lost - round(lost)) < 1e-6
    for sample in bed.measure(lossy, tcp, 5, seed=3).samples:
        assert sample.metrics["retransmits"] > 0 and sample.metrics["retransmits"].is_integer()


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_knobs_a_model_calls_ignored_change_nothing_and_the_others_are_read(profile: str) -> None:
    """For every built-in space: each knob the model names as ignored leaves every metric
    unchanged through all its values, and each of its other knobs maps to a setting the
    model reads."""
    bed = open_testbed(profile, noise=0)
    assert isinstance(bed, SimTestbed)
    wl = get_workload("tcp")
    read = modelled_keys(bed.profile)
    for name in builtin_names():
        space = load_space(name)
        ignored = bed.ignored_knobs(space)
        base = space.default()
        before = bed.clean(space.settings(base), wl)
        for knob_name, knob in space.knobs.items():
            keys = {(s.family.value, s.target, s.device) for v in knob.values() or [knob.default]
                    for s in knob.to_settings(v)}
            assert (knob_name in ignored) == (not keys & read), (profile, name, knob_name)
            if knob_name not in ignored:
                continue
            for value in knob.values() or []:
                config = dict(base) | {knob_name: value}
                if space.violations(config) or set(space.active(config)) != set(config):
                    continue
                assert bed.clean(space.settings(config), wl) == before, (profile, name, knob_name, value)


def test_what_a_model_ignores_is_named() -> None:
    bed = open_testbed("sim:benson-40g")
    assert bed.ignored_knobs(load_space("benson-40g")) == ["tx_ring"]
    assert bed.ignored_knobs(load_space("veth")) == ["netdev_budget", "congestion_control", "receiver_cpus",
                                                     "sender_cpus"]
    assert set(bed.ignored_knobs(load_space("nurika-pfring"))) >= {"nic1_mode", "nic2_watermark"}
    assert open_testbed("sim:nurika-pfring").ignored_knobs(load_space("nurika-pfring")) == []


def test_the_forwarding_model_says_what_its_figures_mean_and_the_others_say_nothing() -> None:
    bed = SimTestbed(PROFILES["sim:ixgbe-10g"])
    (notice,) = bed.notices
    assert "L3 forwarding of small frames on 8 cores" in notice and "800 = every one busy" in notice
    # ... which is what a TCP workload's figures there look like: every forwarding core busy,
    # most offered frames dropped.
    space = load_space(bed.default_space())
    result = SimTestbed(PROFILES["sim:ixgbe-10g"], noise=0).measure(space.settings(space.default()),
                                                                    get_workload("tcp"), 1, 0)
    metrics = result.samples[0].metrics
    assert metrics["cpu_rx_pct"] == pytest.approx(800) and metrics["loss_pct"] > 50
    assert all(SimTestbed(p).notices == () for name, p in PROFILES.items() if name != "sim:ixgbe-10g")


def test_the_model_says_where_it_drops_and_which_core_limits() -> None:
    """The bottleneck counters follow the model's mechanisms (model figures): a short transmit
    queue drops in the sender's qdisc, a small ring in the NIC, a small receive buffer at the
    socket, a receiver without GRO saturates its core; the vendor guide drops nothing."""
    bed = SimTestbed(PROFILES["sim:benson-40g"], noise=0.0)
    space = load_space("linux-nic")
    tcp, udp = get_workload("tcp"), get_workload("udp")

    def clean(workload, **changes):  # type: ignore[no-untyped-def]
        return bed.clean(space.settings(space.configuration(changes, base="vendor-guide")), workload)

    guide = clean(tcp)
    assert all(guide[k] < 1e-6 for k in ("qdisc_drops", "ring_drops", "backlog_drops", "socket_drops"))
    assert guide["rx_core_busy_pct"] < 90 and guide["tx_core_busy_pct"] < 90  # the wire limits it
    short_queue = clean(tcp, txqueuelen=1000)
    assert short_queue["qdisc_drops"] > 1 and max(short_queue["ring_drops"], short_queue["backlog_drops"]) < 1e-6
    assert short_queue["throughput_gbps"] < 0.98 * guide["throughput_gbps"]  # 3 %: a timeout now and then
    assert clean(tcp, rx_ring=256, tcp_rmem_max=67108864)["ring_drops"] > 0
    assert clean(tcp, gro=False)["rx_core_busy_pct"] > 95
    assert clean(tcp, tso=False, gso=False)["tx_core_busy_pct"] > 95
    assert clean(udp, rmem_default=212992, rmem_max=212992)["socket_drops"] > clean(udp)["socket_drops"]
    # Measured samples count whole packets, and noise never makes a core busier than 100 %.
    settings = space.settings(space.configuration({"txqueuelen": 1000}, base="vendor-guide"))
    for sample in SimTestbed(PROFILES["sim:benson-40g"], noise=0.03).measure(settings, tcp, 5, seed=2).samples:
        assert sample.metrics["qdisc_drops"] > 0 and sample.metrics["qdisc_drops"].is_integer()
        assert 0 <= sample.metrics["rx_core_busy_pct"] <= 100


def test_a_short_run_reads_the_warm_up_and_more_noise_and_a_ten_second_run_reads_as_the_model_says() -> None:
    """Short runs on the model (issue 29): a 2 s run still sees the warm-up transient (it reads
    high, as short veth runs did), TCP without a warm-up left out its slow start too, and it
    averages less of the noise; the default 10 s run is unchanged."""
    from nictune.measure.sim.fidelity import noise_factor, rate_factor

    bed = open_testbed("sim:benson-40g", noise=0.03)
    space = load_space(bed.default_space())
    settings = space.settings(space.profile("baseline"))
    full, short = get_workload("tcp"), get_workload("tcp", duration_s=2)
    model = bed.clean(settings, full)["throughput_gbps"]  # type: ignore[attr-defined]
    from nictune.measure.sim.model import evaluate

    assert model == evaluate(PROFILES["sim:benson-40g"], settings, full).metrics["throughput_gbps"]
    short_clean = bed.clean(settings, short)["throughput_gbps"]  # type: ignore[attr-defined]
    assert short_clean == pytest.approx(model * rate_factor("tcp", 2.0, 1.0)) and short_clean > model
    assert 1.0 < rate_factor("tcp", 4.0, 1.0) < rate_factor("tcp", 2.0, 1.0) < rate_factor("tcp", 1.0, 1.0) < 1.1
    assert rate_factor("tcp", 1.0, 0.0) < rate_factor("tcp", 1.0, 1.0)  # slow start, when not left out
    assert rate_factor("udp", 1.0, 0.0) > rate_factor("udp", 1.0, 1.0)  # no slow start: only the transient
    assert rate_factor("tcp", 10.0, 1.0) == 1.0 and noise_factor(10.0) == 1.0
    mid = space.settings(space.default())  # away from the wire ceiling, where noise is symmetric
    cvs = {}
    for wl in (full, short):
        xs = [s.metrics["throughput_gbps"] for s in bed.measure(mid, wl, 200, seed=5).samples]
        cvs[wl.duration_s] = statistics.stdev(xs) / statistics.fmean(xs)
    assert cvs[2.0] / cvs[10.0] == pytest.approx(noise_factor(2.0), rel=0.2)
