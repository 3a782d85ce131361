"""Measurement layer: testbeds, hosts, appliers, the iperf3 runner and the trial transaction.

Interfaces live in :mod:`nictune.measure._base`; the simulated testbed in
:mod:`nictune.measure.sim`; testbed names are resolved by :mod:`nictune.measure.registry`.
"""

from __future__ import annotations

from nictune.measure._base import METRICS, Sample, Testbed, TrialResult, Workload
from nictune.measure.appliers import APPLIERS, Applier, ProbeResult, applier_for, validate_settings
from nictune.measure.hosts import GLOBAL_SYSCTLS, Host, LocalHost, NetnsHost, SshHost
from nictune.measure.iperf3 import Endpoints, run_iperf3
from nictune.measure.journal import Journal, ReplayReport, replay_journal, state_dir
from nictune.measure.pair_file import PairSpec, SshPairTestbed, check_pair, load_pair
from nictune.measure.probe import ProbeRow, probe_settings
from nictune.measure.transaction import Trial
from nictune.measure.veth import VethPair, VethTestbed, list_pairs

__all__ = [
    "APPLIERS",
    "GLOBAL_SYSCTLS",
    "METRICS",
    "Applier",
    "Endpoints",
    "Host",
    "Journal",
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
    "Trial",
    "TrialResult",
    "VethPair",
    "VethTestbed",
    "Workload",
    "applier_for",
    "check_pair",
    "list_pairs",
    "load_pair",
    "probe_settings",
    "replay_journal",
    "run_iperf3",
    "state_dir",
    "validate_settings",
]
