"""Server CPU per request and latency of the REST service's two heaviest reads, next to a
constant endpoint, with one client and with 20 concurrent clients.

Usage: .venv/bin/python bench/api_load.py [--backend sqlite|postgresql|both] [--trials 50000]
                                          [--clients 20] [--requests 400]

For each backend: fill a fresh database with ``--trials`` trials (50 jobs, 3 repeats each,
configurations of the benson-40g space with figures from the simulated testbed: a model,
not hardware) by bulk inserts, build the read model (``config_stats``) from the rows as
migration 0006 does and each job's page landmarks as finishing it does, start the real server
(uvicorn, 127.0.0.1 only), then measure:

* ``GET /healthz`` (a constant answer: the floor of the server and of this client);
* ``GET /v1/history/best?testbed=sim:benson-40g&workload=tcp&objective=throughput&top=10``;
* ``GET /v1/jobs/{id}/trials?sort=-throughput_gbps&limit=50&offset=...`` (random job and page).

The database (tables and indexes) is read before the server starts and again before each
phase, so the operating system's cache holds it as in a server that has run a while: the
python-svc machines page out file cache nobody touched for a minute (a DAMON ``pageout``
scheme; the bench prints it), and a phase of 1M trials touches a small part of ~10 GB. The
HTTP clients are built and connected before any timing, and every endpoint is asked before
it (every client once, and a page of every job: a finished job's landmarks are read once per
job and order). The first request of
/v1/history/best after the start (nothing cached, nothing compiled) and of a trial page are
timed apart, and so, after a new result is stored (a job of one measured trial, through the
repository, which counts the history's version up), the same question again (the recomputation
a warm server does after new results) and, after one more result, a question asked while
another request recomputes it (answered at once with the answer it replaces). Each
endpoint gets ``--requests`` requests from one client, then ``--requests`` from
``--clients`` clients at once; each phase reports p50/p99 latency and the server's CPU time
per request, read from /proc/<pid>/stat of the server process before and after the phase,
and the part of it spent in the kernel (sockets; on SQLite also reading the database file)
(a phase starts with the server idle and ends when it is idle again, so what it set off beside
its answers, such as a recomputation of the cached means, counts in it and not in the next;
on PostgreSQL also that of the database's backend processes serving it, counted apart: a
backend that ends within the phase, e.g. a pool's overflow connection, is not counted, so
the figure with many clients is a lower bound), and the clients' own CPU per request (this
process: it shares the machine's cores with the server). Timings are figures, not pass/fail.

PostgreSQL: a uniquely named database on $NICTUNE_TEST_PG_URL (default the machine's
127.0.0.1:5432, user postgres), dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nictune import db  # noqa: E402
from nictune.db import stats as db_stats  # noqa: E402
from nictune.db.auth import create_token  # noqa: E402
from nictune.db.landmarks import store_landmarks  # noqa: E402
from nictune.measure import Sample  # noqa: E402
from nictune.measure.benchmarks.workloads import get_workload  # noqa: E402
from nictune.measure.testbeds import SimTestbed, open_testbed  # noqa: E402
from nictune.optimizer import Goal  # noqa: E402
from nictune.search_spaces import load_space  # noqa: E402
from tests.api.server import running_server  # noqa: E402

PG_ADMIN_URL = os.environ.get("NICTUNE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
JOBS = 50
REPEATS = 3
DISTINCT_CONFIGS = 5000
#: Each load phase stops after this many seconds whatever the count (the bench bounds itself).
PHASE_CAP_S = 300.0


@contextmanager
def database(backend: str, keep: str | None = None) -> Iterator[tuple[str, bool]]:
    """A database URL and whether it is already filled. Without ``keep``: a fresh one (a
    PostgreSQL database is dropped afterwards). With ``keep`` (a SQLite file, or a PostgreSQL
    database name): that one, created if missing and kept, so another run can reuse the fill."""
    if backend == "sqlite":
        if keep is not None:
            yield f"sqlite:///{Path(keep).resolve()}", Path(keep).exists()
            return
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{Path(folder) / 'bench.db'}", False
        return
    import psycopg
    from psycopg import sql

    name = keep or f"nictune_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
        if not exists:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name).render_as_string(
            hide_password=False), exists
    finally:
        if keep is None:
            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def reuse(url: str) -> tuple[str, list[int], int]:
    """A new read token, the job ids and the trial count of a database an earlier run filled."""
    engine = db.open_database(url)
    try:
        with db.session_scope(engine) as s:
            _, token = create_token(s, f"bench-{uuid.uuid4().hex[:8]}", "read")
            job_ids = list(s.scalars(select(db.Job.id).order_by(db.Job.id)))
            trials = int(s.scalar(select(func.count(db.Trial.id))) or 0)
    finally:
        engine.dispose()
    return token, job_ids, trials


#: Trials per bulk insert (and their measurements): the fill streams, whatever ``--trials``.
CHUNK = 5000


def fill(url: str, trials: int, seed: int = 1) -> tuple[str, list[int], dict[str, float]]:
    """Store ``trials`` completed trials in ``JOBS`` jobs; return a read token, the job ids and
    the seconds each step took (bulk inserts, read model, VACUUM ANALYZE)."""
    rng = random.Random(seed)
    engine = db.open_database(url)
    space = load_space("benson-40g")
    bed = open_testbed("sim:benson-40g")
    assert isinstance(bed, SimTestbed)
    workload = get_workload("tcp")
    goal = Goal.from_names(["throughput"])
    pool = []
    for _ in range(DISTINCT_CONFIGS):
        config = space.sample(rng)
        pool.append((config, bed.clean(space.settings(config), workload)))
    per_job = trials // JOBS
    t0 = datetime(2024, 6, 1, tzinfo=UTC)
    with db.session_scope(engine) as s:
        _, token = create_token(s, "bench", "read")
        testbed = db.get_or_create_testbed(s, bed.name, bed.kind, bed.fingerprint())
        wl = db.get_or_create_workload(s, workload.name, workload.key())
        config_ids = {}
        for config, _ in pool:
            config_ids[config.hash] = db.get_or_create_configuration(s, config.hash, config.canonical_json).id
        jobs = []
        for j in range(JOBS):
            job = db.create_job(s, space_name=space.name, space_definition=space.definition, testbed=testbed,
                                workload=wl, objectives=["throughput"], constraints=[], engine="ga",
                                engine_params={}, budget=per_job, repeats=REPEATS, seed=j)
            job.state, job.started_at, job.finished_at = "completed", t0, t0 + timedelta(hours=1)
            job.stats = {"measured": per_job, "cached": 0, "failed": 0}
            jobs.append(job)
        s.flush()
        testbed_id, workload_id, job_ids = testbed.id, wl.id, [job.id for job in jobs]
    timings: dict[str, float] = {}
    began = time.monotonic()
    trial_rows: list[dict[str, Any]] = []
    measurement_rows: list[dict[str, Any]] = []
    item_rows: list[dict[str, Any]] = []
    trial_id = 0
    with engine.begin() as connection:
        def flush() -> None:
            if trial_rows:
                connection.execute(insert(db.Trial), trial_rows)
                connection.execute(insert(db.Measurement), measurement_rows)
                connection.execute(insert(db.TrialItem), item_rows)
                trial_rows.clear()
                item_rows.clear()
                measurement_rows.clear()

        for job_id in job_ids:
            for number in range(per_job):
                trial_id += 1
                config, clean = pool[rng.randrange(len(pool))]
                start = t0 + timedelta(seconds=trial_id * 30)
                repeats = []
                for r in range(REPEATS):
                    metrics = {k: v * rng.lognormvariate(0, 0.03) for k, v in clean.items()}
                    repeats.append(metrics)
                    measurement_rows.append({
                        "trial_id": trial_id, "repeat": r, "testbed_id": testbed_id, "workload_id": workload_id,
                        "configuration_id": config_ids[config.hash], "metrics": metrics, "counters": {},
                        "started_at": start + timedelta(seconds=10 * r),
                        "finished_at": start + timedelta(seconds=10 * r + 10),
                        **{m: metrics.get(m) for m in db.MAIN_METRICS}})
                mean = Goal.mean_metrics(repeats)
                summary = {"metrics": mean, "spread": Goal.spread(repeats), "repeats": REPEATS,
                           "score": goal.score(mean).as_dict()}
                finished = start + timedelta(seconds=30)
                # The page-ready JSON the repository keeps for a finished trial (trial_items).
                item = db.item_json(db.trial_item(
                    job_id=job_id, number=number, state="completed", source="measured", config_hash=config.hash,
                    canonical=config.canonical_json, summary=summary, error=None, started_at=start,
                    finished_at=finished, simulated=True)).decode()
                trial_rows.append({
                    "id": trial_id, "job_id": job_id, "number": number, "configuration_id": config_ids[config.hash],
                    "state": "completed", "source": "measured", "started_at": start, "finished_at": finished,
                    "notes": [], "summary": summary, **{m: mean.get(m) for m in db.MAIN_METRICS}})
                item_rows.append({"trial_id": trial_id, "item": item})
                if len(trial_rows) >= CHUNK:
                    flush()
        flush()
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT setval(pg_get_serial_sequence('trials', 'id'), :n)"), {"n": trial_id})
    timings["insert"] = time.monotonic() - began
    began = time.monotonic()
    with db.session_scope(engine) as s:  # the rows went in behind the repository's back
        db_stats.recompute(s)
        for job_id in job_ids:  # what finishing each job stores
            store_landmarks(s, job_id)
    timings["read model"] = time.monotonic() - began
    if engine.dialect.name == "postgresql":
        began = time.monotonic()
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE"))  # what autovacuum does in a while
        timings["vacuum"] = time.monotonic() - began
    engine.dispose()
    return token, job_ids, timings


def add_result(url: str) -> None:
    """Store a new result as a job does (a job of one measured trial, through the repository,
    in one transaction: the history's version moves). Its configuration and figures are a copy
    of the first trial's, so the answers stay the same size."""
    engine = db.open_database(url)
    try:
        with db.session_scope(engine) as s:
            template = s.scalars(select(db.Trial).order_by(db.Trial.id).limit(1)).one()
            old = s.get_one(db.Job, template.job_id)
            job = db.create_job(s, space_name=old.space_name, space_definition=old.space_definition,
                                testbed=old.testbed, workload=old.workload, objectives=["throughput"],
                                constraints=[], engine="ga", engine_params={}, budget=1, repeats=1, seed=0)
            trial = db.start_trial(s, job, 0, template.configuration)
            now = datetime.now(UTC)
            run = Sample(metrics=dict(template.measurements[0].metrics), started_at=now, finished_at=now)
            db.complete_trial(s, trial, [run], "measured", dict(template.summary or {}))
            db.set_job_state(s, job, "completed")
    finally:
        engine.dispose()


def warm(url: str) -> tuple[float, float]:
    """Read the database's data, tables and indexes, so the timed phases find it in the
    operating system's cache as a server that has run a while does (a fill of 1M trials is
    ~10 GB, and a trial page reads 50 scattered rows); returns (GB read, seconds). Called
    before every phase: some machines page out file cache left idle for a minute
    (:func:`idle_pageout_s`)."""
    began = time.monotonic()
    path = db.sqlite_path(url)
    if path is not None:
        size = 0
        with open(path, "rb") as data:
            while chunk := data.read(1 << 24):
                size += len(chunk)
        return size / 1e9, time.monotonic() - began
    engine = db.make_engine(url)
    try:
        with engine.connect() as connection:
            size = connection.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
            try:
                # Every table, its TOAST and every index, through the operating system's cache
                # (pg_prewarm's 'read' mode; a sequential scan would leave the indexes out).
                connection.execute(text("CREATE EXTENSION IF NOT EXISTS pg_prewarm"))
                connection.execute(text(
                    "SELECT pg_prewarm(c.oid, 'read') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname IN ('public', 'pg_toast') AND c.relkind IN ('r', 'i', 't') "
                    "AND c.relpersistence = 'p' AND pg_relation_size(c.oid) > 0"))
                connection.commit()
            except DBAPIError:  # no pg_prewarm (PostgreSQL's contrib): the tables alone
                connection.rollback()
                connection.execute(text("SELECT sum(length(item)) FROM trial_items"))
                for table in ("trials", "config_stats", "configurations"):
                    connection.execute(text(f"SELECT count(*) FROM {table}"))
    finally:
        engine.dispose()
    return size / 1e9, time.monotonic() - began


#: Where the kernel's DAMON reclaim is configured (``/sys/kernel/mm/damon``, read only).
DAMON = Path("/sys/kernel/mm/damon/admin/kdamonds")


def idle_pageout_s(root: Path = DAMON) -> float | None:
    """After how many seconds without access a running DAMON ``pageout`` scheme takes file
    pages out of memory (the python-svc machines run one: one minute), or ``None``."""
    shortest: float | None = None
    for kdamond in root.glob("[0-9]*"):
        try:
            if (kdamond / "state").read_text().strip() != "on":
                continue
            for context in kdamond.glob("contexts/[0-9]*"):
                aggr_us = int((context / "monitoring_attrs/intervals/aggr_us").read_text())
                for scheme in context.glob("schemes/[0-9]*"):
                    if (scheme / "action").read_text().strip() == "pageout":
                        age = int((scheme / "access_pattern/age/min").read_text()) * aggr_us / 1e6
                        shortest = age if shortest is None else min(shortest, age)
        except (OSError, ValueError):
            continue
    return shortest


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU time of each of these processes (their threads included), from /proc."""
    return {pid: total for pid, (total, _kernel) in cpu_times(pids).items()}


def cpu_times(pids: list[int]) -> dict[int, tuple[float, float]]:
    """(user + system, system) CPU time of each of these processes, from one read of /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of stat
        out[pid] = ((utime + stime) / ticks, stime / ticks)
    return out


def settle(pid: int, quiet_s: float = 0.3, cap_s: float = 10.0) -> None:
    """Wait until the process ``pid`` has used no CPU for ``quiet_s`` (at most ``cap_s``): work
    a phase started beside its answers (a recomputation of the cached means it set off) ends
    before the phase's CPU is read, and is not counted in the next phase."""
    deadline = time.monotonic() + cap_s
    last = cpu_seconds([pid])
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = cpu_seconds([pid])
        if now == last:
            return
        last = now


def cpu_spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two readings (a process that started in between counts from 0; one
    that ended in between is not counted)."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def backend_pids(url: str) -> list[int]:
    """The PostgreSQL backend processes serving the bench database (none for SQLite)."""
    if not url.startswith("postgresql"):
        return []
    import psycopg

    name = make_url(url).database
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                             (name,)).fetchall()
    return [int(pid) for (pid,) in rows]


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


