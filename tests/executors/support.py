"""Helpers of the Celery executor tests: a Redis key prefix per session, worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nictune.executors.pools import Registry, WorkerRecord
from tests.environment import unavailable
from tests.processes import ChildProcess

REDIS_URL = os.environ.get("NICTUNE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_reachable() -> str:
    """Empty when the machine's Redis answers, else why not."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        return f"Redis at {REDIS_URL} is unreachable: {exc}"
    return ""


def require_redis() -> None:
    """Skip the test when the machine's Redis does not answer (fail it under CI)."""
    reason = redis_reachable()
    if reason:
        unavailable(reason)


def unique_prefix() -> str:
    return f"nictune-test-{os.getpid()}-{uuid.uuid4().hex[:8]}:"


def other_database(url: str = REDIS_URL, db: int = 1) -> str:
    """The same Redis with another database number: a second broker for the tests."""
    return f"{url.rsplit('/', 1)[0]}/{db}"


def delete_prefix(prefix: str, url: str = REDIS_URL) -> int:
    """Remove every key under ``prefix`` (broker queues, results, registry) in ``url``'s database."""
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()
    return len(keys)


@dataclass
class WorkerProcess(ChildProcess):
    """A running ``nictune worker``."""

    testbed: str
    pool: str
    process: subprocess.Popen[bytes]
    log: Path


def start_worker(testbed: str, pool: str, env: dict[str, str], log: Path, time_limit: float = 10.0) -> WorkerProcess:
    command = [sys.executable, "-m", "nictune.cli.worker", "--testbed", testbed, "--pool", pool,
               "--time-limit", str(time_limit), "--log-level", "info"]
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ | env)
    return WorkerProcess(testbed, pool, process, log)


def wait_worker(registry: Registry, worker: WorkerProcess, state: str = "idle",
                timeout: float = 30.0) -> WorkerRecord:
    """Wait until ``worker`` publishes ``state``; returns its record."""
    deadline = time.monotonic() + timeout
    while True:
        if worker.process.poll() is not None:
            raise AssertionError(f"worker exited with {worker.process.returncode}:\n{worker.log.read_text()}")
        for record in registry.workers(worker.pool):
            if record.testbed == worker.testbed and record.pid == worker.process.pid and record.state == state:
                return record
        assert time.monotonic() < deadline, f"worker {worker.testbed} not {state} after {timeout}s:\n" \
                                            f"{worker.log.read_text()}"
        time.sleep(0.1)


@contextmanager
def running_worker(testbed: str, pool: str, env: dict[str, str], log: Path, registry: Registry,
                   time_limit: float = 10.0) -> Iterator[WorkerProcess]:
    worker = start_worker(testbed, pool, env, log, time_limit)
    try:
        wait_worker(registry, worker)
        yield worker
    finally:
        worker.stop()
