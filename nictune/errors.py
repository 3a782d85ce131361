"""The one exception tree of nictune.

Every error a user can cause or meet derives from :class:`NictuneError`. Lower-level
errors (``CalledProcessError``, ``SQLAlchemyError``, ``yaml.YAMLError`` ...) are mapped to
these at the boundary of the module that meets them; the CLI maps them to exit codes and
the API to HTTP statuses, and nothing else does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input that has several (a file with three bad fields).

    Attributes:
        field: the path of the field at fault (``knobs.rx_ring.high``, ``receiver.interface``).
        message: the whole line a user reads (``space.yaml:12: knobs.rx_ring.high: ...``).
        allowed: what that field accepts.
    """

    field: str | None
    message: str
    allowed: str | None = None


class NictuneError(Exception):
    """Root of every error nictune raises on purpose."""


class InvalidInputError(NictuneError):
    """Input from a user (CLI, API, file) is not acceptable.

    Attributes:
        field: the name of the offending field or knob, when there is one (the first one's
            when there are several).
        allowed: a human-readable description of the values that would be accepted.
        problems: every problem, when the input was checked as a whole (a space or pair file):
            the message lists them one a line, ``field`` and ``allowed`` are the first one's.
    """

    def __init__(self, message: str, *, field: str | None = None, allowed: str | None = None,
                 problems: Sequence[Problem] = ()):
        super().__init__(message)
        self.field = field
        self.allowed = allowed
        self.problems = tuple(problems)


class UnknownNameError(InvalidInputError):
    """A name (space, testbed, workload, knob, engine ...) that nictune does not know."""

    def __init__(self, kind: str, name: str, known: Sequence[str]):
        known_list = ", ".join(sorted(known)) or "(none)"
        super().__init__(
            f"unknown {kind} {name!r}; known {kind}s: {known_list}",
            field=kind,
            allowed=known_list,
        )
        self.kind = kind
        self.name = name


class NotFoundError(InvalidInputError):
    """Something the user referred to by id (a job, a configuration hash) does not exist."""


class SpaceDefinitionError(InvalidInputError):
    """A search-space definition (YAML or inline) is malformed."""


class ConfigurationError(InvalidInputError):
    """A configuration is not valid in its space (bad value, inactive knob, constraint)."""


class MeasurementError(NictuneError):
    """A measurement could not be made or gave no usable result."""


class HostCommandError(MeasurementError):
    """A command on a host failed, timed out or could not be started."""


class RestoreError(MeasurementError):
    """Settings could not be restored to their snapshot. The host needs attention."""


class StorageError(NictuneError):
    """The database could not be read or written."""


class DatabaseUrlError(StorageError, InvalidInputError):
    """A database URL nictune cannot use (malformed, a database it does not support, a driver
    that is not installed): a storage error that the user's input caused (CLI exit 2)."""


class JobError(NictuneError):
    """A job cannot be created, resumed or continued."""


class JobStateError(JobError):
    """A job cannot move from its state to the one asked for (:mod:`nictune.jobs.lifecycle`).

    Attributes:
        job_id: the job's id.
        state: its state.
        wanted: the state it was asked to move to.
    """

    def __init__(self, message: str, *, job_id: int, state: str, wanted: str):
        super().__init__(message)
        self.job_id, self.state, self.wanted = job_id, state, wanted
