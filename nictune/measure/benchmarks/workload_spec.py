"""The one validation of workload definitions: workload files (YAML), inline definitions
(the API), and the options that change a workload (CLI ``--streams`` ..., the API's
``workload_options``).

A definition is a mapping in the file form::

    name: udp-4x1400
    description: four UDP streams of 1400-byte datagrams at 5 Gbit/s each
    protocol: udp        # tcp | udp
    streams: 4           # iperf3 -P, 1..128
    length: 1400         # iperf3 -l: bytes per write (TCP) or per datagram (UDP)
    bitrate: 5G          # iperf3 -b, per stream: 5G, 800M, 100K, or a number of Gbit/s
    reverse: false       # iperf3 -R: the receiver sends
    bidir: false         # iperf3 --bidir: both ends send at once
    duration: 10         # seconds measured per run (iperf3 -t)
    omit: 1              # warm-up seconds left out (iperf3 -O)
    scenario: idle       # idle | busy
    throughput: true     # false: a latency-only workload (no iperf3 run)
    latency:             # sockperf after iperf3 (optional)
      mode: ping-pong    # ping-pong | under-load
      protocol: udp      # udp | tcp
      msg_size: 64       # sockperf -m, bytes
      rate: 10000        # sockperf --mps, messages per second (under-load needs one)
      duration: 5        # seconds (sockperf -t)

Every error names the field and the values it allows (and, for a file, the file and the
line). Errors about a file never repeat what the file holds: it may not be a workload file
at all (a path typed by mistake), and a message is no place for its content.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nictune.errors import InvalidInputError
from nictune.measure._base import LatencyProbe, Workload

#: Keys of a workload definition, and of its ``latency`` part.
FILE_KEYS: tuple[str, ...] = ("name", "description", "protocol", "streams", "length", "bitrate", "reverse", "bidir",
                              "duration", "omit", "scenario", "throughput", "latency")
LATENCY_KEYS: tuple[str, ...] = ("mode", "protocol", "msg_size", "rate", "duration")
#: What options (CLI, API ``workload_options``) may change: a field of the definition, or
#: ``msg_size`` and ``rate`` of its latency part.
OPTION_KEYS: tuple[str, ...] = ("streams", "length", "bitrate", "reverse", "bidir", "duration", "omit", "scenario",
                                "msg_size", "rate")

#: A workload's name: a word, and what options add to it (``tcp(-P 4 -b 5G)``), so what
#: ``nictune workloads show`` prints is a valid workload file.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+() -]{0,127}$")
NAME_ALLOWED = "1-128 letters, digits, spaces and _ . + - ( ) (starting with a letter or digit)"
MAX_STREAMS = 128  # iperf3's own limit (-P)
#: iperf3's limits on ``-l``: a UDP datagram of 16 to 65507 bytes (the largest IPv4 UDP
#: payload), a TCP write of up to 1 MiB.
UDP_LENGTH = (16, 65507)
TCP_LENGTH = (1, 1 << 20)
MAX_BITRATE_GBPS = 1000.0
DURATION_S = (1.0, 3600.0)
OMIT_S = (0.0, 60.0)
#: sockperf's limits on ``-m`` (3.7: "Invalid message size ... (min: 14)", "(max: 65507)").
MSG_SIZE = (14, 65507)
RATE_MPS = (1, 10_000_000)
#: Gbit/s = number * multiplier / divisor (a division by an exact power of ten, so ``800M``
#: is exactly the float 0.8).
_UNITS = {"": (1.0, 1.0), "K": (1.0, 1e6), "M": (1.0, 1e3), "G": (1.0, 1.0), "T": (1e3, 1.0)}
_BITRATE_RE = re.compile(r"^\s*((?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*([KMGT]?)\s*$", re.IGNORECASE)
BITRATE_ALLOWED = (f"above 0 and at most {MAX_BITRATE_GBPS:g} Gbit/s per stream: iperf3's form (5G, 800M, 100K) "
                   "or a number of Gbit/s")


@dataclass(frozen=True)
class Source:
    """Where a definition came from, for error messages.

    Attributes:
        label: ``workload file PATH``, ``inline workload``, ``options`` ...
        lines: line (1-based) of each key in the file (``latency.msg_size`` for nested keys).
        echo: values may be repeated in messages (never for a file's content).
    """

    label: str = "workload"
    lines: Mapping[str, int] = field(default_factory=dict)
    echo: bool = True

    def error(self, key: str, problem: str, allowed: str, value: Any = None) -> InvalidInputError:
        where = self.label + (f", line {self.lines[key]}" if key in self.lines else "")
        shown = f" (got {value!r})" if self.echo and value is not None else ""
        return InvalidInputError(f"{where}: {key} {problem}{shown}; allowed: {allowed}", field=key, allowed=allowed)


@dataclass(frozen=True)
class WorkloadEntry:
    """A validated workload with what the user is told about it."""

    workload: Workload
    description: str = ""
    source: str = "built-in"


def parse_bitrate(value: Any, source: Source, key: str = "bitrate") -> float:
    """Gbit/s from iperf3's rate form (``5G``, ``800M``, ``100K``, ``1.5T``) or a number of Gbit/s."""
    gbps: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        gbps = float(value)
    elif isinstance(value, str) and (m := _BITRATE_RE.match(value)):
        mul, div = _UNITS[m.group(2).upper()]
        gbps = float(m.group(1)) * mul / div
    if gbps is None or not math.isfinite(gbps) or not 0 < gbps <= MAX_BITRATE_GBPS:
        raise source.error(key, "is not a bit rate in range", BITRATE_ALLOWED, value)
    return gbps


def format_bitrate(gbps: float) -> str:
    """``5.0`` -> ``5G``, ``0.8`` -> ``800M``: iperf3's form, the shortest that reads back as
    exactly ``gbps`` (:func:`parse_bitrate`)."""
    exact = []
    for unit in ("G", "M", "K"):
        mul, div = _UNITS[unit]
        text = f"{gbps * div / mul:g}"
        if float(text) * mul / div == gbps:
            exact.append(text + unit)
    whole = [t for t in exact if t[:-1].isdigit()]
    return (whole or exact or [f"{gbps!r}G"])[0]


def _number(source: Source, key: str, value: Any, lo: float, hi: float, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise source.error(key, "is out of range", f"a number of {unit} from {lo:g} to {hi:g}", value)
    return float(value)


def _integer(source: Source, key: str, value: Any, lo: int, hi: int, what: str = "an integer") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise source.error(key, "is out of range", f"{what} from {lo} to {hi}", value)
    return value


def _choice(source: Source, key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise source.error(key, "is not known", ", ".join(choices), value)
    return str(value)


def _flag(source: Source, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise source.error(key, "must be true or false", "true, false", value)
    return value


def _unknown(source: Source, data: Mapping[Any, Any], known: tuple[str, ...], prefix: str = "") -> None:
    for key in data:
        if key not in known:
            name = f"{prefix}{key}" if source.echo and isinstance(key, str) else f"{prefix}(a key)"
            where = source.label + (f", line {source.lines[f'{prefix}{key}']}"
                                    if f"{prefix}{key}" in source.lines else "")
            raise InvalidInputError(f"{where}: unknown key {name}; allowed: {', '.join(known)}",
                                    field=f"{prefix}{key}" if source.echo else prefix.rstrip(".") or "workload",
                                    allowed=", ".join(known))


def _latency(raw: Any, source: Source) -> LatencyProbe | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise source.error("latency", "must be a mapping", ", ".join(LATENCY_KEYS) + " (or leave it out)")
    _unknown(source, raw, LATENCY_KEYS, "latency.")
    mode = _choice(source, "latency.mode", raw.get("mode", "ping-pong"), ("ping-pong", "under-load"))
    protocol = _choice(source, "latency.protocol", raw.get("protocol", "udp"), ("udp", "tcp"))
    msg_size = _integer(source, "latency.msg_size", raw.get("msg_size", 64), *MSG_SIZE, "bytes")
    rate = raw.get("rate")
    if rate is not None:
        rate = _integer(source, "latency.rate", rate, *RATE_MPS, "messages per second")
    elif mode == "under-load":
        raise source.error("latency.rate", "is needed in under-load mode (sockperf --mps)",
                           f"messages per second from {RATE_MPS[0]} to {RATE_MPS[1]:,}")
    duration = _number(source, "latency.duration", raw.get("duration", 5.0), *DURATION_S, "seconds")
    return LatencyProbe(mode, protocol, msg_size, rate, duration)  # type: ignore[arg-type]


def workload_from_definition(data: Any, source: Source, *, name: str | None = None) -> WorkloadEntry:
    """Validate a definition in the file form (the module's docstring) into a workload.

    Args:
        data: the mapping (a parsed YAML file, an API body's ``workload``).
        source: where it came from (for the messages).
        name: the name to give it instead of its own (options changed it).

    Raises:
        InvalidInputError: naming the first field at fault and what it allows.
    """
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"{source.label}: expected a mapping of {', '.join(FILE_KEYS)}",
                                field="workload", allowed="a mapping with name, protocol ... (a workload file)")
    _unknown(source, data, FILE_KEYS)
    own = data.get("name")
    if not isinstance(own, str) or not NAME_RE.match(own):
        raise source.error("name", "is missing or not a name", NAME_ALLOWED, own)
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > 500:
        raise source.error("description", "must be text", "text of at most 500 characters")
    throughput = _flag(source, "throughput", data.get("throughput", True))
    latency = _latency(data.get("latency"), source)
    if not throughput and latency is None:
        raise source.error("throughput", "is false but there is no latency part: the workload would measure nothing",
                           "throughput: true, or a latency part")
    default_protocol = latency.protocol if latency is not None and not throughput else None
    protocol = data.get("protocol", default_protocol)
    if protocol is None:
        raise source.error("protocol", "is missing", "tcp, udp")
    protocol = _choice(source, "protocol", protocol, ("tcp", "udp"))
    streams = _integer(source, "streams", data.get("streams", 1), 1, MAX_STREAMS)
    length = data.get("length")
    if length is not None:
        lo, hi = UDP_LENGTH if protocol == "udp" else TCP_LENGTH
        length = _integer(source, "length", length, lo, hi, f"bytes per {protocol.upper()} "
                          + ("datagram" if protocol == "udp" else "write"))
    bitrate = data.get("bitrate")
    bitrate_gbps = parse_bitrate(bitrate, source) if bitrate is not None else None
    reverse = _flag(source, "reverse", data.get("reverse", False))
    bidir = _flag(source, "bidir", data.get("bidir", False))
    if reverse and bidir:
        raise source.error("bidir", "cannot go with reverse (iperf3 refuses -R with --bidir)",
                           "reverse or bidir, not both")
    if (reverse or bidir) and not throughput:
        key = "reverse" if reverse else "bidir"
        raise source.error(key, "applies to the throughput part (iperf3), and this workload has none",
                           "false for a latency-only workload")
    duration = _number(source, "duration", data.get("duration", 10.0), *DURATION_S, "seconds")
    omit = _number(source, "omit", data.get("omit", 1.0), *OMIT_S, "seconds")
    scenario = _choice(source, "scenario", data.get("scenario", "idle"), ("idle", "busy"))
    workload = Workload(name or own, protocol, streams=streams, length=length,  # type: ignore[arg-type]
                        bitrate_gbps=bitrate_gbps, duration_s=duration, omit_s=omit,
                        scenario=scenario, reverse=reverse, bidir=bidir,  # type: ignore[arg-type]
                        throughput=throughput, latency=latency)
    return WorkloadEntry(workload, description, source.label)


def definition_of(workload: Workload, description: str = "") -> dict[str, Any]:
    """The file form of ``workload`` (what a workload file holds); defaults left out."""
    out: dict[str, Any] = {"name": workload.name}
    if description:
        out["description"] = description
    out["protocol"] = workload.protocol
    defaults: dict[str, Any] = {"streams": 1, "length": None, "bitrate": None, "reverse": False, "bidir": False,
                                "scenario": "idle", "throughput": True}
    values = {"streams": workload.streams, "length": workload.length,
              "bitrate": format_bitrate(workload.bitrate_gbps) if workload.bitrate_gbps else None,
              "reverse": workload.reverse, "bidir": workload.bidir, "duration": workload.duration_s,
              "omit": workload.omit_s, "scenario": workload.scenario, "throughput": workload.throughput}
    out |= {k: v for k, v in values.items() if k not in defaults or v != defaults[k]}
    if workload.latency is not None:
        p = workload.latency
        out["latency"] = {"mode": p.mode, "protocol": p.protocol, "msg_size": p.msg_size,
                          **({"rate": p.rate_mps} if p.rate_mps is not None else {}), "duration": p.duration_s}
    return out


#: How each option is spelled in a changed workload's name (the tools' own flags).
_FLAGS: dict[str, Callable[[Any], str]] = {
    "streams": lambda v: f"-P {v}", "length": lambda v: f"-l {v}", "bitrate": lambda v: f"-b {v}",
    "reverse": lambda v: "-R", "bidir": lambda v: "--bidir", "msg_size": lambda v: f"-m {v}",
    "rate": lambda v: f"--mps {v}",
}


def with_options(entry: WorkloadEntry, options: Mapping[str, Any], source: Source | None = None) -> WorkloadEntry:
    """``entry`` with fields changed by options (:data:`OPTION_KEYS`), validated as a whole.

    A change of the traffic (streams, length, bitrate, reverse, bidir, message size, rate)
    shows in the name, e.g. ``tcp(-P 4 -l 1400 -b 5G)``: a name stands for one traffic mix in
    the history. Duration, warm-up and scenario keep the name (they are how long and where it
    is measured). The cache keys on the whole definition either way.

    Raises:
        InvalidInputError: naming the option at fault.
    """
    source = source or Source("options")
    unknown = [k for k in options if k not in OPTION_KEYS]
    if unknown:
        raise InvalidInputError(f"{source.label}: unknown option {unknown[0]}; allowed: {', '.join(OPTION_KEYS)}",
                                field=str(unknown[0]), allowed=", ".join(OPTION_KEYS))
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return entry
    base = definition_of(entry.workload, entry.description)
    data = dict(base)
    for key in ("msg_size", "rate"):
        if key in given:
            if "latency" not in data:
                raise source.error(key, f"changes the latency part (sockperf), and workload {entry.workload.name!r} "
                                   "has none", "a workload with a latency part (e.g. latency, tcp+latency)")
            data["latency"] = {**data["latency"], key: given[key]}
    if given.get("bidir") is True:
        data.pop("reverse", None)
    if given.get("reverse") is True:
        data.pop("bidir", None)
    if "bitrate" in given:
        given["bitrate"] = format_bitrate(parse_bitrate(given["bitrate"], source))
    data |= {k: v for k, v in given.items() if k not in ("msg_size", "rate")}
    before = {**base, **base.get("latency", {})}
    flags = [_FLAGS[k](v) for k, v in given.items() if k in _FLAGS and before.get(k) != v and v is not False]
    name = f"{entry.workload.name}({' '.join(flags)})" if flags else entry.workload.name
    checked = workload_from_definition(data, Source(source.label), name=name)
    description = f"{entry.description} (changed: {' '.join(flags)})" if flags and entry.description else \
        entry.description
    return WorkloadEntry(checked.workload, description, entry.source)
