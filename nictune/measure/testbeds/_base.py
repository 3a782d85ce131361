"""Turning a testbed name from the user into a :class:`Testbed`."""

from __future__ import annotations

from pathlib import Path

from nictune.errors import RestoreError, UnknownNameError
from nictune.measure._base import Testbed
from nictune.measure.sim import PROFILES
from nictune.measure.testbeds.sim import DEFAULT_NOISE, SimTestbed

#: The testbed used when the user names none.
DEFAULT_TESTBED = "sim:benson-40g"


def known_testbeds() -> list[str]:
    """Names the user can pass besides a testbed YAML file."""
    return [*PROFILES, "veth", "veth:NAME", "PATH/TO/pair.yaml"]


def open_testbed(name: str, *, noise: float | None = None, recover_journal: bool = True) -> Testbed:
    """The testbed called ``name``: ``sim:PROFILE``, ``veth[:NAME]`` or a pair YAML file.

    Args:
        name: the testbed's name.
        noise: for simulated testbeds, the coefficient of variation of repeats.
        recover_journal: restore what a crashed run left there first (:func:`recover`);
            ``False`` for a dry run, which changes nothing.

    Raises:
        UnknownNameError: no such testbed.
    """
    if name.startswith("sim:"):
        if name not in PROFILES:
            raise UnknownNameError("testbed", name, known_testbeds())
        return SimTestbed(PROFILES[name], DEFAULT_NOISE if noise is None else noise)
    bed: Testbed
    if name == "veth" or name.startswith("veth:"):
        from nictune.measure.testbeds.veth import VethTestbed

        bed = VethTestbed(name.partition(":")[2] or "nt0")
    elif name.endswith((".yaml", ".yml")) and Path(name).is_file():
        from nictune.measure.testbeds.pair_file import SshPairTestbed, load_pair

        bed = SshPairTestbed(load_pair(name))
    else:
        raise UnknownNameError("testbed", name, known_testbeds())
    if recover_journal:
        bed.notices = tuple(recover(bed.name))
    return bed


def recover(testbed: str) -> list[str]:
    """Restore settings that a crashed run left on ``testbed`` (its apply journal), and say so.

    Raises:
        RestoreError: the journal could not be replayed; the host needs attention.
    """
    from nictune.measure.journal import Journal, replay_journal
    from nictune.measure.locks import exclusive

    messages: list[str] = []
    journal = Journal(testbed)
    if not journal.exists():
        return messages
    # With the testbed lock held no trial runs there (a running one is waited for), so a
    # journal left now is a dead run's, whichever process wrote it.
    with exclusive(journal.lock_path, testbed):
        reports = replay_journal(testbed=testbed, force=True)
    for report in reports:
        if report.errors:
            raise RestoreError(f"{testbed}: could not restore what a crashed run left: {'; '.join(report.errors)}")
        if report.restored:
            messages.append(f"restored settings a crashed run left on {testbed}: " + "; ".join(report.restored))
    return messages
