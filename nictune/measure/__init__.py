"""Measurement layer: testbeds, hosts, appliers, the iperf3 and sockperf runners and the trial transaction.

Interfaces live in :mod:`nictune.measure._base`; the kinds of testbed (the model, veth pairs,
SSH pairs) and the registry that opens one by name in :mod:`nictune.measure.testbeds`; the
simulated model in :mod:`nictune.measure.sim`.
"""

from __future__ import annotations

import importlib
from typing import Any

from nictune.measure._base import (
    LATENCY_METRICS,
    METRICS,
    UNMEASURED,
    LatencyProbe,
    Sample,
    Testbed,
    TestbedFacts,
    TrialResult,
    Workload,
    ignored_knobs_notice,
)

# The host-facing parts (subprocess, SSH, namespaces) load on first use, so that importing
# the interfaces (as the optimizer does, for METRICS) stays free of process machinery.
_LAZY = {
    "APPLIERS": "appliers", "Applier": "appliers", "ProbeResult": "appliers", "applier_for": "appliers",
    "validate_settings": "appliers", "GLOBAL_SYSCTLS": "hosts", "Host": "hosts", "LocalHost": "hosts",
    "NetnsHost": "hosts", "SshHost": "hosts", "Endpoints": "benchmarks.benchmark",
    "run_iperf3": "benchmarks.iperf3", "run_sockperf": "benchmarks.sockperf",
    "Journal": "trial.journal", "ReplayReport": "trial.journal", "replay_journal": "trial.journal",
    "state_dir": "trial.journal", "Trial": "trial.transaction",
    "PairSpec": "testbeds", "SshPairTestbed": "testbeds", "check_pair": "testbeds", "load_pair": "testbeds",
    "ProbeRow": "probing.probe", "probe_settings": "probing.probe", "VethPair": "testbeds",
    "VethTestbed": "testbeds", "list_pairs": "testbeds",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"nictune.measure.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'nictune.measure' has no attribute {name!r}")


__all__ = [
    "APPLIERS",
    "GLOBAL_SYSCTLS",
    "LATENCY_METRICS",
    "METRICS",
    "UNMEASURED",
    "Applier",
    "Endpoints",
    "Host",
    "Journal",
    "LatencyProbe",
    "LocalHost",
    "NetnsHost",
    "PairSpec",
    "ProbeResult",
    "ProbeRow",
    "ReplayReport",
    "Sample",
    "SshHost",
    "SshPairTestbed",
    "Testbed",
    "TestbedFacts",
    "Trial",
    "TrialResult",
    "VethPair",
    "VethTestbed",
    "Workload",
    "applier_for",
    "check_pair",
    "ignored_knobs_notice",
    "list_pairs",
    "load_pair",
    "probe_settings",
    "replay_journal",
    "run_iperf3",
    "run_sockperf",
    "state_dir",
    "validate_settings",
]
