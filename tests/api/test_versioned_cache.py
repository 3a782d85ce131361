"""The service's per-process cache: values kept per data version, history entries for at most
MAX_AGE_S, a finished job's for as long as its version holds; one computation per miss."""

from __future__ import annotations

import threading
import time

import pytest

from nictune.api import cache as cache_module
from nictune.api.cache import MAX_AGE_S, VersionedCache


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    return now


def test_a_value_is_kept_for_its_version_and_computed_again_for_another(clock: list[float]) -> None:
    cache = VersionedCache()
    calls: list[int] = []

    def compute(v: int) -> str:
        calls.append(v)
        return f"answer at {v}"

    assert cache.get("best", 7, lambda: compute(7)) == "answer at 7"
    assert cache.get("best", 7, lambda: compute(7)) == "answer at 7"
    assert cache.peek("best", 7) == "answer at 7" and cache.peek("best", 8) is None
    assert cache.get("best", 8, lambda: compute(8)) == "answer at 8"
    assert calls == [7, 8] and (cache.hits, cache.misses) == (2, 2)


def test_history_entries_expire_after_max_age_and_finished_jobs_entries_do_not(clock: list[float]) -> None:
    cache = VersionedCache()
    cache.get("best", 1, lambda: "history")
    cache.get("order", 1, lambda: "finished job", max_age=None)
    clock[0] += MAX_AGE_S + 0.1
    assert cache.peek("best", 1) is None, "a history answer is recomputed after MAX_AGE_S (deleted jobs)"
    assert cache.peek("order", 1) == "finished job"
    assert cache.get("short", 1, lambda: "a", max_age=1.0) == "a"
    clock[0] += 1.5
    assert cache.get("short", 1, lambda: "b", max_age=1.0) == "b"


def test_concurrent_misses_of_one_key_compute_once() -> None:
    cache = VersionedCache()
    calls: list[int] = []
    started = threading.Barrier(4)

    def compute() -> int:
        calls.append(1)
        time.sleep(0.05)
        return 42

    def ask() -> None:
        started.wait()
        assert cache.get("k", 1, compute) == 42

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1]


def test_an_expired_value_of_the_same_version_is_answered_while_it_is_computed_again(clock: list[float]) -> None:
    cache = VersionedCache()
    cache.get("best", 3, lambda: "old")
    clock[0] += MAX_AGE_S + 1
    assert cache.peek("best", 3) is None and cache.stale("best", 3) == "old"
    assert cache.stale("best", 4) is None, "another version's value is never answered"
    release = threading.Event()
    calls: list[int] = []

    def recompute() -> str:
        calls.append(1)
        release.wait(5)
        return "new"

    cache.refresh("best", 3, recompute)
    cache.refresh("best", 3, recompute)  # one refresh of a key at a time
    assert cache.stale("best", 3) == "old"
    release.set()
    deadline = time.perf_counter() + 5
    while cache.peek("best", 3) != "new":
        assert time.perf_counter() < deadline
        time.sleep(0.01)
    assert calls == [1]


def test_a_failed_refresh_keeps_the_old_value(clock: list[float]) -> None:
    cache = VersionedCache()
    cache.get("best", 3, lambda: "old")

    def broken() -> str:
        raise RuntimeError("database gone")

    cache.refresh("best", 3, broken)
    deadline = time.perf_counter() + 5
    while "best" in cache._refreshing:  # waiting for the refresh thread
        assert time.perf_counter() < deadline
        time.sleep(0.01)
    assert cache.stale("best", 3) == "old"
