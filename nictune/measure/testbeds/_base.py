"""The testbed registry: turning a testbed name from the user into a :class:`Testbed`.

Each kind of testbed registers a factory with :func:`register_testbed`, saying which names
are its own (``sim:PROFILE``, ``veth[:NAME]``, a pair YAML file); :func:`open_testbed` asks
the kinds in :data:`TESTBED_KINDS` in turn. A pool of workers (``pool:NAME``) is no testbed
of this process: the executors resolve it (:mod:`nictune.executors.celery_executor`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from nictune.errors import RestoreError, UnknownNameError
from nictune.measure._base import Testbed

#: The testbed used when the user names none.
DEFAULT_TESTBED = "sim:benson-40g"

#: ``factory(name, noise)``: the testbed called ``name`` (``noise``: a model's coefficient of
#: variation of repeats, ``None`` for its default; real testbeds ignore it).
TestbedFactory = Callable[[str, "float | None"], Testbed]
F = TypeVar("F", bound=TestbedFactory)


@dataclass(frozen=True)
class TestbedKind:
    """One kind of testbed the user can name.

    Attributes:
        kind: the :attr:`Testbed.kind` its testbeds have (``sim``, ``veth``, ``ssh``).
        matches: whether a name is one of this kind's (a kind that does not know a name
            leaves it to the others).
        names: how the user names its testbeds, for messages and ``testbed list``
            (``sim:benson-40g``, ``veth:NAME``, ``PATH/TO/pair.yaml``).
        factory: opens the testbed a matching name names.
    """

    __test__ = False  # not a pytest test class, whatever its name

    kind: str
    matches: Callable[[str], bool]
    names: Callable[[], list[str]]
    factory: TestbedFactory


#: The kinds of testbed, by :attr:`TestbedKind.kind`, in the order names are tried; filled by
#: :func:`register_testbed` when :mod:`nictune.measure.testbeds` imports the kinds' modules.
TESTBED_KINDS: dict[str, TestbedKind] = {}


def register_testbed(kind: str, *, matches: Callable[[str], bool], names: Callable[[], list[str]]
                     ) -> Callable[[F], F]:
    """Function decorator: make ``factory(name, noise)`` open the testbeds of ``kind``, the
    names ``matches`` accepts; ``names()`` says how the user writes them."""

    def register(factory: F) -> F:
        TESTBED_KINDS[kind] = TestbedKind(kind, matches, names, factory)
        return factory

    return register


def known_testbeds() -> list[str]:
    """Names the user can pass besides a testbed YAML file."""
    return [name for kind in TESTBED_KINDS.values() for name in kind.names()]


def kind_of(name: str) -> TestbedKind:
    """The kind whose testbeds ``name`` names.

    Raises:
        UnknownNameError: no kind knows the name.
    """
    for kind in TESTBED_KINDS.values():
        if kind.matches(name):
            return kind
    raise UnknownNameError("testbed", name, known_testbeds())


def open_testbed(name: str, *, noise: float | None = None, recover_journal: bool = True) -> Testbed:
    """The testbed called ``name``: ``sim:PROFILE``, ``veth[:NAME]`` or a pair YAML file.

    Args:
        name: the testbed's name.
        noise: for simulated testbeds, the coefficient of variation of repeats.
        recover_journal: restore what a crashed run left there first (:func:`recover`);
            ``False`` for a dry run, which changes nothing. A model has nothing to restore.

    Raises:
        UnknownNameError: no such testbed.
    """
    bed = kind_of(name).factory(name, noise)
    if recover_journal and not bed.simulated:
        bed.notices = tuple(recover(bed.journal_key))
    return bed


def recover(testbed: str) -> list[str]:
    """Restore settings that a crashed run left on ``testbed`` (its apply journal), and say so.

    Raises:
        RestoreError: the journal could not be replayed; the host needs attention.
    """
    from nictune.measure.trial.journal import Journal, replay_journal
    from nictune.measure.trial.locks import exclusive

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
