"""User-described workloads from the command line (issue 30): `nictune workloads list/show`,
the options of measure and optimize, bad values (exit 2 naming the field), and the cache
keeping two traffic mixes apart, on the simulated testbed (a model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nictune.measure.benchmarks.workloads import BUILTIN_NAMES

pytestmark = pytest.mark.system  # runs nictune in subprocesses


def nictune(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path / 'h.db'}", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "nictune", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def as_json(res: subprocess.CompletedProcess[str]) -> Any:
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout)


def test_workloads_list_names_every_builtin_with_what_it_runs(tmp_path: Path) -> None:
    rows = as_json(nictune(tmp_path, "workloads", "list", "--json"))
    assert [r["name"] for r in rows] == list(BUILTIN_NAMES)
    runs = {r["name"]: r["runs"] for r in rows}
    assert runs["tcp-parallel"].startswith("iperf3 TCP, 4 streams")
    assert runs["latency"].startswith("sockperf ping-pong UDP, 64 B") and "iperf3" not in runs["latency"]
    assert "iperf3 TCP" in runs["tcp+latency"] and "sockperf" in runs["tcp+latency"]
    table = nictune(tmp_path, "workloads", "list")
    assert table.returncode == 0 and all(name in table.stdout for name in BUILTIN_NAMES)


def test_workloads_show_prints_a_loadable_definition_and_the_commands(tmp_path: Path) -> None:
    shown = as_json(nictune(tmp_path, "workloads", "show", "tcp", "-P", "4", "-l", "1400", "-b", "5G", "--json"))
    assert shown["name"] == "tcp(-P 4 -l 1400 -b 5G)"
    client = shown["commands"]["iperf3"]["client"]
    assert client[:3] == ["iperf3", "-c", "RECEIVER"] and "sockperf" not in shown["commands"]
    assert [client[client.index(f) + 1] for f in ("-P", "-l", "-b")] == ["4", "1400", "5000000000"]
    # The printed definition is a workload file: saved, it loads to the same workload.
    text = nictune(tmp_path, "workloads", "show", "tcp", "-P", "4", "-l", "1400", "-b", "5G")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    start = lines.index("definition (a workload file holds this):") + 1
    stop = next(i for i, line in enumerate(lines) if line.startswith("iperf3 on the receiver"))
    block = lines[start:stop]
    (tmp_path / "mine.yaml").write_text("\n".join(block) + "\n")
    again = as_json(nictune(tmp_path, "workloads", "show", str(tmp_path / "mine.yaml"), "--json"))
    assert again["cache_key"] == shown["cache_key"]
    probe = as_json(nictune(tmp_path, "workloads", "show", "tcp+latency", "--msg-size", "256", "--json"))
    assert probe["commands"]["sockperf"]["client"][:2] == ["sockperf", "ping-pong"]
    assert "256" in probe["commands"]["sockperf"]["client"] and "latency_p99_us" in probe["measures"]


@pytest.mark.parametrize(("args", "needle"), [
    (["measure", "-P", "200"], "streams is out of range (got 200); allowed: an integer from 1 to 128"),
    (["measure", "-w", "udp", "-l", "70000"], "length is out of range"),
    (["measure", "-w", "udp", "-l", "70000"], "from 16 to 65507"),
    (["measure", "-b", "fast"], "bitrate is not a bit rate"),
    (["measure", "-R", "--bidir"], "bidir cannot go with reverse"),
    (["measure", "--msg-size", "64"], "msg_size changes the latency part"),
    (["measure", "-w", "latency", "--msg-size", "13"], "latency.msg_size is out of range (got 13)"),
    (["measure", "-w", "latency", "--rate", "0"], "latency.rate is out of range"),
    (["measure", "--omit", "99"], "omit is out of range"),
    (["measure", "--bidir"], "no model of both ends sending at once (bidir)"),
    (["measure", "-w", "no/such.yaml"], "workload file no/such.yaml does not exist"),
    (["measure", "-P", "x"], "Invalid value for '--streams' / '-P'"),
    (["optimize", "-o", "throughput", "--length", "0"], "length is out of range"),
    (["optimize", "-o", "throughput", "--dry-run", "--bitrate", "2000G"], "at most 1000 Gbit/s"),
    (["optimize", "-o", "throughput", "--dry-run", "--bidir"], "(bidir)"),
    (["optimize", "-o", "throughput", "--server", "http://127.0.0.1:1", "-w", "no.yaml"],
     "workload file no.yaml does not exist"),
])
def test_bad_workload_values_exit_2_naming_the_field(tmp_path: Path, args: list[str], needle: str) -> None:
    res = nictune(tmp_path, *args, "-t", "sim:benson-40g") if args[0] == "measure" else nictune(tmp_path, *args)
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in " ".join(res.stderr.split()), res.stderr
    assert "Traceback" not in res.stderr


def test_a_user_workload_runs_on_the_simulator(tmp_path: Path) -> None:
    out = as_json(nictune(tmp_path, "measure", "-t", "sim:benson-40g", "-w", "tcp", "-P", "4", "-l", "1400",
                          "-b", "5G", "--duration", "2", "--repeats", "1", "--noise", "0", "--json"))
    assert out["simulated"] is True and out["workload"]["name"] == "tcp(-P 4 -l 1400 -b 5G)"
    assert (out["workload"]["streams"], out["workload"]["length"], out["workload"]["bitrate_gbps"]) == (4, 1400, 5.0)
    assert 0 < out["metrics"]["throughput_gbps"] <= 4 * 5.0  # paced at 5 Gbit/s a stream
    assert any("no term for the TCP write length" in note for note in out["note"])
    # Paced below what the model reaches unpaced, the pacing is what limits it.
    slow = as_json(nictune(tmp_path, "measure", "-t", "sim:benson-40g", "-b", "1G", "--noise", "0", "-r", "1",
                           "--json"))
    assert slow["metrics"]["throughput_gbps"] <= 1.0
    # A file, reverse (modelled as forward: the model's hosts are symmetric).
    path = tmp_path / "mix.yaml"
    path.write_text("name: mix\nprotocol: udp\nstreams: 4\nlength: 1400\nbitrate: 5G\nreverse: true\n")
    rev = as_json(nictune(tmp_path, "measure", "-t", "sim:benson-40g", "-w", str(path), "--noise", "0", "-r", "1",
                          "--json"))
    fwd = as_json(nictune(tmp_path, "measure", "-t", "sim:benson-40g", "-w", "udp", "-P", "4", "-l", "1400", "-b",
                          "5G", "--noise", "0", "-r", "1", "--json"))
    assert rev["workload"]["reverse"] is True and rev["metrics"] == fwd["metrics"]


def _job(tmp_path: Path, *args: str) -> dict[str, Any]:
    return dict(as_json(nictune(tmp_path, "optimize", "-t", "sim:benson-40g", "-o", "throughput", "-e", "random",
                                "--budget", "1", "--repeats", "1", "--no-racing", "--no-warm-start", "--seed", "1",
                                "--json", *args)))


def test_two_traffic_mixes_never_share_a_measurement(tmp_path: Path) -> None:
    first = _job(tmp_path, "-w", "udp", "-l", "1400")
    other = _job(tmp_path, "-w", "udp", "-l", "1200")
    again = _job(tmp_path, "-w", "udp", "-l", "1400")
    # The same configuration each time (the space's default), under two workloads.
    assert first["best"]["config_hash"] == other["best"]["config_hash"] == again["best"]["config_hash"]
    assert (first["measured"], first["cached"]) == (1, 0)
    assert (other["measured"], other["cached"]) == (1, 0), "a different datagram length is measured anew"
    assert (again["measured"], again["cached"]) == (0, 1), "the same workload again is the cache's"
    assert first["workload"] == again["workload"] == "udp(-l 1400)" and other["workload"] == "udp(-l 1200)"
    # The history filters by the names it holds; an unknown one is still a typo.
    listed = as_json(nictune(tmp_path, "history", "--workload", "udp(-l 1400)", "--json"))
    assert sorted(j["job_id"] for j in listed) == sorted([first["job_id"], again["job_id"]])
    best = as_json(nictune(tmp_path, "history", "best", "-t", "sim:benson-40g", "-w", "udp(-l 1200)",
                           "-o", "throughput", "--json"))
    assert len(best) == 1
    bad = nictune(tmp_path, "history", "--workload", "udp(-l 1300)")
    assert bad.returncode == 2 and "unknown workload 'udp(-l 1300)'" in bad.stderr


def test_a_dry_run_and_a_job_take_the_options(tmp_path: Path) -> None:
    plan = as_json(nictune(tmp_path, "optimize", "-t", "sim:benson-40g", "-o", "throughput", "-w", "udp", "-P", "2",
                           "--bitrate", "3G", "--dry-run", "--json"))
    assert plan["simulated"] is True
    job = _job(tmp_path, "-w", "udp", "-P", "2", "--bitrate", "3G")
    shown = as_json(nictune(tmp_path, "history", "show", str(job["job_id"]), "--json"))
    assert shown["workload"] == "udp(-P 2 -b 3G)"
