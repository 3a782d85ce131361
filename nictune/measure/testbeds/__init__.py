"""Testbeds: the kinds of sender/receiver pair nictune measures, and the registry that opens
one by name.

Importing this package registers every kind in :data:`TESTBED_KINDS` (in this order, the
order names are tried): ``sim`` (:mod:`.sim`, the model of :mod:`nictune.measure.sim` with
noise), ``veth`` (:mod:`.veth`, two namespaces of this machine) and ``ssh`` (:mod:`.pair_file`,
two hosts from a pair YAML file). A new kind is a module here with a :class:`Testbed` subclass
and a factory decorated with :func:`register_testbed`, imported below.
"""

from __future__ import annotations

from nictune.measure.testbeds._base import (
    DEFAULT_TESTBED,
    TESTBED_KINDS,
    TestbedFactory,
    TestbedKind,
    kind_of,
    known_testbeds,
    open_testbed,
    recover,
    register_testbed,
)

# The kinds register in the order their names are tried and listed (known_testbeds): the
# model's profiles, veth pairs, then pair files.
# isort: off
from nictune.measure.testbeds.sim import DEFAULT_NOISE, SimTestbed, check_modelled
from nictune.measure.testbeds.veth import VethPair, VethTestbed, check_pair_name, list_namespaces, list_pairs
from nictune.measure.testbeds.pair_file import PairSpec, SshPairTestbed, check_pair, describe_pair, load_pair
# isort: on

__all__ = [
    "DEFAULT_NOISE",
    "DEFAULT_TESTBED",
    "TESTBED_KINDS",
    "PairSpec",
    "SimTestbed",
    "SshPairTestbed",
    "TestbedFactory",
    "TestbedKind",
    "VethPair",
    "VethTestbed",
    "check_modelled",
    "check_pair",
    "check_pair_name",
    "describe_pair",
    "kind_of",
    "known_testbeds",
    "list_namespaces",
    "list_pairs",
    "load_pair",
    "open_testbed",
    "recover",
    "register_testbed",
]
