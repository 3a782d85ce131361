"""Canonical JSON and content hashes shared by the models and the repository."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialise ``value`` to one canonical JSON text.

    Keys are sorted and no whitespace is emitted, so two equal dicts give the same text
    whatever their insertion order. Non-finite floats are refused because they have no
    JSON spelling and would make the hash depend on a serialiser's extension.

    Args:
        value: any JSON-serialisable value.

    Returns:
        The canonical JSON text.

    Raises:
        ValueError: ``value`` holds NaN or an infinity.
        TypeError: ``value`` holds something JSON cannot represent.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def content_hash(value: Any) -> str:
    """Return the sha256 hex digest of :func:`canonical_json` of ``value``.

    Args:
        value: any JSON-serialisable value.

    Returns:
        64 lowercase hex characters.
    """
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def json_safe(value: Any) -> Any:
    """Return ``value`` with every non-finite float replaced by ``None``.

    PostgreSQL's ``json`` type rejects ``NaN`` and ``Infinity`` (Python's ``json`` writes
    them anyway), so a measurement that produced one would fail to store on PostgreSQL
    while storing fine on SQLite. Storing ``null`` ("no value") is portable and honest.

    Args:
        value: a JSON-like structure of dicts, lists, tuples and scalars.

    Returns:
        An equal structure (tuples become lists) without non-finite floats.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value
