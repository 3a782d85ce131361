"""End to end: the machine's Redis, the service (uvicorn subprocess) and ``nictune worker``
processes on real veth pairs of one pool.

The pairs are created by the test (so a worker's crash recovery restores their settings
but keeps them) and removed at the end. The search space holds only per-namespace knobs
(MTU, txqueuelen, GSO, TSO of the veth ends): two pairs on one machine measured at the same time
must not share a global sysctl. Every MTU and txqueuelen choice differs from the kernel's defaults, so any
trial in flight leaves visible changes to the link when its worker is killed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from nictune.api.client import Client
from nictune.db import Measurement, Trial, open_database, session_scope
from nictune.db.auth import create_token
from nictune.errors import InvalidInputError
from nictune.executors.pools import Registry
from nictune.measure.hosts import NetnsHost
from nictune.measure.testbeds.veth import VethPair
from tests.api.server import running_server
from tests.measure.support import netns_usable, unique_name

from .support import (
    REDIS_URL,
    delete_prefix,
    other_database,
    require_redis,
    running_worker,
    start_worker,
    unique_prefix,
    wait_worker,
)

pytestmark = [pytest.mark.netns, pytest.mark.slow]

SPACE: dict[str, Any] = {
    "name": "veth-link",
    "testbed": "veth",
    "description": "per-namespace link knobs only (safe for two pairs measured at once)",
    "knobs": {
        "mtu": {"type": "choice", "choices": [4000, 9000], "default": 9000, "family": "ip_link", "target": "mtu"},
        "txqueuelen": {"type": "choice", "choices": [500, 2000, 5000], "default": 5000, "family": "ip_link",
                       "target": "txqueuelen"},
        "gso": {"type": "bool", "default": True, "family": "ethtool_features", "target": "gso"},
        "tso": {"type": "bool", "default": True, "family": "ethtool_features", "target": "tso"},
    },
}
VISIBILITY_S = 15.0  # workers' time limit (tests/executors/support.py) is 10 s


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Three veth pairs, a key prefix in Redis, the service with the Celery executor and a token."""
    reason = netns_usable()
    if reason:
        pytest.skip(reason)
    require_redis()
    tmp = tmp_path_factory.mktemp("celery")
    prefix = unique_prefix()
    pool, other = f"p{prefix[-9:-1]}", f"w{prefix[-9:-1]}"
    env = {"NICTUNE_BROKER_URL": REDIS_URL, "NICTUNE_KEY_PREFIX": prefix,
           "NICTUNE_VISIBILITY_TIMEOUT_S": str(VISIBILITY_S), "NICTUNE_RESTORE_INTERVAL_S": "1",
           "NICTUNE_HEARTBEAT_S": "0.5", "NICTUNE_STATE_DIR": str(tmp / "state")}
    pairs = [VethPair(unique_name("ntc")) for _ in range(3)]
    db_url = f"sqlite:///{tmp / 'nictune.db'}"
    engine = open_database(db_url)
    with session_scope(engine) as s:
        _, token = create_token(s, "ci", "submit")
    registry = Registry(REDIS_URL, prefix)
    try:
        for pair in pairs:
            pair.up()
        server_env = env | {"NICTUNE_API_EXECUTOR": "celery", "NICTUNE_API_INLINE_SPACES_ON_HOSTS": "true",
                            "NICTUNE_API_TESTBEDS": json.dumps([f"pool:{pool}", f"pool:{other}"])}
        with running_server(db_url, tmp / "server.log", env=server_env) as server:
            yield {"env": env, "pairs": pairs, "pool": pool, "other": other, "server": server, "token": token,
                   "engine": engine, "registry": registry, "tmp": tmp}
    finally:
        for pair in pairs:
            pair.down()
        registry.close()
        engine.dispose()
        delete_prefix(prefix)
        delete_prefix(prefix, other_database())


def submit(lab: dict[str, Any], pool: str, budget: int, duration_s: float = 1.0, seed: int = 7, **extra: Any) -> int:
    with Client(lab["server"].url, lab["token"]) as api:
        job = api.submit_job(testbed=f"pool:{pool}", space=SPACE, budget=budget, repeats=1, seed=seed,
                             duration_s=duration_s, racing=False, warm_start=False, **extra)
        return int(job["id"])


