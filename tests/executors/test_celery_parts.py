"""The Celery executor's parts, without network namespaces: wire format, registry, options,
time limit, and a real worker process on a simulated testbed (the machine's Redis)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nictune.errors import InvalidInputError, MeasurementError
from nictune.executors import MeasureRequest
from nictune.executors.celery_app import CelerySettings, pool_of
from nictune.executors.celery_executor import CeleryExecutor, ExecutorFactory
from nictune.executors.local import LocalExecutor
from nictune.executors.pools import Registry, WorkerRecord
from nictune.executors.wire import result_from_dict, result_to_dict
from nictune.executors.worker import TrialTimeLimit, WorkerConfig, time_limit, worker_id
from nictune.measure._base import Sample, TrialResult
from nictune.search_spaces import load_space

from .support import REDIS_URL, delete_prefix, require_redis, running_worker, start_worker, unique_prefix


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    require_redis()
    prefix = unique_prefix()
    try:
        yield prefix
    finally:
        delete_prefix(prefix)


def test_a_result_survives_the_wire() -> None:
    t0, t1 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    result = TrialResult([Sample({"throughput_gbps": 9.5}, t0, t1, {"rx": {"irq": 3}})], {"seed": 1}, ["a note"])
    back = result_from_dict(result_to_dict(result))
    assert back == result
    with pytest.raises(MeasurementError, match="malformed"):
        result_from_dict({"samples": [{"metrics": {}}]})


def test_bad_options_name_their_field() -> None:
    with pytest.raises(InvalidInputError) as err:
        pool_of("pool:Bad Name")
    assert err.value.field == "pool"
    with pytest.raises(InvalidInputError) as err:
        CelerySettings(broker_url="kafka://x").check()
    assert err.value.field == "broker_url"
    with pytest.raises(InvalidInputError) as err:
        CelerySettings(broker_url="amqp://guest@localhost//").check()  # no Redis for the registry
    assert err.value.field == "result_backend"
    settings = CelerySettings(visibility_timeout_s=30)
    with pytest.raises(InvalidInputError) as err:
        WorkerConfig("sim:benson-40g", "lab", 28, settings).check()
    assert err.value.field == "time_limit"
    WorkerConfig("sim:benson-40g", "lab", 20, settings).check()
    with pytest.raises(InvalidInputError, match="measures locally"):
        ExecutorFactory(None)("pool:lab")


@pytest.mark.system
def test_the_cli_refuses_bad_input_with_exit_2() -> None:
    run = subprocess.run([sys.executable, "-m", "nictune.cli.worker", "--testbed", "sim:benson-40g",
                          "--pool", "No Spaces", "--broker", REDIS_URL], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert "pool name" in run.stderr


def test_the_time_limit_interrupts_the_work() -> None:
    started = time.monotonic()
    with pytest.raises(TrialTimeLimit), time_limit(0.3):
        time.sleep(5)
    assert time.monotonic() - started < 2


@pytest.mark.system
def test_a_pool_keeps_one_fingerprint(redis_prefix: str) -> None:
    registry = Registry(REDIS_URL, redis_prefix)
    first = WorkerRecord("w1@h", "h", 1, "veth:a", "lab", "veth", {"kernel": "6.1", "nic": "veth"})
    other = WorkerRecord("w2@h", "h", 2, "veth:b", "lab", "veth", {"kernel": "6.8", "nic": "veth"})
    try:
        assert registry.pool("lab") is None
        with pytest.raises(InvalidInputError, match="no worker has joined"):
            CeleryExecutor("lab", app=None, registry=registry)  # type: ignore[arg-type]
        registry.join(first, simulated=False, default_space="veth")
        with pytest.raises(InvalidInputError, match="results would not be comparable") as err:
            registry.join(other, simulated=False, default_space="veth")
        assert err.value.field == "pool"
        registry.publish(first, ttl_s=1.0)
        assert [w.worker_id for w in registry.workers("lab")] == ["w1@h"]
        time.sleep(1.3)
        assert registry.workers("lab") == []  # no heartbeat: gone
        # The pool stays pinned: `nictune workers` says so (it showed only "no live worker").
        listed = subprocess.run([sys.executable, "-m", "nictune", "workers", "--broker", REDIS_URL],
                                capture_output=True, text=True, timeout=60,
                                env={**os.environ, "NICTUNE_KEY_PREFIX": redis_prefix, "COLUMNS": "200"})
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines() == [
            "no live worker (celery executor)",
            "pool:lab: veth pair, default space veth, no live worker: a job on it waits (pinned by w1@h)"]
    finally:
        registry.close()


def request_for(pool: str, job_id: int, values: dict[str, Any] | None = None) -> MeasureRequest:
    space = load_space("benson-40g")
    config = space.default()
    return MeasureRequest(job_id=job_id, trial_id=job_id * 10, step=0, testbed=f"pool:{pool}",
                          space=space.definition, values=values if values is not None else dict(config),
                          workload={"name": "tcp", "protocol": "tcp", "duration_s": 10.0}, repeats=2, seed=3)


@pytest.mark.system
def test_a_sim_worker_measures_what_the_local_executor_measures(redis_prefix: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"NICTUNE_BROKER_URL": REDIS_URL, "NICTUNE_KEY_PREFIX": redis_prefix, "NICTUNE_HEARTBEAT_S": "0.5",
           "NICTUNE_STATE_DIR": str(tmp_path / "state")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = CelerySettings()
    registry = Registry(REDIS_URL, redis_prefix)
    factory = ExecutorFactory(settings)
    # The record of a killed predecessor (same node name, its process gone) that has not
    # expired yet does not keep the worker from starting.
    gone = subprocess.Popen(["true"])
    gone.wait()
    registry.publish(WorkerRecord(worker_id("simlab", "sim:benson-40g"), socket.gethostname(), gone.pid,
                                  "sim:benson-40g", "simlab", "sim", {}, state="busy"), ttl_s=30)
    try:
        with running_worker("sim:benson-40g", "simlab", env, tmp_path / "w.log", registry):
            executor = factory("pool:simlab")
            assert executor.slots == 1 and executor.simulated and executor.kind == "sim"
            remote = executor.measure(request_for("simlab", 1))
            with LocalExecutor("sim:benson-40g") as local:
                here = local.measure(request_for("simlab", 1))
            assert [s.metrics for s in remote.samples] == [s.metrics for s in here.samples]
            assert any(n.startswith("measured by nictune-simlab-sim-benson-40g@") for n in remote.notes)
            # The same request again is answered from its stored result, not measured twice.
            assert executor.measure(request_for("simlab", 1)).samples == remote.samples
            assert registry.workers("simlab")[0].measured == 1
            ready = (tmp_path / "w.log").read_text()
            ready_line = next(line for line in ready.splitlines() if "ready, measuring on" in line)
            assert os.geteuid() != 0 or "superuser privileges" not in ready  # root on purpose: no warning
            assert ready_line.startswith(f"nictune worker nictune-simlab-sim-benson-40g@{socket.gethostname()}: "
                                         f"ready, measuring on sim:benson-40g for pool:simlab (broker {REDIS_URL})")
            # Values are validated again on the worker: a bad one fails the measurement only.
            bad = dict(request_for("simlab", 2).values) | {"mtu": 123}
            with pytest.raises(MeasurementError, match="mtu"):
                executor.measure(request_for("simlab", 2, bad))
            # The pool's model is known from its pinned fingerprint: what it ignores is named.
            assert executor.ignored_knobs(load_space("benson-40g")) == ["tx_ring"]
            # A second worker on the same testbed and pool would share the node name, and the
            # two registry records would overwrite each other: it is refused.
            twin = start_worker("sim:benson-40g", "simlab", env, tmp_path / "twin.log")
            assert twin.process.wait(timeout=60) == 2
            said = " ".join((tmp_path / "twin.log").read_text().split())
            assert "worker nictune-simlab-sim-benson-40g@" in said and "is already running" in said, said
            assert len(registry.workers("simlab")) == 1
    finally:
        factory.close()
        registry.close()


class _Pending:
    """A task result that becomes ready once ``done()`` says so, or at the latest ``deadline_s``
    seconds after it was made (so that a test that goes wrong ends and its assertions say why)."""

    state = "SUCCESS"

    def __init__(self, done: Callable[[], bool], deadline_s: float = 10.0):
        self.done = done
        self.deadline = time.monotonic() + deadline_s
        self.result = {"ok": True}

    def ready(self) -> bool:
        return self.done() or time.monotonic() >= self.deadline


@pytest.mark.slow
def test_a_changed_waiting_reason_does_not_flip_the_job_to_running(redis_prefix: str) -> None:
    """No live worker, then one on another broker: the job is told the new reason before the
    old one ends, so it stays waiting (it flipped to running and back for a moment).

    The worker joins as soon as the job is told it waits, and a request counts as stale after
    0.5 s, less than the 1 s between two looks at the registry: the second look sees the
    worker on the other broker, whatever the machine's speed."""
    registry = Registry(REDIS_URL, redis_prefix)
    told: list[str | None] = []
    record = WorkerRecord("w1@h", "h", os.getpid(), "sim:benson-40g", "lab", "sim", {}, state="idle",
                          broker="redis://elsewhere:6379/0")

    def on_wait(_job: int, message: str | None) -> None:
        told.append(message)
        if len(told) == 1:  # the first reason, "no live worker": now one appears
            registry.publish(record, ttl_s=30)

    def mismatch_told() -> bool:
        return any(m is not None and "take requests from" in m for m in told)

    try:
        registry.join(record, simulated=True, default_space="benson-40g")
        executor = CeleryExecutor("lab", app=None, registry=registry, on_wait=on_wait,  # type: ignore[arg-type]
                                  poll_s=0.05, broker=REDIS_URL, stale_s=0.5)
        assert executor._wait(_Pending(mismatch_told), request_for("lab", 1)) == {"ok": True}
        reasons = [m for m in told if m is not None]
        assert reasons[0] == "waiting for a worker on pool lab", told
        assert "take requests from redis://elsewhere:6379/0" in reasons[-1], told
        # The running count never reaches 0 before the end: no flip to running in between.
        count = 0
        for message in told[:-1]:
            count += 1 if message is not None else -1
            assert count > 0, told
        assert told[-1] is None and count - 1 == 0, told
    finally:
        registry.close()
