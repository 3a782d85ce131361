"""Mapping of SQLAlchemy and Alembic errors to :class:`nictune.errors.StorageError`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from sqlalchemy.exc import SQLAlchemyError

from nictune.errors import StorageError

P = ParamSpec("P")
R = TypeVar("R")


def describe(exc: BaseException) -> str:
    """Return a one-line description of a database error without the SQL text."""
    orig = getattr(exc, "orig", None)
    detail = str(orig) if orig is not None else str(exc)
    first_line = detail.strip().splitlines()[0] if detail.strip() else type(exc).__name__
    return f"{type(exc).__name__}: {first_line}"


@contextmanager
def storage_errors(action: str) -> Iterator[None]:
    """Re-raise any ``SQLAlchemyError`` raised inside the block as ``StorageError``.

    Args:
        action: what was being done, for the message ("opening the database" ...).

    Raises:
        StorageError: chained to the original error.
    """
    try:
        yield
    except SQLAlchemyError as exc:
        raise StorageError(f"database error while {action}: {describe(exc)}") from exc


def maps_storage_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a repository function so that SQLAlchemy errors leave it as StorageError."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with storage_errors(func.__name__.replace("_", " ")):
            return func(*args, **kwargs)

    return wrapper