def wait_job(lab: dict[str, Any], job_id: int, states: set[str], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with Client(lab["server"].url, lab["token"]) as api:
        while True:
            job = api.get_job(job_id)
            if job["state"] in states:
                return job
            assert time.monotonic() < deadline, f"job {job_id} still {job['state']} after {timeout}s: {job}"
            time.sleep(0.2)


def stored(lab: dict[str, Any], job_id: int) -> list[dict[str, Any]]:
    with session_scope(lab["engine"]) as s:
        trials = s.scalars(select(Trial).where(Trial.job_id == job_id).order_by(Trial.number)).all()
        return [{"id": t.id, "number": t.number, "state": t.state, "source": t.source, "notes": list(t.notes),
                 "intervals": [(m.started_at, m.finished_at) for m in
                               s.scalars(select(Measurement).where(Measurement.trial_id == t.id)).all()]}
                for t in trials]


def link(pair: VethPair) -> tuple[int, int]:
    """MTU and txqueuelen of the sender's veth end, read from its namespace."""
    out = NetnsHost(pair.tx).run(["ip", "-j", "link", "show", "dev", pair.tx]).stdout
    info = json.loads(out)[0]
    return int(info["mtu"]), int(info["txqlen"])


def worker_of(trial: dict[str, Any]) -> str:
    notes = [n for n in trial["notes"] if n.startswith("measured by ")]
    assert notes, trial
    return str(notes[-1].split()[2])


def test_a_ga_generation_runs_on_both_workers_at_once(lab: dict[str, Any]) -> None:
    a, b = lab["pairs"][:2]
    tmp, env, registry, pool = lab["tmp"], lab["env"], lab["registry"], lab["pool"]
    with running_worker(f"veth:{a.name}", pool, env, tmp / "a.log", registry), \
         running_worker(f"veth:{b.name}", pool, env, tmp / "b.log", registry):
        with Client(lab["server"].url, lab["token"]) as api:
            listed = api.workers()
        assert listed["executor"] == "celery"
        assert {w["testbed"] for w in listed["workers"] if w["pool"] == pool} == {f"veth:{a.name}", f"veth:{b.name}"}
        assert [p["live_workers"] for p in listed["pools"] if p["pool"] == pool] == [2]
        cli = subprocess.run([sys.executable, "-c", "import sys; from nictune.cli.main import main; "
                              "sys.exit(main(sys.argv[1:]))", "workers", "--server", lab["server"].url,
                              "--token", lab["token"]], capture_output=True, text=True, timeout=60,
                             env=os.environ | {"COLUMNS": "250"})
        assert cli.returncode == 0, cli.stderr
        assert f"veth:{a.name}" in cli.stdout and f"veth:{b.name}" in cli.stdout and "idle" in cli.stdout
        job_id = submit(lab, pool, budget=8, engine="ga", engine_params={"population": 4, "elite": 1, "local": 1})
        job = wait_job(lab, job_id, {"completed", "failed", "cancelled"}, timeout=120)
    assert job["state"] == "completed", job
    trials = stored(lab, job_id)
    assert [t["number"] for t in trials] == list(range(8))
    measured = [t for t in trials if t["source"] == "measured"]
    assert all(t["state"] == "completed" for t in trials)
    assert {worker_of(t).split("-veth-")[1].split("@")[0] for t in measured} == {a.name, b.name}
    intervals = [(iv, worker_of(t)) for t in measured for iv in t["intervals"]]
    overlapping = [(x, y) for i, (x, wx) in enumerate(intervals) for (y, wy) in intervals[i + 1:]
                   if wx != wy and x[0] < y[1] and y[0] < x[1]]
    assert overlapping, f"no two measurements of different workers overlap: {intervals}"


def test_a_worker_killed_mid_trial_loses_nothing_and_restores_first(lab: dict[str, Any]) -> None:
    a, b = lab["pairs"][:2]
    tmp, env, registry, pool = lab["tmp"], lab["env"], lab["registry"], lab["pool"]
    pristine = link(a)
    journal = Path(env["NICTUNE_STATE_DIR"]) / "journal" / f"veth_{a.name}.json"
    victim = start_worker(f"veth:{a.name}", pool, env, tmp / "a2.log")
    try:
        wait_worker(registry, victim)
        with running_worker(f"veth:{b.name}", pool, env, tmp / "b2.log", registry):
            job_id = submit(lab, pool, budget=6, duration_s=3.0, engine="random")
            record = wait_worker(registry, victim, state="busy", timeout=60)
            deadline = time.monotonic() + 20
            while not journal.exists():  # settings applied: the trial is past its snapshot
                assert time.monotonic() < deadline, "the victim's trial never applied anything"
                time.sleep(0.05)
            time.sleep(0.5)
            victim.kill()
            lost_trial = record.current["trial_id"] if record.current else None
            assert lost_trial is not None
            assert link(a) != pristine, "the killed trial's settings should still be on the pair"
            job = wait_job(lab, job_id, {"completed", "failed", "cancelled"}, timeout=VISIBILITY_S + 90)
        assert job["state"] == "completed", job
        trials = stored(lab, job_id)
        assert [t["number"] for t in trials] == list(range(6)), "a trial was lost or stored twice"
        assert all(t["state"] == "completed" for t in trials), trials
        again = next(t for t in trials if t["id"] == lost_trial)
        assert again["source"] == "measured" and b.name in worker_of(again)
        assert any("redelivered" in n for n in again["notes"]), again["notes"]
        # Nothing ran on the dead worker's pair since: its journal and changed settings are still there.
        assert journal.exists() and link(a) != pristine
    finally:
        victim.stop()
    restarted = start_worker(f"veth:{a.name}", pool, env, tmp / "a3.log")
    try:
        record = wait_worker(registry, restarted)
        assert link(a) == pristine, "the restarted worker took work before restoring its pair"
        assert not journal.exists()
        assert any("restored settings a crashed run left" in n for n in record.notices), record.notices
    finally:
        restarted.stop()


def test_a_job_on_a_pool_without_workers_waits_then_runs(lab: dict[str, Any]) -> None:
    c = lab["pairs"][2]
    tmp, env, registry, other = lab["tmp"], lab["env"], lab["registry"], lab["other"]
    with Client(lab["server"].url, lab["token"]) as api, pytest.raises(InvalidInputError, match="no worker has joined"):
        api.submit_job(testbed=f"pool:{other}", space=SPACE, budget=2, repeats=1, duration_s=1.0)
    # The pool exists once a worker joined it, and stays known after the worker left.
    with running_worker(f"veth:{c.name}", other, env, tmp / "c.log", registry):
        pass
    assert registry.workers(other) == [] and registry.pool(other) is not None
    job_id = submit(lab, other, budget=2, engine="random")
    job = wait_job(lab, job_id, {"waiting"}, timeout=30)
    assert job["progress"]["done"] == 0
    time.sleep(1.0)
    assert wait_job(lab, job_id, {"waiting"}, timeout=1)["state"] == "waiting"
    with running_worker(f"veth:{c.name}", other, env, tmp / "c2.log", registry):
        job = wait_job(lab, job_id, {"completed", "failed", "cancelled"}, timeout=60)
    assert job["state"] == "completed", job
    assert [t["state"] for t in stored(lab, job_id)] == ["completed", "completed"]


def test_a_worker_stopped_mid_trial_restores_and_hands_the_trial_back(lab: dict[str, Any]) -> None:
    c = lab["pairs"][2]
    tmp, env, registry, other = lab["tmp"], lab["env"], lab["registry"], lab["other"]
    pristine = link(c)
    journal = Path(env["NICTUNE_STATE_DIR"]) / "journal" / f"veth_{c.name}.json"
    job_id = submit(lab, other, budget=2, duration_s=3.0, engine="random", seed=3)
    first = start_worker(f"veth:{c.name}", other, env, tmp / "c3.log")
    try:
        record = wait_worker(registry, first, state="busy", timeout=60)
        deadline = time.monotonic() + 20
        while not journal.exists():
            assert time.monotonic() < deadline, "the trial never applied anything"
            time.sleep(0.05)
        time.sleep(0.5)
        first.stop()  # SIGTERM: warm shutdown
        assert first.process.returncode == 0, first.log.read_text()
        assert link(c) == pristine and not journal.exists(), "SIGTERM must restore before the worker ends"
    finally:
        first.stop()
    assert record.current is not None
    with running_worker(f"veth:{c.name}", other, env, tmp / "c4.log", registry):
        job = wait_job(lab, job_id, {"completed", "failed", "cancelled"}, timeout=60)
    assert job["state"] == "completed", job
    trials = stored(lab, job_id)
    assert [(t["number"], t["state"]) for t in trials] == [(0, "completed"), (1, "completed")]
    handed_back = next(t for t in trials if t["id"] == record.current["trial_id"])
    assert any("redelivered" in n for n in handed_back["notes"]), handed_back["notes"]


def test_a_trial_past_the_time_limit_fails_restored(lab: dict[str, Any]) -> None:
    c = lab["pairs"][2]
    tmp, env, registry, other = lab["tmp"], lab["env"], lab["registry"], lab["other"]
    pristine = link(c)
    with running_worker(f"veth:{c.name}", other, env, tmp / "c5.log", registry, time_limit=2.0):
        job_id = submit(lab, other, budget=1, duration_s=5.0, engine="random", seed=4)
        job = wait_job(lab, job_id, {"completed", "failed", "cancelled"}, timeout=60)
    (trial,) = stored(lab, job_id)
    assert trial["state"] == "failed" and job["progress"]["failed"] == 1, (job, trial)
    with session_scope(lab["engine"]) as s:
        error = s.get(Trial, trial["id"]).error  # type: ignore[union-attr]
    assert "time limit of 2 s" in str(error)
    assert link(c) == pristine


def test_workers_on_another_broker_are_named_and_a_cancel_withdraws_the_queued_request(lab: dict[str, Any]) -> None:
    """The pool's only worker is alive and idle but takes requests from another broker (the
    same Redis, database 1): the job says so instead of sitting at 0 trials, a cancel ends it
    at once, and a worker that later receives its queued request drops it unmeasured."""
    c = lab["pairs"][2]
    tmp, env, registry, other = lab["tmp"], lab["env"], lab["registry"], lab["other"]
    elsewhere = other_database()
    pristine = link(c)
    misconfigured = env | {"NICTUNE_BROKER_URL": elsewhere, "NICTUNE_RESULT_BACKEND": REDIS_URL}
    # A knob more than the module's other jobs: no configuration of this one is in the cache
    # (with two cached ones the job completed at once, never waiting).
    space = tmp / "veth-link-gro.json"
    space.write_text(json.dumps(SPACE | {"name": "veth-link-gro", "knobs": SPACE["knobs"] | {
        "gro": {"type": "bool", "default": True, "family": "ethtool_features", "target": "gro"}}}))
    cli = [sys.executable, "-c", "import sys; from nictune.cli.main import main; sys.exit(main(sys.argv[1:]))"]
    server = ["--server", lab["server"].url, "--token", lab["token"]]
    cli_env = os.environ | {"COLUMNS": "250"}
    with running_worker(f"veth:{c.name}", other, misconfigured, tmp / "c6.log", registry):
        assert [w.broker for w in registry.workers(other)] == [elsewhere]
        listed = subprocess.run([*cli, "workers", *server], capture_output=True, text=True, timeout=60, env=cli_env)
        assert listed.returncode == 0 and elsewhere in listed.stdout, listed
        # A user follows the job from the CLI, as README's "Many host pairs" shows.
        out = tmp / "optimize.out"
        with out.open("w") as sink:
            follower = subprocess.Popen([*cli, "optimize", *server, "--testbed", f"pool:{other}", "--space", str(space),
                                         "--objective", "throughput", "--engine", "random", "--budget", "2",
                                         "--repeats", "1", "--duration", "1", "--no-racing", "--no-warm-start"],
                                        stdout=sink, stderr=subprocess.STDOUT, env=cli_env)
        try:
            deadline = time.monotonic() + 30
            while "submitted" not in out.read_text():
                assert follower.poll() is None and time.monotonic() < deadline, out.read_text()
                time.sleep(0.2)
            job_id = int(out.read_text().split("job ", 1)[1].split()[0])
            job = wait_job(lab, job_id, {"waiting"}, timeout=30)
            assert elsewhere in job["waiting_for"] and REDIS_URL in job["waiting_for"], job
            assert job["progress"]["measured"] == 0 and job["progress"]["cached"] == 0, job
            with Client(lab["server"].url, lab["token"]) as api:
                api.cancel_job(job_id)
            job = wait_job(lab, job_id, {"completed", "failed", "cancelled"}, timeout=15)
            assert job["state"] == "cancelled" and job["waiting_for"] is None, job
            assert follower.wait(timeout=30) == 1  # the job did not complete
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
        printed = " ".join(out.read_text().split())
        assert f"job {job_id}: waiting for a worker on pool {other}: its 1 live worker(s) take requests from " \
               f"{elsewhere}, but this service sends them to {REDIS_URL}" in printed, printed
        assert f"job {job_id} cancelled: " in printed and ", 0 measured," in printed, printed
    assert not any(t["source"] == "measured" and t["state"] == "completed" for t in stored(lab, job_id))
    # The request is still in the service's queue; a worker on that broker now receives it.
    log = tmp / "c7.log"
    with running_worker(f"veth:{c.name}", other, env, log, registry) as worker:
        deadline = time.monotonic() + 20
        while "dropped unmeasured" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert wait_worker(registry, worker).measured == 0
    assert link(c) == pristine
