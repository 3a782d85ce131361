"""Request/response latency with sockperf between two hosts: the command lines, the output
turned into :data:`~nictune.measure._base.LATENCY_METRICS`, and one run.

The receiver runs ``sockperf server -i ADDR -p PORT [--tcp]``; sockperf's server has no
one-off mode, so it is stopped once the client is done. The sender runs the client,
``sockperf ping-pong|under-load -i ADDR -p PORT -m SIZE -t SECONDS --full-rtt [--mps N]
[--tcp]``. Both are pinned like iperf3 (``taskset -c``), on the same CPUs.

What sockperf 3.7 does, checked against the installed one (``tests/measure/data/sockperf``
holds real outputs):

- ``--full-rtt``: every figure is the round trip, request out and reply back; without it
  sockperf halves them. So the metrics are round trips whatever the mode or protocol.
- ``-t`` takes whole seconds (``-t 1.5`` runs one second), and the first ~0.45 s are a
  warm-up left out of the figures (``[Valid Duration] RunTime=1.550 sec`` of a 2 s run).
- ``under-load`` sends at ``--mps`` and times only a sample of the messages (about a
  hundred a second), so its high percentiles rest on few observations.
- Figures are in microseconds (``Summary: Round trip is 30.163 usec``).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any, get_args

from nictune.errors import InvalidInputError, MeasurementError
from nictune.measure._base import LatencyMode, LatencyProbe, Protocol, Sample
from nictune.measure.benchmarks.benchmark import TIMEOUT_MARGIN_S, Endpoints, pinned, run_client, serving
from nictune.measure.validation import check_int, check_token, invalid

#: The Debian (and Ubuntu) package that installs sockperf.
PACKAGE = "sockperf"
#: sockperf's smallest message (its header) and the largest UDP payload.
MIN_MSG_SIZE, MAX_MSG_SIZE = 14, 65507
MAX_DURATION_S = 3600
MAX_RATE_MPS = 10_000_000
#: Seconds sockperf spends before it times anything (its warm-up), for the hard timeout.
WARMUP_S = 1.0
#: The percentiles reported as metrics (sockperf's ``percentile 50.000`` ...).
PERCENTILE_METRICS = {"50.000": "latency_p50_us", "99.000": "latency_p99_us", "99.900": "latency_p999_us"}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUMBER = r"(-?\d+(?:\.\d+)?)"


def check_probe(probe: LatencyProbe) -> LatencyProbe:
    """Every field of ``probe`` as sockperf takes it.

    Raises:
        InvalidInputError: naming the field (``latency.msg_size`` ...) and the allowed values.
    """
    check_token("latency.mode", probe.mode, get_args(LatencyMode))
    check_token("latency.protocol", probe.protocol, get_args(Protocol))
    check_int("latency.msg_size", probe.msg_size, MIN_MSG_SIZE, MAX_MSG_SIZE)
    if probe.rate_mps is not None:
        check_int("latency.rate_mps", probe.rate_mps, 1, MAX_RATE_MPS)
    elif probe.mode == "under-load":
        raise InvalidInputError(
            "latency.rate_mps: under-load sends at a given message rate, and none is set",
            field="latency.rate_mps", allowed=f"messages per second, an integer from 1 to {MAX_RATE_MPS}",
        )
    duration = probe.duration_s
    if (isinstance(duration, bool) or not isinstance(duration, int | float) or not float(duration).is_integer()
            or not 1 <= duration <= MAX_DURATION_S):
        raise invalid("latency.duration_s", duration,
                      f"whole seconds from 1 to {MAX_DURATION_S} (sockperf -t takes whole seconds)")
    return probe


def server_argv(address: str, port: int, protocol: str = "udp", cpus: str | None = None) -> list[str]:
    """The server command, bound to ``address``."""
    argv = ["sockperf", "server", "-i", check_token("address", address), "-p", str(check_int("port", port, 1, 65535))]
    if check_token("latency.protocol", protocol, get_args(Protocol)) == "tcp":
        argv.append("--tcp")
    return pinned(argv, cpus)


def client_argv(probe: LatencyProbe, address: str, port: int, cpus: str | None = None) -> list[str]:
    """The client command for ``probe``, figures as round trips (``--full-rtt``)."""
    check_probe(probe)
    argv = ["sockperf", probe.mode, "-i", check_token("address", address), "-p", str(check_int("port", port, 1, 65535)),
            "-m", str(probe.msg_size), "-t", str(int(probe.duration_s)), "--full-rtt"]
    if probe.rate_mps is not None:
        argv += ["--mps", str(probe.rate_mps)]
    if probe.protocol == "tcp":
        argv.append("--tcp")
    return pinned(argv, cpus)


def benchmark_argvs(
    ends: Endpoints, probe: LatencyProbe, sender_cpus: str | None = None, receiver_cpus: str | None = None
) -> tuple[list[str], list[str], float]:
    """``(server argv, client argv, hard timeout in seconds)`` of one run of ``probe``: the
    server on the receiver (:attr:`Endpoints.latency_port`), the client on the sender."""
    hard_timeout = float(probe.duration_s) + WARMUP_S + TIMEOUT_MARGIN_S
    server = server_argv(ends.receiver_address, ends.latency_port, probe.protocol, receiver_cpus)
    return server, client_argv(probe, ends.receiver_address, ends.latency_port, sender_cpus), hard_timeout


def _find(pattern: str, text: str) -> re.Match[str] | None:
    return re.search(pattern, text, re.MULTILINE)


def parse_output(text: str) -> tuple[dict[str, float], dict[str, Any]]:
    """The latency metrics (round trip, microseconds) and a summary from a client's output.

    The summary holds the observations, the messages sent and received in the timed part,
    the dropped, duplicated and out-of-order counts, the spread (std-dev, min, max) and
    every percentile sockperf printed.

    Raises:
        MeasurementError: no round-trip figures in the output (no reply came back, no
            ``--full-rtt``, not sockperf's output).
    """
    clean = _ANSI.sub("", text)
    if "No messages were received from the server" in clean:
        raise MeasurementError("sockperf: no reply came back from the server (is its port reachable?)")
    if _find(r"avg-lat(ency)?=", clean):
        raise MeasurementError("sockperf printed one-way latency (half the round trip): the client ran "
                               "without --full-rtt")
    unit = _find(rf"Summary: Round trip is {_NUMBER} (\w+)", clean)
    mean = _find(rf"avg-rtt={_NUMBER}(?: \(std-dev={_NUMBER}\))?", clean)
    percentiles = {m.group(1): float(m.group(2))
                   for m in re.finditer(rf"percentile (\d+\.\d+) =\s*{_NUMBER}", clean)}
    if unit is None or mean is None or not set(PERCENTILE_METRICS) <= set(percentiles):
        raise MeasurementError(f"sockperf printed no round-trip figures: {clean.strip()[-300:]!r}")
    if unit.group(2) != "usec":
        raise MeasurementError(f"sockperf reported its round trip in {unit.group(2)!r}, not usec")
    metrics = {name: percentiles[p] for p, name in PERCENTILE_METRICS.items()}
    metrics["latency_mean_us"] = float(mean.group(1))
    summary: dict[str, Any] = {"percentiles_us": {p.rstrip("0").rstrip("."): v for p, v in percentiles.items()}}
    if mean.group(2) is not None:
        summary["std_dev_us"] = float(mean.group(2))
    fields = {
        "observations": rf"Total {_NUMBER} observations",
        "valid_s": rf"\[Valid Duration\] RunTime={_NUMBER} sec",
        "sent": rf"\[Valid Duration\].*SentMessages={_NUMBER}",
        "received": rf"\[Valid Duration\].*ReceivedMessages={_NUMBER}",
        "dropped": rf"# dropped messages = {_NUMBER}",
        "duplicated": rf"# duplicated messages = {_NUMBER}",
        "out_of_order": rf"# out-of-order messages = {_NUMBER}",
        "max_us": rf"<MAX> observation =\s*{_NUMBER}",
        "min_us": rf"<MIN> observation =\s*{_NUMBER}",
    }
    for key, pattern in fields.items():
        found = _find(pattern, clean)
        if found is not None:
            summary[key] = float(found.group(1))
    if not summary.get("observations", 1):
        raise MeasurementError("sockperf timed no message (0 observations)")
    return metrics, summary


def run_sockperf(
    ends: Endpoints, probe: LatencyProbe, sender_cpus: str | None = None, receiver_cpus: str | None = None
) -> Sample:
    """One latency run; both ends are stopped whatever happens. The sample's counters hold
    the summary under ``sockperf``.

    Raises:
        MeasurementError: sockperf failed, timed out or printed unusable output.
    """
    server_cmd, argv, hard_timeout = benchmark_argvs(ends, probe, sender_cpus, receiver_cpus)
    started = datetime.now(UTC)
    t0 = time.monotonic()
    with serving(ends.receiver, server_cmd, ends.latency_port, "sockperf", probe.protocol, "sockperf_port"):
        client = run_client(ends.sender, argv, hard_timeout, "sockperf")
    if client.returncode != 0 and "percentile" not in client.stdout:
        raise MeasurementError(f"sockperf client failed (exit status {client.returncode}): "
                               f"{(client.stderr.strip() or client.stdout.strip())[-300:]}")
    metrics, summary = parse_output(client.stdout)
    summary["window_s"] = round(time.monotonic() - t0, 3)
    return Sample(metrics, started, datetime.now(UTC), {"sockperf": summary})
