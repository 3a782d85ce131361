"""Workload files and options (issue 30): one validation for files, options and the API; the
built-ins load through it; what iperf3 is asked to run and how its JSON is read."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from nictune.db import content_hash
from nictune.errors import InvalidInputError, MeasurementError, UnknownNameError
from nictune.measure._base import LatencyProbe, Workload
from nictune.measure.benchmarks.iperf3 import client_argv, parse_client_json
from nictune.measure.benchmarks.workload_spec import Source, definition_of, format_bitrate, parse_bitrate
from nictune.measure.benchmarks.workloads import (
    BUILTIN_NAMES,
    DESCRIPTIONS,
    WORKLOADS,
    check_workload_name,
    get_workload,
    resolve_entry,
    resolve_workload,
)

#: The built-ins as they were written in Python before they became YAML files: their cache
#: keys must not move (a database keeps its cache hits).
PYTHON_BUILTINS = {
    "tcp": Workload("tcp", "tcp", streams=1),
    "tcp-parallel": Workload("tcp-parallel", "tcp", streams=4),
    "udp": Workload("udp", "udp", length=1472),
    "udp-jumbo": Workload("udp-jumbo", "udp", length=8000),
    "udp-small": Workload("udp-small", "udp", length=64),
    "latency": Workload("latency", "udp", throughput=False, latency=LatencyProbe("ping-pong", "udp", 64)),
    "tcp+latency": Workload("tcp+latency", "tcp", latency=LatencyProbe("ping-pong", "udp", 64)),
}


def test_builtins_are_yaml_files_with_the_cache_keys_they_always_had() -> None:
    folder = resources.files("nictune.measure.benchmarks") / "builtin_workloads"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}.yaml" for n in BUILTIN_NAMES)
    assert list(WORKLOADS) == list(BUILTIN_NAMES) == list(DESCRIPTIONS)
    for name, old in PYTHON_BUILTINS.items():
        assert WORKLOADS[name] == old
        assert content_hash(WORKLOADS[name].key()) == content_hash(old.key())
        assert DESCRIPTIONS[name]


def test_a_user_file_loads_like_a_builtin_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text("name: mix\ndescription: four UDP streams\nprotocol: udp\nstreams: 4\nlength: 1400\n"
                    "bitrate: 800M\nduration: 2\nomit: 0\nlatency:\n  mode: under-load\n  rate: 20000\n")
    entry = resolve_entry(str(path))
    wl = entry.workload
    assert (wl.name, wl.protocol, wl.streams, wl.length, wl.bitrate_gbps, wl.duration_s, wl.omit_s) == \
        ("mix", "udp", 4, 1400, 0.8, 2.0, 0.0)
    assert wl.latency == LatencyProbe("under-load", "udp", 64, 20000, 5.0)
    assert entry.description == "four UDP streams" and str(path) in entry.source
    # What `nictune workloads show` prints is a file that loads back to the same workload.
    assert resolve_workload(definition_of(wl, entry.description)) == wl
    # And the stored definition (the cache key, the wire format) rebuilds it.
    assert Workload.from_definition(json.loads(json.dumps(wl.key()))) == wl


@pytest.mark.parametrize(("text", "field", "line", "allowed"), [
    ("name: x\nprotocol: udp\nstreams: 0\n", "streams", 3, "from 1 to 128"),
    ("name: x\nprotocol: udp\nlength: 65508\n", "length", 3, "from 16 to 65507"),
    ("name: x\nprotocol: tcp\nlength: 1048577\n", "length", 3, "from 1 to 1048576"),
    ("name: x\nprotocol: udp\nbitrate: 5X\n", "bitrate", 3, "5G, 800M"),
    ("name: x\nprotocol: udp\nbitrate: 1001\n", "bitrate", 3, "at most 1000"),
    ("name: x\nprotocol: tcp\nreverse: true\nbidir: true\n", "bidir", 4, "not both"),
    ("name: x\nprotocol: tcp\nduration: 0.5\n", "duration", 3, "from 1 to 3600"),
    ("name: x\nprotocol: tcp\nomit: 61\n", "omit", 3, "from 0 to 60"),
    ("name: x\nprotocol: sctp\n", "protocol", 2, "tcp, udp"),
    ("name: x\nprotocol: tcp\nscenario: chaos\n", "scenario", 3, "idle, busy"),
    ("name: x\nprotocol: tcp\nlatency:\n  msg_size: 13\n", "latency.msg_size", 4, "from 14 to 65507"),
    ("name: x\nprotocol: tcp\nlatency:\n  rate: 0\n", "latency.rate", 4, "from 1 to 10000000"),
    ("name: x\nprotocol: tcp\nlatency:\n  mode: under-load\n", "latency.rate", None, "messages per second"),
    ("name: x\nthroughput: false\n", "throughput", 2, "a latency part"),
    ("name: x\nthroughput: false\nreverse: true\nlatency: {}\n", "reverse", 3, "latency-only"),
    ("protocol: tcp\n", "name", None, "letters, digits"),
])
def test_invalid_files_name_the_field_the_line_and_the_allowed_values(
        tmp_path: Path, text: str, field: str, line: int | None, allowed: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InvalidInputError) as info:
        resolve_workload(str(path))
    assert info.value.field == field
    assert allowed in (info.value.allowed or "")
    assert str(path) in str(info.value)
    if line is not None:
        assert f"line {line}:" in str(info.value)


def test_errors_about_a_file_never_repeat_its_content(tmp_path: Path) -> None:
    secret = "s3cr3t-token-value"
    cases = {"value.yaml": f"name: x\nprotocol: {secret}\n", "key.yaml": f"name: x\nprotocol: tcp\n{secret}: 1\n",
             "text.yaml": f"{secret}\n", "yaml.yaml": f"name: [{secret}\n", "nested.yaml":
             f"name: x\nprotocol: tcp\nlatency:\n  {secret}: 3\n"}
    for file, text in cases.items():
        (tmp_path / file).write_text(text)
        with pytest.raises(InvalidInputError) as info:
            resolve_workload(str(tmp_path / file))
        assert secret not in str(info.value) and secret not in (info.value.allowed or ""), file
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe" + secret.encode())
    with pytest.raises(InvalidInputError, match="not a UTF-8 text file"):
        resolve_workload(str(tmp_path / "bin.yaml"))
    with pytest.raises(InvalidInputError, match="does not exist"):
        resolve_workload(str(tmp_path / "missing.yaml"))
    with pytest.raises(InvalidInputError, match="is a directory"):
        resolve_workload(str(tmp_path) + "/")


def test_unknown_keys_and_names_are_refused() -> None:
    with pytest.raises(InvalidInputError) as info:
        resolve_workload({"name": "x", "protocol": "tcp", "stream": 4})
    assert info.value.field == "stream" and "streams" in (info.value.allowed or "")
    with pytest.raises(UnknownNameError) as unknown:
        resolve_workload("ftp")
    assert "tcp-parallel" in (unknown.value.allowed or "")


def test_options_change_the_workload_and_its_name_says_so() -> None:
    wl = resolve_workload("tcp", {"streams": 4, "length": 1400, "bitrate": "5G"})
    assert (wl.name, wl.streams, wl.length, wl.bitrate_gbps) == ("tcp(-P 4 -l 1400 -b 5G)", 4, 1400, 5.0)
    # Options equal to the workload's own values change nothing (same name, same cache key).
    assert resolve_workload("udp", {"length": 1472}) == WORKLOADS["udp"]
    # How long and where it runs keep the name (as get_workload always did); the key still differs.
    short = get_workload("tcp", duration_s=2, scenario="busy")
    assert short.name == "tcp" and short.key() != WORKLOADS["tcp"].key()
    # The latency part's options; a flag that switches direction replaces the other one.
    probe = resolve_workload("tcp+latency", {"msg_size": 256, "rate": 1000}).latency
    assert probe is not None and (probe.msg_size, probe.rate_mps) == (256, 1000)
    back = resolve_workload({"name": "r", "protocol": "tcp", "reverse": True}, {"bidir": True})
    assert (back.reverse, back.bidir, back.name) == (False, True, "r(--bidir)")


@pytest.mark.parametrize(("options", "field"), [
    ({"streams": 129}, "streams"), ({"length": 8}, "length"), ({"bitrate": "-1G"}, "bitrate"),
    ({"reverse": True, "bidir": True}, "bidir"), ({"omit": -1.0}, "omit"), ({"msg_size": 64}, "msg_size"),
    ({"duration": 0}, "duration"), ({"scenario": "chaos"}, "scenario"), ({"colour": 1}, "colour"),
])
def test_invalid_options_name_the_field(options: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        resolve_workload("udp", options)
    assert info.value.field == field and info.value.allowed


def test_bitrates_in_iperf3s_form_read_back_exactly() -> None:
    src = Source()
    assert [parse_bitrate(t, src) for t in ("5G", "5g", "800M", "100K", "1T", "2.5", 7)] == \
        [5.0, 5.0, 0.8, 0.0001, 1000.0, 2.5, 7.0]
    for gbps in (5.0, 0.8, 12.5, 0.30720000001, 1e-6, 999.999):
        assert parse_bitrate(format_bitrate(gbps), src) == gbps
    assert format_bitrate(5.0) == "5G" and format_bitrate(0.8) == "800M"


def test_history_names_are_builtins_or_stored_ones() -> None:
    check_workload_name("tcp", [])
    check_workload_name("tcp(-P 4)", ["tcp(-P 4)"])
    with pytest.raises(UnknownNameError):
        check_workload_name("tcp(-P 4)", ["udp"])


def test_iperf3_command_for_reverse_bidir_and_a_paced_tcp_stream() -> None:
    wl = resolve_workload("tcp", {"streams": 4, "length": 1400, "bitrate": "5G", "reverse": True})
    argv = client_argv(wl, "10.0.0.2", 5201)
    assert argv[argv.index("-b") + 1] == "5000000000" and "-u" not in argv  # -b paces TCP too
    assert argv[argv.index("-l") + 1] == "1400" and argv[argv.index("-P") + 1] == "4" and argv[-1] == "-R"
    assert client_argv(resolve_workload("udp", {"bidir": True}), "10.0.0.2", 5201)[-1] == "--bidir"
    assert "-b" not in client_argv(WORKLOADS["tcp"], "10.0.0.2", 5201)  # unpaced TCP as before


def _json(end: dict[str, object]) -> str:
    return json.dumps({"start": {"tcp_mss_default": 1000}, "end": end})


def test_bidir_throughput_is_both_directions_received() -> None:
    wl = Workload("b", "tcp", bidir=True)
    end = {"sum_sent": {"bytes": 3000, "retransmits": 1, "bits_per_second": 9e9},
           "sum_received": {"bytes": 2000, "bits_per_second": 8e9, "seconds": 2.0},
           "sum_sent_bidir_reverse": {"bytes": 1000, "retransmits": 2, "bits_per_second": 3e9},
           "sum_received_bidir_reverse": {"bytes": 1000, "bits_per_second": 2e9},
           "cpu_utilization_percent": {"host_total": 30.0, "remote_total": 40.0}}
    metrics, summary = parse_client_json(_json(end), wl)
    assert metrics["throughput_gbps"] == pytest.approx(10.0)
    assert metrics["retransmits"] == 3 and metrics["loss_pct"] == pytest.approx(100 * 3 / 4)
    assert summary["received_bytes"] == 2000 and summary["received_bytes_both"] == 3000
    with pytest.raises(MeasurementError, match="bidir"):
        parse_client_json(_json({k: v for k, v in end.items() if "bidir" not in k}), wl)


def test_reverse_reads_the_receiving_client_as_the_receiver() -> None:
    end = {"sum": {"packets": 100, "lost_packets": 10, "lost_percent": 10.0, "bits_per_second": 1e9},
           "sum_received": {"bytes": 900, "bits_per_second": 0.9e9, "seconds": 1.0},
           "cpu_utilization_percent": {"host_total": 30.0, "remote_total": 40.0}}
    forward, _ = parse_client_json(_json(end), Workload("u", "udp"))
    reverse, _ = parse_client_json(_json(end), Workload("u", "udp", reverse=True))
    assert (forward["cpu_tx_pct"], forward["cpu_rx_pct"]) == (30.0, 40.0)
    assert (reverse["cpu_tx_pct"], reverse["cpu_rx_pct"]) == (40.0, 30.0)  # the client receives
    assert reverse["throughput_gbps"] == forward["throughput_gbps"] == pytest.approx(0.9)
    assert reverse["packet_rate_mpps"] == pytest.approx(90 / 1e6)
