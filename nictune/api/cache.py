"""A per-process cache of values computed from the history, valid for one version of the data.

Averaging every measurement of a context and ranking the configurations for
``GET /v1/history/best`` is the service's most expensive work (a few hundred
milliseconds for 150,000 measurements); sorting a finished job's trials by a metric is
the next. Each entry is stored with the version of the data it was computed from and is
reused only while the caller still sees that version:

* the history: the database's history version (:func:`data_version`,
  :data:`nictune.db.models.history_version`), counted up by every transaction that adds
  measurements or deletes them, so it changes exactly when the answers can;
* a finished job's trials: the job's end time (they never change afterwards): their order,
  or the landmarks a page in an index's order starts from.

Nothing expires: an entry is computed again only when its version moves (or when it is the
least recently used of :data:`MAX_ENTRIES`). Concurrent misses of one key compute once; a
caller that allows it (:meth:`VersionedCache.get`, ``previous=True``) is answered the value
of the version before while another request computes the new one, instead of waiting.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Engine

from nictune.db import connection_scope
from nictune.db.stats import version as history_version

#: Entries kept, the least recently used dropped first: a few per question of the history, one
#: per finished job and order its pages were asked in (landmarks: a few hundred bytes; a sort
#: of a job's trials in another order: 8 bytes a trial).
MAX_ENTRIES = 512

T = TypeVar("T")


@dataclass
class _Entry:
    version: Hashable
    value: Any


def data_version(dbe: Engine) -> int:
    """The history's version (:func:`nictune.db.stats.version`): changes whenever measurements
    are added or deleted.

    Raises:
        StorageError: the database failed.
    """
    with connection_scope(dbe, snapshot=False) as c:  # one statement: no transaction around it
        return history_version(c)


class VersionedCache:
    """Values computed from the history, kept while their version is unchanged."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0
        #: Answers of the version before, given while another request computed the new one.
        self.previous_hits = 0

    def _fresh(self, key: Hashable, version: Hashable) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.version != version:
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def peek(self, key: Hashable, version: Hashable) -> Any:
        """The value of ``key`` at ``version`` if it is kept, else ``None`` (nothing computed)."""
        entry = self._fresh(key, version)
        return None if entry is None else entry.value

    def get(self, key: Hashable, version: Hashable, compute: Callable[[], T], *, previous: bool = False) -> T:
        """The value of ``key`` at ``version``, computed (once, whatever the concurrency) on a miss.

        ``previous``: while another request computes ``key`` at a new version, answer the value
        kept for the version before (if any) instead of waiting for it; the request that
        computes it, and every request after, gets the new one (stale while revalidating, with
        no fixed expiry: for answers a poller may see one computation late)."""
        entry = self._fresh(key, version)
        if entry is not None:
            return entry.value
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
            before = self._entries.get(key) if previous else None
        if before is None:
            key_lock.acquire()
        elif not key_lock.acquire(blocking=False):  # another request computes it: the answer before
            with self._lock:
                self.previous_hits += 1
            return before.value
        try:
            entry = self._fresh(key, version)  # computed by another request meanwhile
            if entry is not None:
                return entry.value
            value = compute()
            self._store(key, version, value)
            return value
        finally:
            key_lock.release()

    def _store(self, key: Hashable, version: Hashable, value: Any) -> None:
        with self._lock:
            self.misses += 1
            self._entries[key] = _Entry(version, value)
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_ENTRIES:
                old, _ = self._entries.popitem(last=False)
                self._key_locks.pop(old, None)
