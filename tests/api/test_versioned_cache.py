"""The service's per-process cache: values kept per data version with no expiry, one computation
per miss, and the answer of the version before while another request computes the new one."""

from __future__ import annotations

import threading
import time

from nictune.api.cache import VersionedCache


def test_a_value_is_kept_for_its_version_and_computed_again_for_another() -> None:
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


def test_while_a_new_version_is_computed_others_get_the_answer_before_or_wait() -> None:
    cache = VersionedCache()
    cache.get("best", 1, lambda: "old")
    release = threading.Event()
    computing = threading.Event()
    got: dict[str, str] = {}

    def recompute() -> str:
        computing.set()
        release.wait(5)
        return "new"

    def first() -> None:
        got["computer"] = cache.get("best", 2, recompute, previous=True)

    def patient() -> None:
        got["patient"] = cache.get("best", 2, lambda: "computed twice")

    worker = threading.Thread(target=first)
    worker.start()
    assert computing.wait(5)
    # A poller is answered at once with the answer being replaced, and nothing is computed twice.
    assert cache.get("best", 2, lambda: "computed twice", previous=True) == "old"
    assert cache.previous_hits == 1
    waiter = threading.Thread(target=patient)  # a caller that does not take the old answer waits
    waiter.start()
    time.sleep(0.05)
    assert waiter.is_alive() and "patient" not in got
    release.set()
    worker.join(5)
    waiter.join(5)
    assert got == {"computer": "new", "patient": "new"}
    assert cache.get("best", 2, lambda: "computed twice", previous=True) == "new"


def test_with_nothing_kept_before_a_caller_waits_for_the_computation() -> None:
    cache = VersionedCache()
    release = threading.Event()
    computing = threading.Event()

    def slow() -> str:
        computing.set()
        release.wait(5)
        return "first"

    worker = threading.Thread(target=lambda: cache.get("best", 1, slow, previous=True))
    worker.start()
    assert computing.wait(5)
    threading.Timer(0.05, release.set).start()
    assert cache.get("best", 1, lambda: "computed twice", previous=True) == "first"
    worker.join(5)
    assert cache.previous_hits == 0


def test_a_failed_computation_keeps_the_old_value_and_the_next_request_tries_again() -> None:
    cache = VersionedCache()
    cache.get("best", 1, lambda: "old")

    def broken() -> str:
        raise RuntimeError("database gone")

    try:
        cache.get("best", 2, broken, previous=True)
    except RuntimeError:
        pass
    else:  # pragma: no cover - the failure must reach the request that computed
        raise AssertionError("the failure was swallowed")
    assert cache.peek("best", 1) == "old"
    assert cache.get("best", 2, lambda: "new", previous=True) == "new"
