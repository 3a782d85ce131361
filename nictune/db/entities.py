"""Content-addressed rows: testbeds, workloads and configurations, stored once each."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session

from nictune.db._errors import maps_storage_errors
from nictune.db._json import canonical_json, content_hash
from nictune.db.models import TESTBED_KINDS, Base, Configuration, Testbed, Workload
from nictune.errors import InvalidInputError, StorageError

ModelT = TypeVar("ModelT", bound=Base)


def _lookup(
    s: Session, model: type[ModelT], column: InstrumentedAttribute[str], value: str
) -> ModelT | None:
    return s.scalars(select(model).where(column == value)).one_or_none()


def _get_or_create(
    s: Session,
    model: type[ModelT],
    column: InstrumentedAttribute[str],
    value: str,
    build: Callable[[], ModelT],
) -> ModelT:
    found = _lookup(s, model, column, value)
    if found is not None:
        return found
    created = build()
    try:
        # A SAVEPOINT, so losing the race below does not abort the caller's transaction.
        with s.begin_nested():
            s.add(created)
    except IntegrityError:
        # Another transaction committed the same key between our look-up and insert.
        found = _lookup(s, model, column, value)
        if found is None:
            raise
        return found
    return created


def _hash_of(value: Mapping[str, Any], what: str) -> str:
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a mapping, not {type(value).__name__}",
                                field=what)
    try:
        return content_hash(dict(value))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} is not JSON-serialisable: {exc}", field=what) from exc


def _require_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"{what} name must be a non-empty string", field="name")


@maps_storage_errors
def get_or_create_testbed(
    s: Session, name: str, kind: str, fingerprint: Mapping[str, Any]
) -> Testbed:
    """Return the testbed with this fingerprint, registering it on first sight.

    The fingerprint (kernel, driver, NIC, CPU; for the simulated model its profile and
    model version) identifies the testbed: results measured under one fingerprint are
    reused only under the same fingerprint. When a testbed with this fingerprint exists
    under another name, that row is returned unchanged (its first name is kept).

    Args:
        s: the session.
        name: the user's name for the testbed.
        kind: one of ``sim``, ``veth``, ``ssh``.
        fingerprint: JSON-serialisable mapping.

    Returns:
        The stored testbed.

    Raises:
        InvalidInputError: empty name, unknown kind, or a fingerprint JSON cannot hold.
        StorageError: the database failed.
    """
    _require_name(name, "testbed")
    if kind not in TESTBED_KINDS:
        raise InvalidInputError(
            f"unknown testbed kind {kind!r}", field="kind", allowed=", ".join(TESTBED_KINDS)
        )
    key = _hash_of(fingerprint, "fingerprint")
    return _get_or_create(
        s, Testbed, Testbed.fingerprint_hash, key,
        lambda: Testbed(name=name, kind=kind, fingerprint=dict(fingerprint),
                        fingerprint_hash=key),
    )


@maps_storage_errors
def get_or_create_workload(s: Session, name: str, definition: Mapping[str, Any]) -> Workload:
    """Return the workload with this definition, registering it on first sight.

    Identified by the sha256 of the definition's canonical JSON; an existing row found
    under another name is returned unchanged.

    Args:
        s: the session.
        name: the workload's name.
        definition: JSON-serialisable mapping (tool, streams, message size ...).

    Returns:
        The stored workload.

    Raises:
        InvalidInputError: empty name or a definition JSON cannot hold.
        StorageError: the database failed.
    """
    _require_name(name, "workload")
    key = _hash_of(definition, "workload definition")
    return _get_or_create(
        s, Workload, Workload.key_hash, key,
        lambda: Workload(name=name, definition=dict(definition), key_hash=key),
    )


@maps_storage_errors
def workload_names(s: Session) -> list[str]:
    """Names of the workloads the database holds (built-in ones, users' files, built-ins
    changed by options)."""
    return sorted(set(s.scalars(select(Workload.name))))


def _same_canonical(stored: str, given: str) -> bool:
    if stored == given:
        return True
    try:
        return canonical_json(json.loads(stored)) == canonical_json(json.loads(given))
    except ValueError:
        return False


@maps_storage_errors
def get_or_create_configuration(s: Session, hash: str, canonical: str) -> Configuration:
    """Return the configuration with this cache-key hash, storing it on first sight.

    Args:
        s: the session.
        hash: the cache key computed by the caller from the active knobs.
        canonical: the configuration's canonical JSON text.

    Returns:
        The stored configuration.

    Raises:
        InvalidInputError: empty hash or canonical form.
        StorageError: the hash is already stored with a different canonical form (a
            hash collision or an inconsistent canonicaliser: the cache would be wrong),
            or the database failed.
    """
    if not hash or not canonical:
        raise InvalidInputError("a configuration needs a hash and a canonical form",
                                field="configuration")
    stored = _get_or_create(
        s, Configuration, Configuration.hash, hash,
        lambda: Configuration(hash=hash, canonical=canonical),
    )
    if not _same_canonical(stored.canonical, canonical):
        raise StorageError(
            f"configuration hash {hash[:16]}... is stored with a different canonical form "
            f"({stored.canonical!r} vs {canonical!r}); refusing to mix their results"
        )
    return stored