@dataclass
class Phase:
    """One endpoint under one number of clients."""

    backend: str
    endpoint: str
    clients: int
    latencies: list[float]
    app_cpu_ms: float  # server process CPU per request
    app_kernel_ms: float  # the part of it spent in the kernel (sockets, reading the database's file)
    db_cpu_ms: float  # PostgreSQL backends' CPU per request (0 on SQLite)
    client_cpu_ms: float  # this process's (the HTTP clients') CPU per request: it shares the machine

    def p(self, q: float) -> float:
        return percentile(self.latencies, q)


async def timed_get(http: httpx.AsyncClient, path: str) -> float:
    """One request's latency in milliseconds (the answer must be a 200)."""
    began = time.perf_counter()
    response = await http.get(path)
    elapsed = (time.perf_counter() - began) * 1000
    response.raise_for_status()
    return elapsed


async def phase(clients: list[httpx.AsyncClient], paths: list[str]) -> list[float]:
    """Send every path once, ``len(clients)`` at a time (clients already connected)."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(path)
    latencies: list[float] = []
    deadline = time.monotonic() + PHASE_CAP_S

    async def client(http: httpx.AsyncClient) -> None:
        while not queue.empty() and time.monotonic() < deadline:
            latencies.append(await timed_get(http, queue.get_nowait()))

    await asyncio.gather(*(client(http) for http in clients))
    return latencies


async def reconnect(pool: list[httpx.AsyncClient]) -> None:
    """Each client's connection fresh before a phase, untimed. The server closes a connection
    idle for its keep-alive time (uvicorn: 5 s), and the clients a 1-client phase leaves idle
    can wait longer than that while the database is read again; a request sent just as the
    server closes its connection fails (``Server disconnected``), so it is sent once more."""
    async def touch(http: httpx.AsyncClient) -> None:
        try:
            (await http.get("/healthz")).raise_for_status()
        except httpx.TransportError:
            (await http.get("/healthz")).raise_for_status()

    await asyncio.gather(*(touch(http) for http in pool))


async def measure(backend: str, base: str, token: str, server_pid: int, url: str, endpoints: dict[str, list[str]],
                  clients: int, warmup: list[str]) -> tuple[list[Phase], dict[str, float]]:
    """Every phase of one server, after the ``warmup`` requests; returns the phases and the
    first (cold) requests' latencies."""
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    pool = [httpx.AsyncClient(base_url=base, headers=headers, timeout=120, limits=limits) for _ in range(clients)]
    try:
        await asyncio.gather(*(http.get("/healthz") for http in pool))  # connected before any timing
        cold = {name: await timed_get(pool[0], paths[0]) for name, paths in endpoints.items() if name != "/healthz"}
        for paths in endpoints.values():  # warm: every client once
            await phase(pool, paths[:clients])
        await phase(pool, warmup)
        out = []
        for n in (1, clients):
            for name, paths in endpoints.items():
                await asyncio.to_thread(warm, url)  # in memory again, whatever was paged out
                await reconnect(pool)
                await asyncio.to_thread(settle, server_pid)
                (app0, kernel0), db0 = cpu_times([server_pid])[server_pid], cpu_seconds(backend_pids(url))
                own0 = time.process_time()
                latencies = await phase(pool[:n], paths)
                own1 = time.process_time()
                await asyncio.to_thread(settle, server_pid)  # the phase's work done beside its answers
                (app1, kernel1), db1 = cpu_times([server_pid])[server_pid], cpu_seconds(backend_pids(url))
                out.append(Phase(backend, name, n, latencies, (app1 - app0) * 1000 / len(latencies),
                                 (kernel1 - kernel0) * 1000 / len(latencies),
                                 cpu_spent(db0, db1) * 1000 / len(latencies), (own1 - own0) * 1000 / len(latencies)))
                print(f"[{backend}] {name} x{n}: {len(latencies)} requests, p50 {out[-1].p(50):.1f} ms, "
                      f"p99 {out[-1].p(99):.1f} ms, server CPU {out[-1].app_cpu_ms:.2f} ms/request"
                      + (f" + database {out[-1].db_cpu_ms:.2f} ms" if backend != "sqlite" else ""), flush=True)
        # New results move the history's version: the next request of a question computes its
        # answer again; one that comes meanwhile gets the answer being replaced.
        best = endpoints["/v1/history/best"][0]
        await asyncio.to_thread(add_result, url)
        cold["recompute"] = await timed_get(pool[0], best)
        await asyncio.to_thread(add_result, url)
        computing = asyncio.create_task(timed_get(pool[0], best))
        await asyncio.sleep(0.02)
        cold["previous"] = await timed_get(pool[1 % len(pool)], best)
        await computing
        print(f"[{backend}] /v1/history/best after a new result (a recomputation in a warm server): "
              f"{cold['recompute']:.0f} ms; asked while another request recomputes it: {cold['previous']:.0f} ms "
              "(answered with the answer it replaces)", flush=True)
        return out, cold
    finally:
        await asyncio.gather(*(http.aclose() for http in pool))


