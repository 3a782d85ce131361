"""Executors: one contract over the local executor and the Celery executor (a real ``nictune
worker`` process on the machine's Redis), both measuring the simulated testbed.

The job loop relies on every executor for the same things: a request measured on the same
testbed gives the same figures whichever executor carried it (the simulated noise is seeded
by the request), the same fingerprint and default space, one sample per repeat, a value the
space does not allow refused as a measurement error naming it (the worker validates the
request again, whatever the client checked), ``slots`` at least one, requests measured from
several threads at once each given its own figures (the base class: thread-safe, up to
``slots`` measurements at once), and a failure inside the testbed carried back to the caller
naming its cause, as the same error type whichever executor carried it (a
:class:`~nictune.errors.MeasurementError`: the trial fails, the job goes on).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from typing import Any

import pytest

from nictune.errors import MeasurementError, NictuneError
from nictune.executors import Executor, MeasureRequest
from nictune.executors.celery_app import CelerySettings
from nictune.executors.celery_executor import ExecutorFactory
from nictune.executors.local import LocalExecutor
from nictune.executors.pools import Registry
from nictune.measure.benchmarks.workloads import get_workload
from nictune.search_spaces import load_space
from tests.executors.support import REDIS_URL, delete_prefix, require_redis, start_worker, unique_prefix, wait_worker

TESTBED = "sim:benson-40g"


@pytest.fixture(scope="module")
def celery_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ExecutorFactory, str]]:
    """A worker of ``TESTBED`` in a pool of its own, and the factory a service would use."""
    require_redis()
    tmp = tmp_path_factory.mktemp("executor-contract")
    prefix = unique_prefix()
    pool = f"c{prefix[-9:-1]}"
    env = {"NICTUNE_BROKER_URL": REDIS_URL, "NICTUNE_KEY_PREFIX": prefix, "NICTUNE_HEARTBEAT_S": "0.5",
           "NICTUNE_STATE_DIR": str(tmp / "state")}
    worker = start_worker(TESTBED, pool, env, tmp / "worker.log")
    registry = Registry(REDIS_URL, prefix)
    factory = ExecutorFactory(CelerySettings(broker_url=REDIS_URL, key_prefix=prefix))
    try:
        wait_worker(registry, worker)
        yield factory, pool
    finally:
        factory.close()
        worker.stop()
        registry.close()
        delete_prefix(prefix)


@pytest.fixture(params=["local", "celery"])
def executor(request: pytest.FixtureRequest) -> Iterator[Executor]:
    if request.param == "local":
        with LocalExecutor(TESTBED) as local:
            yield local
        return
    factory, pool = request.getfixturevalue("celery_pool")
    with factory(f"pool:{pool}") as remote:
        yield remote


def _request(executor: Executor, values: dict[str, Any], trial_id: int, repeats: int = 2, seed: int = 11,
             **workload: Any) -> MeasureRequest:
    """A request (``job_id``, ``trial_id``, step 0 name it: a worker answers a name it has
    answered before from its stored answer, so each test uses its own)."""
    space = load_space("benson-40g")
    shape = asdict(replace(get_workload("tcp"), **workload))
    return MeasureRequest(job_id=1, trial_id=trial_id, step=0, testbed=executor.testbed, space=space.definition,
                          values=values, workload=shape, repeats=repeats, seed=seed)


@pytest.mark.slow
def test_an_executor_measures_a_request_as_the_testbed_does(executor: Executor) -> None:
    reference = LocalExecutor(TESTBED)
    space = load_space("benson-40g")
    values = space.default().as_dict() | {"mtu": 9000}
    result = executor.measure(_request(executor, values, trial_id=1))
    expected = reference.measure(_request(reference, values, trial_id=1))
    assert len(result.samples) == 2
    assert [s.metrics for s in result.samples] == [s.metrics for s in expected.samples]
    # A pool's fingerprint is its testbeds' plus the pool's name.
    assert {k: v for k, v in executor.fingerprint().items() if k != "pool"} == reference.fingerprint()
    assert executor.default_space() == reference.default_space() == "benson-40g"
    assert executor.simulated is True and executor.slots >= 1


@pytest.mark.slow
def test_an_executor_refuses_a_value_outside_the_space_as_a_measurement_error(executor: Executor) -> None:
    space = load_space("benson-40g")
    bad = space.default().as_dict() | {"mtu": 12345}
    with pytest.raises(NictuneError) as refused:
        executor.measure(_request(executor, bad, trial_id=2))
    assert "mtu" in str(refused.value) and "12345" in str(refused.value), refused.value
    assert isinstance(refused.value, MeasurementError), type(refused.value)


@pytest.mark.slow
def test_an_executor_measures_requests_from_several_threads_each_with_its_own_figures(executor: Executor) -> None:
    space = load_space("benson-40g")
    configs = [space.default().as_dict() | {"rx_ring": ring, "mtu": mtu}
               for ring, mtu in ((256, 1500), (4096, 9000), (1024, 9000), (8192, 1500))]
    reference = LocalExecutor(TESTBED)
    expected = [[s.metrics for s in reference.measure(_request(reference, c, trial_id=20 + i, seed=i)).samples]
                for i, c in enumerate(configs)]
    assert len({str(e) for e in expected}) == len(configs)  # four different answers to tell apart
    with ThreadPoolExecutor(len(configs)) as threads:
        results = list(threads.map(lambda i: executor.measure(_request(executor, configs[i], 20 + i, seed=i)),
                                   range(len(configs))))
    assert [[s.metrics for s in r.samples] for r in results] == expected


def _bidir(executor: Executor, trial_id: int) -> MeasureRequest:
    """A request the simulated testbed cannot measure: both ends sending at once (its model
    refuses it inside ``measure``, after the request passed the space's checks)."""
    return _request(executor, load_space("benson-40g").default().as_dict(), trial_id, bidir=True)


@pytest.mark.slow
def test_a_failure_inside_the_testbed_reaches_the_caller_naming_its_cause(executor: Executor) -> None:
    with pytest.raises(NictuneError) as failed:
        executor.measure(_bidir(executor, trial_id=3))
    assert "bidir" in str(failed.value), failed.value


@pytest.mark.slow
def test_a_failure_inside_the_testbed_is_the_same_error_type_whichever_executor_carried_it(
        celery_pool: tuple[ExecutorFactory, str]) -> None:
    factory, pool = celery_pool
    raised: list[type[BaseException]] = []
    with LocalExecutor(TESTBED) as local, factory(f"pool:{pool}") as remote:
        for executor in (local, remote):
            with pytest.raises(NictuneError) as failed:
                executor.measure(_bidir(executor, trial_id=4))
            raised.append(type(failed.value))
    assert raised[0] is raised[1] is MeasurementError, raised


def test_the_contract_covers_every_executor() -> None:
    from nictune.executors.celery_executor import CeleryExecutor

    ours = {c for c in Executor.__subclasses__() if c.__module__.startswith("nictune.")}
    assert ours == {LocalExecutor, CeleryExecutor}
