"""iperf3 between the namespaces of a veth pair, and the command lines and parsing behind it."""

from __future__ import annotations

import pytest

from nictune.errors import MeasurementError
from nictune.measure._base import LATENCY_METRICS, METRICS, UNMEASURED, Workload
from nictune.measure.benchmarks.busy import BusyLoad
from nictune.measure.benchmarks.counters import (
    bottleneck_metrics,
    busiest_core_pct,
    counter_delta,
    derive,
    qdisc_drops,
    read_counters,
    read_sender_counters,
)
from nictune.measure.benchmarks.iperf3 import (
    Endpoints,
    client_argv,
    parse_client_json,
    run_iperf3,
    server_argv,
)
from nictune.measure.hosts import LocalHost
from nictune.measure.testbeds.veth import VethPair
from nictune.measure.topology import online_cpus
from tests.measure.support import leftover_processes


def ends_of(pair: VethPair, port: int = 5311) -> Endpoints:
    return Endpoints(pair.sender(), pair.receiver(), pair.tx, pair.rx, pair.rx_address, port)


@pytest.mark.netns
def test_tcp_run_gives_sane_metrics(veth_pair: VethPair) -> None:
    wl = Workload("tcp", "tcp", duration_s=2, omit_s=0)
    sample = run_iperf3(ends_of(veth_pair), wl)
    m = sample.metrics
    # veth has no IRQs: no interrupt figure (UNMEASURED), every other metric iperf3's run gives
    assert set(m) == set(wl.measures()) - set(UNMEASURED["veth"])
    assert set(m) == set(METRICS) - set(UNMEASURED["veth"]) - set(LATENCY_METRICS)
    assert 0.05 < m["throughput_gbps"] < 400
    assert m["packet_rate_mpps"] > 0 and m["cpu_rx_pct"] > 0 and m["cpu_tx_pct"] > 0
    assert m["retransmits"] >= 0 and 0 <= m["loss_pct"] < 100
    assert sample.counters["delta"]["irq_lines"] == 0
    # The bottleneck counters: where packets were dropped, how busy each end's busiest core was.
    assert all(m[k] >= 0 for k in ("qdisc_drops", "ring_drops", "backlog_drops", "socket_drops"))
    assert 0 < m["tx_core_busy_pct"] <= 100 and 0 < m["rx_core_busy_pct"] <= 100
    delta = sample.counters["delta"]
    assert delta["dev_rx_bytes"] >= sample.counters["iperf3"]["received_bytes"] > 0
    assert sample.finished_at > sample.started_at
    assert not leftover_processes()


@pytest.mark.netns
def test_udp_run_gives_sane_metrics(veth_pair: VethPair) -> None:
    wl = Workload("udp", "udp", length=1400, bitrate_gbps=0.5, duration_s=2, omit_s=0)
    sample = run_iperf3(ends_of(veth_pair), wl, sender_cpus="0", receiver_cpus="0")
    m = sample.metrics
    assert set(m) == set(wl.measures()) - set(UNMEASURED["veth"])
    assert 0.05 < m["throughput_gbps"] <= 0.55
    # 0.5 Gbit/s of 1400-byte datagrams is about 0.045 Mpps
    assert 0.02 < m["packet_rate_mpps"] < 0.05
    assert 0 <= m["loss_pct"] <= 100 and m["retransmits"] == 0
    derived = sample.counters["derived"]
    assert 0 <= derived["udp_loss_pct_counters"] <= 100
    assert sample.counters["delta"]["udp_in_datagrams"] > 0


@pytest.mark.netns
def test_a_full_sender_qdisc_is_counted_where_it_dropped(veth_pair: VethPair) -> None:
    """A token bucket of 50 Mbit/s in front of 500 Mbit/s of UDP: the datagrams die in the
    sender's qdisc, and the run says so (``tc -s qdisc``), not at the receiver."""
    tx = veth_pair.sender()
    tx.run(["tc", "qdisc", "replace", "dev", veth_pair.tx, "root", "tbf", "rate", "50mbit", "burst", "16kb",
            "limit", "30000"])
    wl = Workload("udp", "udp", length=1400, bitrate_gbps=0.5, duration_s=2, omit_s=0)
    try:
        m = run_iperf3(ends_of(veth_pair), wl).metrics
    finally:
        tx.run(["tc", "qdisc", "del", "dev", veth_pair.tx, "root"], check=False)
    assert m["loss_pct"] > 50 and m["qdisc_drops"] > 1000, m
    assert m["socket_drops"] == 0 and m["ring_drops"] == 0, m


@pytest.mark.netns
def test_busy_load_starts_and_always_stops(veth_pair: VethPair) -> None:
    cpus = online_cpus(LocalHost())
    with BusyLoad([veth_pair.sender(), veth_pair.receiver()], exclude=[0]) as load:
        # both namespaces are one machine: one loop per CPU except 0, not two
        assert len(load.processes) == len(cpus) - 1
        assert all(p.poll() is None for p in load.processes)
    assert not leftover_processes()


