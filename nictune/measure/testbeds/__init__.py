"""Testbeds: the kinds of sender/receiver pair nictune measures (``sim`` over the model of
:mod:`nictune.measure.sim`, ``veth`` pairs of namespaces, ``ssh`` pairs from a YAML file), and
:func:`open_testbed`, which opens one by name."""

from __future__ import annotations

from nictune.measure.testbeds._base import DEFAULT_TESTBED, known_testbeds, open_testbed, recover
from nictune.measure.testbeds.pair_file import PairSpec, SshPairTestbed, check_pair, describe_pair, load_pair
from nictune.measure.testbeds.sim import DEFAULT_NOISE, SimTestbed, check_modelled
from nictune.measure.testbeds.veth import VethPair, VethTestbed, check_pair_name, list_namespaces, list_pairs

__all__ = [
    "DEFAULT_NOISE",
    "DEFAULT_TESTBED",
    "PairSpec",
    "SimTestbed",
    "SshPairTestbed",
    "VethPair",
    "VethTestbed",
    "check_modelled",
    "check_pair",
    "check_pair_name",
    "describe_pair",
    "known_testbeds",
    "list_namespaces",
    "list_pairs",
    "load_pair",
    "open_testbed",
    "recover",
]
