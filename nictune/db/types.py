"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from nictune.db._json import json_safe


def utcnow() -> datetime:
    """Return the current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` converted to UTC; a naive value is taken to be UTC already.

    Args:
        value: an aware or naive datetime.

    Returns:
        An aware datetime in UTC.
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always read back timezone-aware.

    PostgreSQL keeps the zone (``timestamptz``); SQLite keeps only the digits, so values
    are normalised to UTC on the way in and tagged as UTC on the way out. Naive inputs
    are taken to be UTC (the ``datetime.utcnow()`` convention).
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Normalise to UTC before storing."""
        return None if value is None else as_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Attach UTC to what the database returns."""
        return None if value is None else as_utc(value)


class SafeJSON(TypeDecorator[Any]):
    """``sqlalchemy.JSON`` that stores non-finite floats as ``null`` (see ``json_safe``)."""

    # none_as_null: a Python None is SQL NULL (so "IS NULL" works), not the JSON 'null'.
    impl = JSON(none_as_null=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        """Replace NaN and infinities before serialising."""
        return json_safe(value)
