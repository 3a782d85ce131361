"""Built-in workloads (what iperf3 sends) and parsing of workload names."""

from __future__ import annotations

from dataclasses import replace

from nictune.errors import InvalidInputError, UnknownNameError
from nictune.measure._base import LatencyProbe, Workload

WORKLOADS: dict[str, Workload] = {
    "tcp": Workload("tcp", "tcp", streams=1),
    "tcp-parallel": Workload("tcp-parallel", "tcp", streams=4),
    "udp": Workload("udp", "udp", length=1472),
    "udp-jumbo": Workload("udp-jumbo", "udp", length=8000),
    "udp-small": Workload("udp-small", "udp", length=64),
    "latency": Workload("latency", "udp", throughput=False, latency=LatencyProbe("ping-pong", "udp", 64)),
    "tcp+latency": Workload("tcp+latency", "tcp", latency=LatencyProbe("ping-pong", "udp", 64)),
}

DESCRIPTIONS: dict[str, str] = {
    "tcp": "one TCP stream, iperf3 default 128 KB writes",
    "tcp-parallel": "four parallel TCP streams",
    "udp": "UDP, 1472-byte datagrams at full rate",
    "udp-jumbo": "UDP, 8000-byte datagrams at full rate (fragmented below MTU 8028)",
    "udp-small": "UDP, 64-byte datagrams at full rate (packet-rate bound)",
    "latency": "request/response only: sockperf ping-pong, 64-byte UDP messages, round trip",
    "tcp+latency": "one TCP stream (iperf3), then sockperf ping-pong with 64-byte UDP messages",
}


def get_workload(
    name: str,
    *,
    scenario: str | None = None,
    duration_s: float | None = None,
    omit_s: float | None = None,
    bitrate_gbps: float | None = None,
) -> Workload:
    """A built-in workload, optionally with its scenario, duration, warm-up or rate changed.

    Raises:
        UnknownNameError: the workload is not built in.
        InvalidInputError: a changed field is out of range.
    """
    if name not in WORKLOADS:
        raise UnknownNameError("workload", name, list(WORKLOADS))
    wl = WORKLOADS[name]
    if scenario is not None:
        if scenario not in ("idle", "busy"):
            raise InvalidInputError(f"scenario {scenario!r} is not known; allowed: idle, busy",
                                    field="scenario", allowed="idle, busy")
        wl = replace(wl, scenario=scenario)  # type: ignore[arg-type]
    if duration_s is not None:
        if not 1 <= duration_s <= 3600:
            raise InvalidInputError("duration must be between 1 and 3600 seconds",
                                    field="duration", allowed="1..3600")
        wl = replace(wl, duration_s=float(duration_s))
    if omit_s is not None:
        if not 0 <= omit_s <= 60:
            raise InvalidInputError("omit must be between 0 and 60 seconds", field="omit",
                                    allowed="0..60")
        wl = replace(wl, omit_s=float(omit_s))
    if bitrate_gbps is not None:
        if not 0 < bitrate_gbps <= 1000:
            raise InvalidInputError("bitrate must be above 0 and at most 1000 Gbps",
                                    field="bitrate", allowed="0 < Gbps <= 1000")
        wl = replace(wl, bitrate_gbps=float(bitrate_gbps))
    return wl
