"""sockperf: its command lines and output (recorded from the installed 3.7), and the latency
workloads measured for real between the namespaces of a veth pair."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from nictune.errors import InvalidInputError, MeasurementError
from nictune.measure._base import LATENCY_METRICS, UNMEASURED, LatencyProbe
from nictune.measure.benchmarks.benchmark import Endpoints, missing_programs, wait_listening
from nictune.measure.benchmarks.sockperf import benchmark_argvs, check_probe, client_argv, parse_output, server_argv
from nictune.measure.benchmarks.workloads import WORKLOADS
from nictune.measure.hosts import LocalHost
from nictune.measure.testbeds.veth import VethPair, VethTestbed
from nictune.measure.trial.transaction import check_workload
from nictune.search_spaces._base import Family, Setting
from tests.measure.support import global_sysctls, leftover_processes, wait_no_processes

DATA = Path(__file__).parent / "data" / "sockperf"
needs_sockperf = pytest.mark.skipif(shutil.which("sockperf") is None, reason="sockperf is not installed")


def recorded(name: str) -> str:
    return (DATA / f"{name}.txt").read_text()


def test_server_and_client_command_lines() -> None:
    assert server_argv("10.0.0.2", 5202) == ["sockperf", "server", "-i", "10.0.0.2", "-p", "5202"]
    assert server_argv("10.0.0.2", 5202, "tcp", "1") == [
        "taskset", "-c", "1", "sockperf", "server", "-i", "10.0.0.2", "-p", "5202", "--tcp"]
    assert client_argv(LatencyProbe("ping-pong", "udp", 64, duration_s=2), "10.0.0.2", 5202) == [
        "sockperf", "ping-pong", "-i", "10.0.0.2", "-p", "5202", "-m", "64", "-t", "2", "--full-rtt"]
    assert client_argv(LatencyProbe("under-load", "tcp", 256, 20_000, 3.0), "10.0.0.2", 5202, "0-1") == [
        "taskset", "-c", "0-1", "sockperf", "under-load", "-i", "10.0.0.2", "-p", "5202", "-m", "256", "-t", "3",
        "--full-rtt", "--mps", "20000", "--tcp"]


def test_sockperf_gets_the_port_after_iperf3_s_unless_one_is_set() -> None:
    host = LocalHost()
    ends = Endpoints(host, host, "a", "b", "10.0.0.2", 5201)
    server, client, timeout = benchmark_argvs(ends, LatencyProbe(duration_s=2), "0", "1")
    assert server[:3] == ["taskset", "-c", "1"] and server[-1] == "5202"
    assert client[:3] == ["taskset", "-c", "0"] and client[client.index("-p") + 1] == "5202"
    assert timeout > 2
    assert replace(ends, port=65535).latency_port == 65534
    assert replace(ends, sockperf_port=6000).latency_port == 6000
    with pytest.raises(InvalidInputError):
        replace(ends, sockperf_port=80)


@pytest.mark.parametrize(("probe", "field"), [
    (LatencyProbe(msg_size=10), "latency.msg_size"),
    (LatencyProbe(msg_size=70_000), "latency.msg_size"),
    (LatencyProbe(mode="under-load"), "latency.rate_mps"),  # under-load needs a rate
    (LatencyProbe(rate_mps=0), "latency.rate_mps"),
    (LatencyProbe(duration_s=1.5), "latency.duration_s"),  # sockperf -t takes whole seconds
    (LatencyProbe(duration_s=0), "latency.duration_s"),
    (LatencyProbe(mode="burst"), "latency.mode"),  # type: ignore[arg-type]
    (LatencyProbe(protocol="sctp"), "latency.protocol"),  # type: ignore[arg-type]
])
def test_a_value_sockperf_cannot_take_is_refused_naming_its_field(probe: LatencyProbe, field: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        client_argv(probe, "10.0.0.2", 5202)
    assert err.value.field == field and err.value.allowed


def test_an_address_that_is_no_word_never_reaches_an_argv() -> None:
    with pytest.raises(InvalidInputError):
        server_argv("10.0.0.2; reboot", 5202)
    with pytest.raises(InvalidInputError):
        client_argv(LatencyProbe(), "a b", 5202)


def test_ping_pong_output_gives_the_round_trip_metrics() -> None:
    metrics, summary = parse_output(recorded("ping-pong-udp"))
    assert metrics == {"latency_p50_us": 25.667, "latency_p99_us": 58.379, "latency_p999_us": 179.384,
                       "latency_mean_us": 28.072}
    assert summary["observations"] == 55088 and summary["sent"] == summary["received"] == 55088
    assert summary["dropped"] == summary["duplicated"] == summary["out_of_order"] == 0
    assert summary["valid_s"] == 1.55 and summary["std_dev_us"] == 24.951
    assert summary["min_us"] == 15.368 and summary["max_us"] == 3022.137
    assert summary["percentiles_us"]["99.99"] == 698.713 and summary["percentiles_us"]["25"] == 23.734


def test_under_load_and_tcp_outputs_parse_alike() -> None:
    metrics, summary = parse_output(recorded("under-load-udp"))
    # under-load times a sample of the messages it sends: few observations
    assert summary["sent"] == 15201 and summary["observations"] == summary["received"] == 153
    assert metrics["latency_p50_us"] == 83.706 and metrics["latency_mean_us"] == 163.552
    metrics, _ = parse_output(recorded("ping-pong-tcp"))
    assert metrics["latency_p99_us"] == 58.82
    for name in ("ping-pong-udp", "under-load-udp", "ping-pong-tcp"):
        m, _ = parse_output(recorded(name))
        assert set(m) == set(LATENCY_METRICS)
        assert m["latency_p50_us"] <= m["latency_p99_us"] <= m["latency_p999_us"]


@pytest.mark.parametrize(("text", "why"), [
    ("sockperf: No messages were received from the server. Is the server down?\n", "no reply came back"),
    ("", "no round-trip figures"),
    ("iperf3: error - unable to connect", "no round-trip figures"),
])
def test_unusable_output_is_a_clear_measurement_error(text: str, why: str) -> None:
    with pytest.raises(MeasurementError, match=why):
        parse_output(text)


def test_one_way_figures_or_another_unit_are_refused() -> None:
    # Without --full-rtt sockperf prints half the round trip: never mixed with round trips.
    one_way = recorded("ping-pong-udp").replace("avg-rtt", "avg-latency").replace("Round trip is", "Latency is")
    with pytest.raises(MeasurementError, match="one-way"):
        parse_output(one_way)
    with pytest.raises(MeasurementError, match="msec"):
        parse_output(recorded("ping-pong-udp").replace("usec", "msec"))
    missing = "\n".join(line for line in recorded("ping-pong-udp").splitlines() if "percentile 99.900" not in line)
    with pytest.raises(MeasurementError, match="no round-trip figures"):
        parse_output(missing)


def test_the_built_in_latency_workloads_are_ones_sockperf_takes() -> None:
    for name in ("latency", "tcp+latency"):
        probe = WORKLOADS[name].latency
        assert probe is not None and check_probe(probe) is probe


class BareHost(LocalHost):
    """This machine with nothing but ``sh`` on its PATH: a host where sockperf is not installed."""

    def __init__(self, bin_dir: Path) -> None:
        super().__init__()
        self.name = "bare"
        self.bin_dir = bin_dir

    def local_argv(self, argv: list[str]) -> list[str]:
        return ["env", f"PATH={self.bin_dir}", *argv]


@pytest.mark.system
def test_a_host_without_sockperf_is_named_with_its_package_before_a_trial(tmp_path: Path) -> None:
    (tmp_path / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    bare = BareHost(tmp_path)
    assert missing_programs(bare, ["sh", "sockperf"]) == ["sockperf"]
    ends = Endpoints(LocalHost(), bare, "lo", "lo", "127.0.0.1")
    with pytest.raises(MeasurementError) as err:
        check_workload(ends, WORKLOADS["latency"])
    assert "not installed on the receiver bare" in str(err.value) and "Debian package sockperf" in str(err.value)
    check_workload(ends, WORKLOADS["tcp"])  # no latency part: sockperf is not needed
    with pytest.raises(InvalidInputError):  # the latency part is checked before any host is asked
        check_workload(ends, replace(WORKLOADS["latency"], latency=LatencyProbe(msg_size=1)))


# ---------------------------------------------------------------- real runs (veth)

def _sane(metrics: dict[str, float]) -> None:
    p50, p99, p999, mean = (metrics[m] for m in LATENCY_METRICS)
    # a veth round trip is microseconds to milliseconds, never zero, never seconds
    assert 1 < p50 <= p99 <= p999 < 1_000_000, metrics
    assert 1 < mean < 1_000_000, metrics


@needs_sockperf
@pytest.mark.netns
def test_latency_workload_reports_round_trips_only_and_restores(veth_pair: VethPair, state_dir: Path) -> None:
    before = global_sysctls()
    busy_poll = Path("/proc/sys/net/core/busy_poll").read_text()
    wl = replace(WORKLOADS["latency"], latency=LatencyProbe("ping-pong", "udp", 64, duration_s=2))
    tb = VethTestbed(veth_pair.name, port=5341, state_dir=state_dir)
    settings = [Setting(Family.SYSCTL, "net.core.busy_poll", 50), Setting(Family.SYSCTL, "net.core.busy_read", 50),
                Setting(Family.PLACEMENT, "cpus", "0")]
    result = tb.measure(settings, wl, 1, 0)
    (sample,) = result.samples
    assert set(sample.metrics) == set(LATENCY_METRICS)  # no iperf3 ran: no throughput figure
    _sane(sample.metrics)
    summary = sample.counters["sockperf"]
    assert summary["observations"] > 100 and summary["dropped"] == 0
    assert "iperf3" not in sample.counters
    assert "sender 0, receiver 0" in result.notes[0]
    assert Path("/proc/sys/net/core/busy_poll").read_text() == busy_poll
    assert global_sysctls() == before
    assert not wait_no_processes(5)


@needs_sockperf
@pytest.mark.netns
def test_tcp_plus_latency_reports_both_parts_in_one_sample(veth_pair: VethPair, state_dir: Path) -> None:
    wl = replace(WORKLOADS["tcp+latency"], duration_s=1, omit_s=0,
                 latency=LatencyProbe("under-load", "tcp", 128, 5_000, duration_s=2))
    tb = VethTestbed(veth_pair.name, port=5343, state_dir=state_dir)
    (sample,) = tb.measure([], wl, 1, 0).samples
    assert set(sample.metrics) == set(wl.measures()) - set(UNMEASURED["veth"])
    assert sample.metrics["throughput_gbps"] > 0
    _sane(sample.metrics)
    assert sample.counters["sockperf"]["sent"] > sample.counters["sockperf"]["observations"] > 0
    assert "iperf3" in sample.counters and sample.finished_at > sample.started_at
    assert not leftover_processes()


@needs_sockperf
@pytest.mark.netns
def test_a_taken_sockperf_port_fails_the_trial_at_once(veth_pair: VethPair, state_dir: Path) -> None:
    rx = veth_pair.receiver()
    holder = rx.spawn(["sockperf", "server", "-i", veth_pair.rx_address, "-p", "5346"])
    try:
        wait_listening(rx, holder, 5346, "sockperf", "udp")
        tb = VethTestbed(veth_pair.name, port=5345, state_dir=state_dir)
        wl = replace(WORKLOADS["latency"], latency=LatencyProbe(duration_s=1))
        with pytest.raises(MeasurementError, match=r"port 5346 .* is taken by another program"):
            tb.measure([], wl, 1, 0)
    finally:
        holder.stop()
    assert not wait_no_processes(5)