@pytest.mark.netns
def test_counters_on_the_receiver(veth_pair: VethPair) -> None:
    rx = veth_pair.receiver()
    before = read_counters(rx, veth_pair.rx)
    veth_pair.sender().run(["ping", "-c", "3", "-i", "0.2", "-q", veth_pair.rx_address])
    delta = counter_delta(before, read_counters(rx, veth_pair.rx))
    assert delta["dev_rx_packets"] >= 3 and delta["irq_lines"] == 0
    assert derive(delta, 1.0, 1e9)["interrupts_per_gb"] == 0


def test_bottleneck_counters_from_the_two_deltas() -> None:
    tc = ('[{"kind":"mq","handle":"0:","root":true,"drops":7},'
          ' {"kind":"fq_codel","handle":"0:","parent":":1","drops":7}, {"kind":"noqueue","drops":3}]')
    assert qdisc_drops(tc) == 7  # the root's count holds its children's
    assert qdisc_drops("[]") is None and qdisc_drops("not json") is None
    receiver = {"dev_rx_drop": 5, "softnet_dropped": 2, "udp_rcvbuf_errors": 9,
                "cpu0_busy": 50, "cpu0_total": 100, "cpu1_busy": 97, "cpu1_total": 100}
    sender = {"qdisc_drops": 4, "cpu0_busy": 10, "cpu0_total": 100, "cpu1_total": 0}
    assert busiest_core_pct(receiver) == 97.0 and busiest_core_pct({"irq_total": 3}) is None
    assert bottleneck_metrics(receiver, sender, "udp") == {
        "ring_drops": 5.0, "backlog_drops": 2.0, "socket_drops": 9.0, "qdisc_drops": 4.0,
        "rx_core_busy_pct": 97.0, "tx_core_busy_pct": 10.0}
    # TCP has no socket drops to count; a sender without a qdisc count leaves it out.
    tcp = bottleneck_metrics(receiver, {"cpu0_busy": 1, "cpu0_total": 4}, "tcp")
    assert tcp["socket_drops"] == 0.0 and "qdisc_drops" not in tcp and tcp["tx_core_busy_pct"] == 25.0


@pytest.mark.netns
def test_sender_counters_read_the_cpus_and_the_root_qdisc(veth_pair: VethPair) -> None:
    tx = veth_pair.sender()
    tx.run(["tc", "qdisc", "replace", "dev", veth_pair.tx, "root", "pfifo", "limit", "100"])
    try:
        before = read_sender_counters(tx, veth_pair.tx)
        tx.run(["ping", "-c", "3", "-i", "0.2", "-q", veth_pair.rx_address])
        delta = counter_delta(before, read_sender_counters(tx, veth_pair.tx))
    finally:
        tx.run(["tc", "qdisc", "del", "dev", veth_pair.tx, "root"], check=False)
    assert delta["qdisc_drops"] == 0  # three pings do not fill a 100-packet queue
    busiest = busiest_core_pct(delta)
    assert busiest is not None and 0 <= busiest <= 100


def test_command_lines() -> None:
    wl = Workload("u", "udp", streams=2, length=1472, bitrate_gbps=2.5, duration_s=3, omit_s=1)
    assert client_argv(wl, "10.0.0.2", 5201, "2-3") == [
        "taskset", "-c", "2-3", "iperf3", "-c", "10.0.0.2", "-p", "5201", "-J", "-t", "3",
        "-O", "1", "-i", "0.5", "-u", "-b", "2500000000", "-l", "1472", "-P", "2",
    ]  # fmt: skip
    # A run of 5 s or more reports every second, iperf3's default; a shorter one every half second.
    assert "-i" not in client_argv(Workload("t", "tcp", duration_s=10), "10.0.0.2", 5201)
    assert server_argv(5201, 20) == [
        "iperf3", "-s", "-1", "-p", "5201", "--idle-timeout", "20", "-J"
    ]


def test_intervals_leave_the_omitted_warm_up_out() -> None:
    """Issue 29: the per-interval rates a short run is judged by; iperf3 marks the ``-O`` ones."""
    from nictune.measure.benchmarks.iperf3 import interval_rates

    data = {"intervals": [{"sum": {"bits_per_second": 1e9, "seconds": 0.5, "omitted": True}},
                          {"sum": {"bits_per_second": 9e9, "seconds": 0.5, "omitted": False}},
                          {"sum": {"bits_per_second": 11e9, "seconds": 0.5}},
                          {"sum": {"bits_per_second": 5e9, "seconds": 0.0}}]}
    assert interval_rates(data) == [9.0, 11.0]
    assert interval_rates({}) == []


def test_parse_reports_iperf3_errors() -> None:
    wl = Workload("t", "tcp")
    with pytest.raises(MeasurementError, match="unable to connect"):
        parse_client_json('{"start": {}, "end": {}, "error": "unable to connect"}', wl)
    with pytest.raises(MeasurementError, match="no JSON"):
        parse_client_json("iperf3: error", wl)
    with pytest.raises(MeasurementError, match="lacks"):
        parse_client_json('{"end": {}}', wl)
