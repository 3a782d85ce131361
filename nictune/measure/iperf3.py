"""Run one iperf3 benchmark between two hosts and turn its JSON into :data:`METRICS`.

The receiver runs a one-off server (``iperf3 -s -1 -p PORT --idle-timeout N -J``), the
sender the client; both can be pinned with ``taskset -c``. The run has a hard timeout
(duration + warm-up + margin) after which both ends are killed. Counters are read on both
ends before and after (see :mod:`nictune.measure.counters`). The server's life and the
endpoints are :mod:`nictune.measure.benchmark`'s, shared with sockperf.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from nictune.errors import MeasurementError
from nictune.measure._base import Sample, Workload
from nictune.measure.benchmark import TIMEOUT_MARGIN_S, Endpoints, pinned, run_client, serving
from nictune.measure.counters import (
    bottleneck_metrics,
    counter_delta,
    derive,
    read_counters,
    read_sender_counters,
)
from nictune.measure.validation import check_int, check_token


def server_argv(port: int, idle_timeout: int, cpus: str | None = None) -> list[str]:
    """The one-off server command."""
    argv = ["iperf3", "-s", "-1", "-p", str(port), "--idle-timeout", str(idle_timeout), "-J"]
    return pinned(argv, cpus)


#: Runs shorter than this report every :data:`SHORT_INTERVAL_S` seconds instead of every
#: second (iperf3 ``-i``), so a 2 s screening run has four intervals to judge its stability by.
SHORT_INTERVALS_BELOW_S = 5.0
SHORT_INTERVAL_S = 0.5


def client_argv(
    workload: Workload, address: str, port: int, cpus: str | None = None
) -> list[str]:
    """The client command for ``workload``."""
    check_int("streams", workload.streams, 1, 128)
    argv = ["iperf3", "-c", check_token("address", address), "-p", str(port), "-J"]
    argv += ["-t", f"{float(workload.duration_s):g}", "-O", f"{float(workload.omit_s):g}"]
    if workload.duration_s < SHORT_INTERVALS_BELOW_S:  # a short run: enough intervals to judge its stability
        argv += ["-i", f"{SHORT_INTERVAL_S:g}"]
    if workload.protocol == "udp":
        rate = workload.bitrate_gbps
        argv += ["-u", "-b", str(int(rate * 1e9)) if rate else "0"]
    if workload.length is not None:
        argv += ["-l", str(check_int("length", workload.length, 1, 1 << 20))]
    if workload.streams > 1:
        argv += ["-P", str(workload.streams)]
    return pinned(argv, cpus)


def benchmark_argvs(
    ends: Endpoints, workload: Workload, sender_cpus: str | None = None, receiver_cpus: str | None = None
) -> tuple[list[str], list[str], float]:
    """``(server argv, client argv, hard timeout in seconds)`` of one run of ``workload``:
    the server runs on the receiver, the client on the sender (each argv before its host's
    wrapping, :meth:`Host.local_argv`)."""
    hard_timeout = float(workload.duration_s) + float(workload.omit_s) + TIMEOUT_MARGIN_S
    server = server_argv(ends.port, int(hard_timeout) + 5, receiver_cpus)
    return server, client_argv(workload, ends.receiver_address, ends.port, sender_cpus), hard_timeout


def parse_client_json(text: str, workload: Workload) -> tuple[dict[str, float], dict[str, Any]]:
    """Metrics and a summary from the client's ``-J`` output.

    Throughput is the receiver's (``end.sum_received``); for UDP loss comes from
    ``end.sum.lost_percent``; TCP loss is retransmitted segments in percent of the
    segments sent (bytes / MSS); CPU from ``end.cpu_utilization_percent``.

    Raises:
        MeasurementError: the output is not iperf3 JSON or reports an error.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MeasurementError(f"iperf3 client printed no JSON: {text[:200]!r}") from exc
    if data.get("error"):
        raise MeasurementError(f"iperf3: {data['error']}")
    try:
        end = data["end"]
        cpu = end.get("cpu_utilization_percent", {})
        received = end.get("sum_received") or end["sum"]
        seconds = float(received.get("seconds") or workload.duration_s)
        metrics = {
            "cpu_tx_pct": float(cpu.get("host_total", 0.0)),
            "cpu_rx_pct": float(cpu.get("remote_total", 0.0)),
        }
        if workload.protocol == "udp":
            udp = end["sum"]
            lost = float(udp.get("lost_percent", 0.0))
            packets = float(udp.get("packets", 0)) - float(udp.get("lost_packets", 0))
            gbps = float(received["bits_per_second"]) / 1e9
            if "sum_received" not in end:  # older iperf3: sum is the sender's count
                gbps *= 1.0 - lost / 100.0
            metrics |= {"throughput_gbps": gbps, "loss_pct": lost, "retransmits": 0.0}
            metrics["packet_rate_mpps"] = packets / seconds / 1e6
        else:
            sent = end["sum_sent"]
            retrans = float(sent.get("retransmits", 0))
            mss = float(data.get("start", {}).get("tcp_mss_default") or 1448)
            segments = max(float(sent.get("bytes", 0)) / mss, 1.0)
            metrics |= {
                "throughput_gbps": float(received["bits_per_second"]) / 1e9,
                "retransmits": retrans,
                "loss_pct": 100.0 * retrans / segments,
            }
        summary = {"received_bytes": float(received.get("bytes", 0)), "seconds": seconds,
                   "intervals_gbps": interval_rates(data)}
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasurementError(f"iperf3 JSON lacks {exc}") from exc
    return metrics, summary


