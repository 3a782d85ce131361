"""Turning a testbed name from the user into a :class:`Testbed`."""

from __future__ import annotations

from pathlib import Path

from nictune.errors import UnknownNameError
from nictune.measure._base import Testbed
from nictune.measure.sim import DEFAULT_NOISE, PROFILES, SimTestbed

#: The testbed used when the user names none.
DEFAULT_TESTBED = "sim:benson-40g"


def known_testbeds() -> list[str]:
    """Names the user can pass besides a testbed YAML file."""
    return [*PROFILES, "veth", "veth:NAME", "PATH/TO/pair.yaml"]


def open_testbed(name: str, *, noise: float | None = None) -> Testbed:
    """The testbed called ``name``: ``sim:PROFILE``, ``veth[:NAME]`` or a pair YAML file.

    Args:
        name: the testbed's name.
        noise: for simulated testbeds, the coefficient of variation of repeats.

    Raises:
        UnknownNameError: no such testbed.
    """
    if name.startswith("sim:"):
        if name not in PROFILES:
            raise UnknownNameError("testbed", name, known_testbeds())
        return SimTestbed(PROFILES[name], DEFAULT_NOISE if noise is None else noise)
    if name == "veth" or name.startswith("veth:"):
        from nictune.measure.veth import VethTestbed

        return VethTestbed(name.partition(":")[2] or "nt0")
    if name.endswith((".yaml", ".yml")) and Path(name).is_file():
        from nictune.measure.pair_file import SshPairTestbed, load_pair

        return SshPairTestbed(load_pair(name))
    raise UnknownNameError("testbed", name, known_testbeds())
