"""User-described workloads on a real veth pair (issue 30): real iperf3 between two network
namespaces, with streams, length, bitrate, reverse and both directions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nictune.measure.benchmarks.iperf3 import Endpoints, run_iperf3
from nictune.measure.benchmarks.workloads import resolve_workload
from nictune.measure.testbeds.veth import VethPair
from tests.measure.support import leftover_processes, unique_name

pytestmark = pytest.mark.netns


def test_measure_runs_a_user_workload_on_veth(tmp_path: Path, state_dir: Path) -> None:
    name = unique_name()
    env = {**os.environ, "NICTUNE_DB": f"sqlite:///{tmp_path}/h.db", "NICTUNE_STATE_DIR": str(state_dir.parent)}
    res = subprocess.run([sys.executable, "-m", "nictune", "measure", "--testbed", f"veth:{name}", "-w", "tcp",
                          "-P", "4", "-l", "1400", "-b", "5G", "--duration", "2", "--repeats", "1", "--json"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["simulated"] is False and out["workload"]["name"] == "tcp(-P 4 -l 1400 -b 5G)"
    gbps = out["metrics"]["throughput_gbps"]
    assert 0 < gbps <= 4 * 5.0 * 1.05, gbps  # four streams paced at 5 Gbit/s each (iperf3's pacing is per stream)
    assert not VethPair(name).exists() and not leftover_processes()


def _ends(pair: VethPair) -> Endpoints:
    return Endpoints(pair.sender(), pair.receiver(), pair.tx, pair.rx, pair.rx_address, 5312)


def test_reverse_reads_the_counters_where_the_data_arrives(veth_pair: VethPair) -> None:
    wl = resolve_workload("udp", {"length": 1400, "bitrate": "200M", "reverse": True, "duration": 2, "omit": 0})
    sample = run_iperf3(_ends(veth_pair), wl)
    received = sample.counters["iperf3"]["received_bytes"]
    assert received > 0
    # The client's end (the sender host's device) received the data: its counters were read.
    assert sample.counters["delta"]["dev_rx_bytes"] >= received
    assert 0 < sample.metrics["throughput_gbps"] <= 0.21
    assert not leftover_processes()


def test_bidir_counts_both_directions(veth_pair: VethPair) -> None:
    wl = resolve_workload("udp", {"length": 1400, "bitrate": "200M", "bidir": True, "duration": 2, "omit": 0})
    sample = run_iperf3(_ends(veth_pair), wl)
    forward = sample.counters["iperf3"]["received_bytes"]
    both = sample.counters["iperf3"]["received_bytes_both"]
    assert 0 < forward < both
    # Two directions at 200 Mbit/s each: more than one direction can carry, less than the two.
    assert 0.2 < sample.metrics["throughput_gbps"] <= 0.42
    assert not leftover_processes()