def interval_rates(data: dict[str, Any]) -> list[float]:
    """Throughput of each reported interval (iperf3 ``intervals[].sum``), in Gbit/s, the
    omitted warm-up (``-O``) left out: what :func:`nictune.measure.stability.interval_cv` judges."""
    out: list[float] = []
    for interval in data.get("intervals") or []:
        total = interval.get("sum") or {}
        if total.get("omitted") or not total.get("seconds"):
            continue
        out.append(round(float(total.get("bits_per_second", 0.0)) / 1e9, 4))
    return out


def run_iperf3(
    ends: Endpoints,
    workload: Workload,
    sender_cpus: str | None = None,
    receiver_cpus: str | None = None,
) -> Sample:
    """One benchmark run; both ends are stopped whatever happens.

    Raises:
        MeasurementError: iperf3 failed, timed out or printed unusable output.
    """
    server_cmd, argv, hard_timeout = benchmark_argvs(ends, workload, sender_cpus, receiver_cpus)
    before = read_counters(ends.receiver, ends.receiver_device)
    sender_before = read_sender_counters(ends.sender, ends.sender_device)
    t0, started = time.monotonic(), datetime.now(UTC)
    with serving(ends.receiver, server_cmd, ends.port, "iperf3") as server:
        client = run_client(ends.sender, argv, hard_timeout, "iperf3")
        if client.returncode != 0 and not client.stdout.strip():
            raise MeasurementError(f"iperf3 client failed: {client.stderr.strip()[-300:]}")
        metrics, summary = parse_client_json(client.stdout, workload)
        server.wait(5.0)
    elapsed = time.monotonic() - t0
    after = read_counters(ends.receiver, ends.receiver_device)
    delta = counter_delta(before, after)
    sender_delta = counter_delta(sender_before, read_sender_counters(ends.sender, ends.sender_device))
    derived = derive(delta, elapsed, summary["received_bytes"])
    metrics |= bottleneck_metrics(delta, sender_delta, workload.protocol)
    if delta.get("irq_lines", 0) > 0:  # a device without IRQ lines (veth) has no interrupt figure, not 0
        metrics["interrupts_per_s"] = derived["interrupts_per_s"]
        metrics["interrupts_per_gb"] = derived["interrupts_per_gb"]
    if workload.protocol == "tcp":
        metrics["packet_rate_mpps"] = derived["rx_packets_per_s"] / 1e6
    counters = {"delta": delta, "sender_delta": sender_delta, "derived": derived, "iperf3": summary,
                "window_s": elapsed}
    return Sample(metrics, started, datetime.now(UTC), counters)
