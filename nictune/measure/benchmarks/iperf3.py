"""Run one iperf3 benchmark between two hosts and turn its JSON into :data:`METRICS`.

The receiver runs a one-off server (``iperf3 -s -1 -p PORT --idle-timeout N -J``), the
sender the client; both can be pinned with ``taskset -c``. The run has a hard timeout
(duration + warm-up + margin) after which both ends are killed. Counters are read on both
ends before and after (see :mod:`nictune.measure.benchmarks.counters`). The server's life and the
endpoints are :mod:`nictune.measure.benchmarks.benchmark`'s, shared with sockperf.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from nictune.errors import MeasurementError
from nictune.measure._base import Sample, Workload
from nictune.measure.benchmarks.benchmark import TIMEOUT_MARGIN_S, Endpoints, pinned, run_client, serving
from nictune.measure.benchmarks.counters import (
    bottleneck_metrics,
    counter_delta,
    derive,
    read_counters,
    read_sender_counters,
)
from nictune.measure.benchmarks.workload_spec import MAX_STREAMS, TCP_LENGTH, UDP_LENGTH
from nictune.measure.hosts import Host
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
    check_int("streams", workload.streams, 1, MAX_STREAMS)
    argv = ["iperf3", "-c", check_token("address", address), "-p", str(port), "-J"]
    argv += ["-t", f"{float(workload.duration_s):g}", "-O", f"{float(workload.omit_s):g}"]
    if workload.duration_s < SHORT_INTERVALS_BELOW_S:  # a short run: enough intervals to judge its stability
        argv += ["-i", f"{SHORT_INTERVAL_S:g}"]
    rate = workload.bitrate_gbps
    if workload.protocol == "udp":  # 0: as fast as the sender can (iperf3's UDP default is 1 Mbit/s)
        argv += ["-u", "-b", str(check_int("bitrate", round(rate * 1e9), 1)) if rate else "0"]
    elif rate:  # a TCP stream paced at this rate (iperf3 -b works for TCP too)
        argv += ["-b", str(check_int("bitrate", round(rate * 1e9), 1))]
    if workload.length is not None:
        lo, hi = UDP_LENGTH if workload.protocol == "udp" else TCP_LENGTH
        argv += ["-l", str(check_int("length", workload.length, lo, hi))]
    if workload.streams > 1:
        argv += ["-P", str(workload.streams)]
    if workload.reverse and workload.bidir:
        raise MeasurementError("a workload cannot be both reverse and bidirectional")
    if workload.reverse:
        argv.append("-R")
    elif workload.bidir:
        argv.append("--bidir")
    return pinned(argv, cpus)


def benchmark_argvs(
    ends: Endpoints, workload: Workload, sender_cpus: str | None = None, receiver_cpus: str | None = None
) -> tuple[list[str], list[str], float]:
    """``(server argv, client argv, hard timeout in seconds)`` of one run of ``workload``:
    the server runs on the receiver, the client on the sender (each argv before its host's
    wrapping, :meth:`Host.local_argv`)."""
    return iperf3_commands(workload, ends.receiver_address, ends.port, sender_cpus, receiver_cpus)


def iperf3_commands(
    workload: Workload, address: str = "RECEIVER", port: int = 5201, sender_cpus: str | None = None,
    receiver_cpus: str | None = None,
) -> tuple[list[str], list[str], float]:
    """:func:`benchmark_argvs` for an address and port (by default the shape ``nictune
    workloads show`` prints: RECEIVER for the receiver's address, iperf3's default port)."""
    hard_timeout = float(workload.duration_s) + float(workload.omit_s) + TIMEOUT_MARGIN_S
    server = server_argv(port, int(hard_timeout) + 5, receiver_cpus)
    return server, client_argv(workload, address, port, sender_cpus), hard_timeout


#: The JSON sums of each direction a run measures: (sent, received, UDP sum); ``--bidir``
#: adds the reverse direction's (server to client).
_FORWARD = ("sum_sent", "sum_received", "sum")
_BIDIR_REVERSE = ("sum_sent_bidir_reverse", "sum_received_bidir_reverse", "sum_bidir_reverse")


def parse_client_json(text: str, workload: Workload) -> tuple[dict[str, float], dict[str, Any]]:
    """Metrics and a summary from the client's ``-J`` output.

    Throughput is the receiver's (``end.sum_received``); for UDP loss comes from
    ``end.sum.lost_percent``; TCP loss is retransmitted segments in percent of the
    segments sent (bytes / MSS); CPU from ``end.cpu_utilization_percent``.

    Reverse (``-R``): the client still runs on the sender host, but the data flows to it, so
    its CPU (``host_total``) is the receiving side's and the server's the sending side's;
    iperf3's sums already count the server's sending and the client's receiving.
    Bidirectional (``--bidir``): throughput is what both ends received (``sum_received`` +
    ``sum_received_bidir_reverse``), loss and retransmits are over both directions, and the
    CPU figures stay per host (the client's host as ``cpu_tx_pct``: it sends the forward
    direction). ``summary["received_bytes"]`` is what the host whose counters are read
    received (:func:`receiving_end`): the forward direction's bytes for ``--bidir``.

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
        client_cpu, server_cpu = float(cpu.get("host_total", 0.0)), float(cpu.get("remote_total", 0.0))
        received = end.get("sum_received") or end["sum"]
        seconds = float(received.get("seconds") or workload.duration_s)
        metrics = {
            "cpu_tx_pct": server_cpu if workload.reverse else client_cpu,
            "cpu_rx_pct": client_cpu if workload.reverse else server_cpu,
        }
        directions = [_FORWARD, _BIDIR_REVERSE] if workload.bidir else [_FORWARD]
        if workload.bidir and _BIDIR_REVERSE[1] not in end:
            raise MeasurementError("iperf3 --bidir printed no sum_received_bidir_reverse (iperf3 3.7 or later needed)")
        gbps = 0.0
        if workload.protocol == "udp":
            packets = lost = delivered = 0.0
            for _, received_key, udp_key in directions:
                udp = end[udp_key]
                got = end.get(received_key) or udp
                rate = float(got["bits_per_second"]) / 1e9
                if received_key not in end:  # older iperf3: sum is the sender's count
                    rate *= 1.0 - float(udp.get("lost_percent", 0.0)) / 100.0
                gbps += rate
                packets += float(udp.get("packets", 0))
                lost += float(udp.get("lost_packets", 0))
                delivered += float(udp.get("packets", 0)) - float(udp.get("lost_packets", 0))
            loss = (float(end["sum"].get("lost_percent", 0.0)) if len(directions) == 1
                    else 100.0 * lost / max(packets, 1.0))
            metrics |= {"throughput_gbps": gbps, "loss_pct": loss, "retransmits": 0.0,
                        "packet_rate_mpps": delivered / seconds / 1e6}
        else:
            retrans = sent_bytes = 0.0
            for sent_key, received_key, _ in directions:
                retrans += float(end[sent_key].get("retransmits", 0))
                sent_bytes += float(end[sent_key].get("bytes", 0))
                gbps += float(end[received_key]["bits_per_second"]) / 1e9
            mss = float(data.get("start", {}).get("tcp_mss_default") or 1448)
            segments = max(sent_bytes / mss, 1.0)
            metrics |= {"throughput_gbps": gbps, "retransmits": retrans, "loss_pct": 100.0 * retrans / segments}
        summary = {"received_bytes": float(received.get("bytes", 0)), "seconds": seconds,
                   "intervals_gbps": interval_rates(data)}
        if workload.bidir:
            summary["received_bytes_both"] = sum(float((end.get(r) or end[u]).get("bytes", 0))
                                                 for _, r, u in directions)
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasurementError(f"iperf3 JSON lacks {exc}") from exc
    return metrics, summary


