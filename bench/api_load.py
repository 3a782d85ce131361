"""Latency of the REST service's two heaviest reads under 20 concurrent clients.

Usage: .venv/bin/python bench/api_load.py [--backend sqlite|postgresql|both] [--trials 50000]
                                          [--clients 20] [--requests 400]

For each backend: fill a fresh database with ``--trials`` trials (50 jobs, 3 repeats each,
configurations of the benson-40g space with figures from the simulated testbed: a model,
not hardware), start the real server (uvicorn, 127.0.0.1 only), then send ``--requests``
requests to each endpoint from ``--clients`` concurrent clients and print p50/p99:

* ``GET /v1/history/best?testbed=sim:benson-40g&workload=tcp&objective=throughput&top=10``
* ``GET /v1/jobs/{id}/trials?sort=-throughput_gbps&limit=50&offset=...`` (random job and page)

The data does not change during the load, so /v1/history/best is answered from the
service's per-configuration means (recomputed whenever a measurement is added); the
first request of each endpoint, which computes them, is printed separately.

PostgreSQL: a uniquely named database on $NICTUNE_TEST_PG_URL (default the machine's
127.0.0.1:5432, user postgres), dropped at the end. Timings are figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert, text
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nictune import db  # noqa: E402
from nictune.db.auth import create_token  # noqa: E402
from nictune.measure.testbeds import SimTestbed, open_testbed  # noqa: E402
from nictune.measure.workloads import get_workload  # noqa: E402
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
def database(backend: str) -> Iterator[str]:
    """A fresh, empty database URL; a PostgreSQL database is dropped afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{Path(folder) / 'bench.db'}"
        return
    import psycopg
    from psycopg import sql

    name = f"nictune_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name).render_as_string(
            hide_password=False)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def fill(url: str, trials: int, seed: int = 1) -> tuple[str, list[int]]:
    """Store ``trials`` completed trials in ``JOBS`` jobs; return a submit token and the job ids."""
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
        _, token = create_token(s, "bench", "submit")
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
    trial_rows: list[dict[str, Any]] = []
    measurement_rows: list[dict[str, Any]] = []
    trial_id = 0
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
            trial_rows.append({
                "id": trial_id, "job_id": job_id, "number": number, "configuration_id": config_ids[config.hash],
                "state": "completed", "source": "measured", "started_at": start,
                "finished_at": start + timedelta(seconds=30), "notes": [],
                "summary": {"metrics": mean, "spread": Goal.spread(repeats), "repeats": REPEATS,
                            "score": goal.score(mean).as_dict()}})
    with engine.begin() as connection:
        for i in range(0, len(trial_rows), 5000):
            connection.execute(insert(db.Trial), trial_rows[i:i + 5000])
        for i in range(0, len(measurement_rows), 5000):
            connection.execute(insert(db.Measurement), measurement_rows[i:i + 5000])
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT setval(pg_get_serial_sequence('trials', 'id'), :n)"), {"n": trial_id})
            connection.execute(text("ANALYZE"))
    engine.dispose()
    return token, job_ids


async def load(base: str, token: str, paths: list[str], clients: int) -> list[float]:
    """Send every path once, ``clients`` at a time; return the latencies in milliseconds."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(path)
    latencies: list[float] = []
    deadline = time.monotonic() + PHASE_CAP_S

    async def client() -> None:
        async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"},
                                     timeout=120) as http:
            while not queue.empty() and time.monotonic() < deadline:
                path = queue.get_nowait()
                began = time.perf_counter()
                response = await http.get(path)
                latencies.append((time.perf_counter() - began) * 1000)
                response.raise_for_status()

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def run(backend: str, trials: int, clients: int, requests: int) -> list[tuple[str, str, int, float, float, float]]:
    """Fill, serve and load one backend; return (backend, endpoint, n, p50, p99, mean) rows."""
    rows = []
    with database(backend) as url:
        began = time.monotonic()
        token, job_ids = fill(url, trials)
        print(f"[{backend}] stored {trials} trials ({trials * REPEATS} measurements) in "
              f"{time.monotonic() - began:.0f} s", flush=True)
        with tempfile.TemporaryDirectory() as folder, running_server(url, Path(folder) / "server.log",
                                                                      timeout=60) as server:
            rng = random.Random(2)
            per_job = trials // JOBS
            endpoints = {
                "GET /v1/history/best": ["/v1/history/best?testbed=sim:benson-40g&workload=tcp"
                                         "&objective=throughput&top=10"] * requests,
                "GET /v1/jobs/{id}/trials": [
                    f"/v1/jobs/{rng.choice(job_ids)}/trials?sort=-throughput_gbps&limit=50"
                    f"&offset={rng.randrange(0, per_job, 50)}" for _ in range(requests)],
            }
            for name, paths in endpoints.items():
                cold = asyncio.run(load(server.url, token, paths[:1], 1))[0]
                print(f"[{backend}] {name}: first request (nothing cached) {cold:.0f} ms", flush=True)
                asyncio.run(load(server.url, token, paths[:clients], clients))  # warm-up
                latencies = asyncio.run(load(server.url, token, paths, clients))
                rows.append((backend, name, len(latencies), percentile(latencies, 50), percentile(latencies, 99),
                             statistics.fmean(latencies)))
                print(f"[{backend}] {name}: {len(latencies)} requests, p50 {rows[-1][3]:.0f} ms, "
                      f"p99 {rows[-1][4]:.0f} ms", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--trials", type=int, default=50_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=400, help="requests per endpoint")
    args = parser.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    rows = []
    for backend in backends:
        rows.extend(run(backend, args.trials, args.clients, args.requests))
    print()
    print(f"command: .venv/bin/python bench/api_load.py --backend {args.backend} --trials {args.trials} "
          f"--clients {args.clients} --requests {args.requests}")
    print(f"machine: {os.cpu_count()} cores; server and clients on the same machine, 127.0.0.1 only; "
          "figures of the simulated testbed (a model, not hardware)")
    print(f"{'backend':<11} {'endpoint':<26} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for backend, name, n, p50, p99, mean in rows:
        print(f"{backend:<11} {name:<26} {n:>8} {p50:>8.1f} {p99:>8.1f} {mean:>8.1f}")


if __name__ == "__main__":
    main()