def run(backend: str, trials: int, clients: int, requests: int, keep: str | None = None
        ) -> tuple[list[Phase], dict[str, float]]:
    """Fill (or reuse), serve and load one backend."""
    with database(backend, keep) as (url, filled):
        began = time.monotonic()
        if filled:
            token, job_ids, trials = reuse(url)
            timings = {"insert": math.nan}
            print(f"[{backend}] reusing {keep} ({trials} trials)", flush=True)
        else:
            token, job_ids, timings = fill(url, trials)
            steps = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items())
            print(f"[{backend}] stored {trials} trials ({trials * REPEATS} measurements) in "
                  f"{time.monotonic() - began:.0f} s ({steps})", flush=True)
        read, seconds = warm(url)
        print(f"[{backend}] read the database before timing ({read:.1f} GB in {seconds:.0f} s), and again before "
              f"each phase", flush=True)
        # One token for every client: the service's per-token cap on requests in progress
        # (--max-requests-per-token, 8 by default) is raised to the clients' number, so the
        # bench measures the answers, not the refusals.
        limits = ["--max-requests-per-token", str(max(clients, 8)), "--max-requests", str(max(clients, 64))]
        with tempfile.TemporaryDirectory() as folder, running_server(url, Path(folder) / "server.log",
                                                                      timeout=120, args=limits) as server:
            rng = random.Random(2)
            per_job = trials // JOBS
            endpoints = {
                "/healthz": ["/healthz"] * requests,
                "/v1/history/best": ["/v1/history/best?testbed=sim:benson-40g&workload=tcp"
                                     "&objective=throughput&top=10"] * requests,
                "/v1/jobs/{id}/trials": [
                    f"/v1/jobs/{rng.choice(job_ids)}/trials?sort=-throughput_gbps&limit=50"
                    f"&offset={rng.randrange(0, per_job, 50)}" for _ in range(requests)],
            }
            # Warm caches, as in a server that has run a while: a page of every job once (the
            # landmarks a finished job's pages start from are read once per job and order).
            warmup = [f"/v1/jobs/{job_id}/trials?sort=-throughput_gbps&limit=50" for job_id in job_ids]
            phases, cold = asyncio.run(measure(backend, server.url, token, server.process.pid, url, endpoints,
                                               clients, warmup))
        cold["fill"] = timings["insert"]
        for name, ms in cold.items():
            if name not in ("fill", "recompute", "previous"):
                print(f"[{backend}] {name}: first request after the start (nothing cached) {ms:.0f} ms", flush=True)
    return phases, cold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--trials", type=int, default=50_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=400, help="requests per endpoint and phase")
    parser.add_argument("--keep-sqlite", metavar="FILE",
                        help="fill this SQLite file if missing, else reuse it; keep it")
    parser.add_argument("--keep-pg", metavar="DATABASE",
                        help="fill this PostgreSQL database if missing, else reuse it; keep it")
    args = parser.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    phases: list[Phase] = []
    colds: dict[str, dict[str, float]] = {}
    for backend in backends:
        keep = args.keep_sqlite if backend == "sqlite" else args.keep_pg
        rows, cold = run(backend, args.trials, args.clients, args.requests, keep)
        phases.extend(rows)
        colds[backend] = cold
    print()
    print("command: .venv/bin/python " + " ".join(sys.argv))
    print(f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {os.cpu_count()} cores, "
          f"{platform.processor() or platform.machine()}; server and clients on the same machine, 127.0.0.1 only; "
          "figures of the simulated testbed (a model, not hardware)")
    pageout = idle_pageout_s()
    if pageout is not None:
        print(f"this machine pages out file cache left idle for {pageout:.0f} s (DAMON): the database was read "
              "again before each phase")
    print(f"{'backend':<11} {'endpoint':<22} {'clients':>7} {'requests':>8} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'CPU ms/req':>10} {'kernel':>7} {'db CPU':>7} {'client CPU':>10}")
    for ph in phases:
        print(f"{ph.backend:<11} {ph.endpoint:<22} {ph.clients:>7} {len(ph.latencies):>8} {ph.p(50):>7.1f} "
              f"{ph.p(99):>7.1f} {ph.app_cpu_ms:>10.2f} {ph.app_kernel_ms:>7.2f} {ph.db_cpu_ms:>7.2f} "
              f"{ph.client_cpu_ms:>10.2f}")
    for backend, cold in colds.items():
        floor = next(ph.p(99) for ph in phases if ph.backend == backend and ph.endpoint == "/healthz"
                     and ph.clients == args.clients)
        ratios = ", ".join(f"{ph.endpoint} {ph.p(99) / floor:.1f}x" for ph in phases
                           if ph.backend == backend and ph.clients == args.clients and ph.endpoint != "/healthz")
        filled = f"fill {cold['fill']:.0f} s" if math.isfinite(cold["fill"]) else "reused an earlier fill"
        print(f"{backend}: {filled}; first /v1/history/best {cold['/v1/history/best']:.0f} ms, "
              f"recomputed after a new result {cold['recompute']:.0f} ms (asked meanwhile: {cold['previous']:.0f} ms), "
              f"first trial page {cold['/v1/jobs/{id}/trials']:.0f} ms; {args.clients}-client p99 over /healthz's: "
              f"{ratios}")


if __name__ == "__main__":
    main()