def interval_rates(data: dict[str, Any]) -> list[float]:
    """Throughput of each reported interval (iperf3 ``intervals[].sum``, plus
    ``sum_bidir_reverse`` with ``--bidir``), in Gbit/s, the omitted warm-up (``-O``) left
    out: what :func:`nictune.measure.stability.interval_cv` judges."""
    out: list[float] = []
    for interval in data.get("intervals") or []:
        total = interval.get("sum") or {}
        if total.get("omitted") or not total.get("seconds"):
            continue
        back = interval.get("sum_bidir_reverse") or {}
        out.append(round((float(total.get("bits_per_second", 0.0)) + float(back.get("bits_per_second", 0.0))) / 1e9,
                         4))
    return out


def receiving_end(ends: Endpoints, workload: Workload) -> tuple[Host, str, Host, str]:
    """``(host, device)`` of the receiving side and of the sending side of ``workload``'s data,
    whose counters are read around a run.

    Forward, the data flows from the client (``ends.sender``) to the server
    (``ends.receiver``). Reverse (``-R``) it flows from the server to the client, so the
    receiving side is ``ends.sender``: its drops, interrupts and busiest core are the
    receiver's figures. With ``--bidir`` both hosts send and receive; the counters are read
    as forward (``ends.receiver`` as the receiver), so drops, interrupts, core figures and the TCP packet rate are
    that host's, and ``interrupts_per_gb`` is per gigabyte it received.
    """
    if workload.reverse:
        return ends.sender, ends.sender_device, ends.receiver, ends.receiver_device
    return ends.receiver, ends.receiver_device, ends.sender, ends.sender_device


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
    rx_host, rx_device, tx_host, tx_device = receiving_end(ends, workload)
    before = read_counters(rx_host, rx_device)
    sender_before = read_sender_counters(tx_host, tx_device)
    t0, started = time.monotonic(), datetime.now(UTC)
    with serving(ends.receiver, server_cmd, ends.port, "iperf3") as server:
        client = run_client(ends.sender, argv, hard_timeout, "iperf3")
        if client.returncode != 0 and not client.stdout.strip():
            raise MeasurementError(f"iperf3 client failed: {client.stderr.strip()[-300:]}")
        metrics, summary = parse_client_json(client.stdout, workload)
        server.wait(5.0)
    elapsed = time.monotonic() - t0
    after = read_counters(rx_host, rx_device)
    delta = counter_delta(before, after)
    sender_delta = counter_delta(sender_before, read_sender_counters(tx_host, tx_device))
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
