"""A per-process cache of values computed from the history, valid for one version of the data.

Averaging every measurement of a context and ranking the configurations for
``GET /v1/history/best`` is the service's most expensive work (a few hundred
milliseconds for 150,000 measurements); sorting a finished job's trials by a metric is
the next. Each entry is stored with the version of the data it was computed from and is
reused only while the caller still sees that version:

* the history: the newest measurement id (:func:`data_version`). Measurements are only
  ever added, each trial's rows in the transaction that completes it, so the id changes
  exactly when results arrive;
* a finished job's trials: the job's end time (they never change afterwards): their order,
  or the landmarks a page in an index's order starts from.

Rows disappear only when jobs are deleted, so history entries also expire after
``MAX_AGE_S``; a finished job's (its trials' order) is kept while its end time is the same
(a deleted job's pages are a 404 before the cache is asked).
Concurrent misses of one key compute once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Engine, func, select

from nictune.db import Measurement, connection_scope

log = logging.getLogger(__name__)

MAX_AGE_S = 10.0
#: Entries kept, the least recently used dropped first: a few per question of the history, one
#: per finished job and order its pages were asked in (landmarks: a few hundred bytes; a sort
#: of a job's trials in another order: 8 bytes a trial).
MAX_ENTRIES = 512

T = TypeVar("T")


@dataclass
class _Entry:
    version: int
    stored_at: float
    value: Any
    #: Seconds after which the entry is computed again whatever its version (None: never).
    max_age: float | None = MAX_AGE_S


_NEWEST = select(func.max(Measurement.id))


def data_version(dbe: Engine) -> int:
    """The id of the newest measurement (0 for none): changes whenever results are added.

    Raises:
        StorageError: the database failed.
    """
    with connection_scope(dbe, snapshot=False) as c:  # one statement: no transaction around it
        return int(c.scalar(_NEWEST) or 0)


class VersionedCache:
    """Values computed from the history, kept while :func:`data_version` is unchanged."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._refreshing: set[Hashable] = set()
        self.hits = 0
        self.misses = 0

    def _fresh(self, key: Hashable, version: int) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.version != version or (
                    entry.max_age is not None and time.monotonic() - entry.stored_at > entry.max_age):
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def peek(self, key: Hashable, version: int) -> Any:
        """The value of ``key`` at ``version`` if it is kept, else ``None`` (nothing computed)."""
        entry = self._fresh(key, version)
        return None if entry is None else entry.value

    def get(self, key: Hashable, version: int, compute: Callable[[], T], max_age: float | None = MAX_AGE_S) -> T:
        """The value of ``key`` at ``version``, computed (once, whatever the concurrency) on a miss.
        ``max_age``: seconds it is kept at most (``None``: while its version holds, for values
        whose version says everything, such as a finished job's)."""
        entry = self._fresh(key, version)
        if entry is not None:
            return entry.value
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            entry = self._fresh(key, version)  # computed by another request meanwhile
            if entry is not None:
                return entry.value
            value = compute()
            self._store(key, version, value, max_age, miss=True)
            return value

    def _store(self, key: Hashable, version: int, value: Any, max_age: float | None, miss: bool) -> None:
        with self._lock:
            self.misses += miss
            self._entries[key] = _Entry(version, time.monotonic(), value, max_age)
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_ENTRIES:
                old, _ = self._entries.popitem(last=False)
                self._key_locks.pop(old, None)

    def stale(self, key: Hashable, version: int) -> Any:
        """The value of ``key`` at ``version`` whatever its age, else ``None``."""
        with self._lock:
            entry = self._entries.get(key)
            return entry.value if entry is not None and entry.version == version else None

    def refresh(self, key: Hashable, version: int, compute: Callable[[], Any], max_age: float | None = MAX_AGE_S
                ) -> None:
        """Compute ``key`` at ``version`` again on a thread of its own and keep the result, while
        callers go on answering the value they have (stale while revalidating: a request never
        waits for the periodic recomputation of a value whose version has not changed). At
        most one refresh of a key runs at a time; one that fails leaves the old value, and the
        next request after it tries again."""
        with self._lock:
            if key in self._refreshing:
                return
            self._refreshing.add(key)

        def run() -> None:
            try:
                self._store(key, version, compute(), max_age, miss=False)
            except Exception:
                log.warning("refreshing a cached answer failed; the next request computes it", exc_info=True)
            finally:
                with self._lock:
                    self._refreshing.discard(key)

        threading.Thread(target=run, name="nictune-cache-refresh", daemon=True).start()
