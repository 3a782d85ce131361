"""Wall time of the same job on a pool of one testbed and on a pool of two (Celery executor).

Usage (root: it creates veth namespace pairs): .venv/bin/python bench/scale_out.py
    [--trials 24] [--population 4] [--duration 1] [--broker redis://127.0.0.1:6379/0]

Real measurements, no model: each testbed is a veth pair (two network namespaces on this
machine) served by its own ``nictune worker`` process through the broker. The job is a GA
(population ``--population``, seed 5) over per-namespace link knobs (MTU, txqueuelen, GSO,
TSO: two pairs measured at once share no global sysctl), one iperf3 run of ``--duration``
seconds per trial, no racing, no warm start. The two runs use pools of different names, so
the second cannot reuse the first's results; with the same seed they propose the same
configurations. All pairs share this machine's CPUs, so two simultaneous iperf3 runs
compete for them (the throughput figures drop; the wall time is what is compared).
Redis keys live under a unique prefix and are deleted at the end, as are the pairs.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

SPACE: dict[str, Any] = {
    "name": "veth-link",
    "testbed": "veth",
    "knobs": {
        "mtu": {"type": "choice", "choices": [1500, 4000, 9000, 16000], "default": 1500, "family": "ip_link",
                "target": "mtu"},
        "txqueuelen": {"type": "choice", "choices": [500, 1000, 5000], "default": 1000, "family": "ip_link",
                       "target": "txqueuelen"},
        "gso": {"type": "bool", "default": True, "family": "ethtool_features", "target": "gso"},
        "tso": {"type": "bool", "default": True, "family": "ethtool_features", "target": "tso"},
    },
}


def start_worker(testbed: str, pool: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "nictune.cli.worker", "--testbed", testbed, "--pool", pool,
               "--time-limit", "60", "--log-level", "warning"]
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ | env)


def wait_idle(registry: Any, pool: str, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while sum(w.state == "idle" for w in registry.workers(pool)) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: {count} workers of pool {pool} did not come up")
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_job(dbe: Any, factory: Any, pool: str, args: argparse.Namespace) -> tuple[float, Any]:
    from nictune.jobs import JobRunner, JobSpec, create_job

    spec = JobSpec(objectives=["throughput"], testbed=f"pool:{pool}", space=SPACE, engine="ga",
                   engine_params={"population": args.population, "elite": 1, "local": 1}, budget=args.trials,
                   repeats=1, seed=5, duration_s=args.duration, racing=False, warm_start=False)
    job_id = create_job(dbe, spec, executor_factory=factory)
    started = time.monotonic()
    outcome = JobRunner(dbe, executor_factory=factory).run(job_id)
    return time.monotonic() - started, outcome


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--population", type=int, default=4)
    ap.add_argument("--duration", type=float, default=1.0, help="seconds of iperf3 per trial")
    ap.add_argument("--broker", default=os.environ.get("NICTUNE_BROKER_URL", "redis://127.0.0.1:6379/0"))
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench: needs root (veth namespace pairs)")

    from nictune.db import open_database
    from nictune.executors.celery_app import CelerySettings
    from nictune.executors.celery_executor import ExecutorFactory
    from nictune.executors.pools import Registry
    from nictune.measure.testbeds.veth import VethPair

    tag = uuid.uuid4().hex[:6]
    prefix = f"nictune-bench-{tag}:"
    tmp = Path(tempfile.mkdtemp(prefix="nictune-scale-"))
    env = {"NICTUNE_BROKER_URL": args.broker, "NICTUNE_KEY_PREFIX": prefix, "NICTUNE_HEARTBEAT_S": "0.5",
           "NICTUNE_STATE_DIR": str(tmp / "state")}
    os.environ.update(env)
    settings = CelerySettings()
    factory = ExecutorFactory(settings)
    registry = Registry(settings.backend_url(), prefix)
    dbe = open_database(f"sqlite:///{tmp / 'nictune.db'}")
    pairs = [VethPair(f"ntb{tag[:3]}{i}") for i in range(2)]
    results: dict[int, tuple[float, Any]] = {}
    try:
        for pair in pairs:
            pair.up()
        for size in (1, 2):
            pool = f"scale{size}-{tag}"
            workers = [start_worker(f"veth:{pair.name}", pool, env, tmp / f"w{size}-{pair.name}.log")
                       for pair in pairs[:size]]
            try:
                wait_idle(registry, pool, size)
                results[size] = run_job(dbe, factory, pool, args)
            finally:
                for w in workers:
                    stop(w)
    finally:
        for pair in pairs:
            pair.down()
        factory.close()
        import redis

        client = redis.Redis.from_url(settings.backend_url())
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()
        registry.close()
        dbe.dispose()

    given = argv if argv is not None else sys.argv[1:]
    print("command: " + " ".join([".venv/bin/python bench/scale_out.py", *given]))
    print(f"job: GA population {args.population}, {args.trials} trials, 1 iperf3 run of {args.duration:g} s "
          "per trial, veth pairs on this machine (real measurements, shared CPUs)")
    for size, (wall, outcome) in results.items():
        print(f"  {size} testbed{'s' if size > 1 else ' '}: {wall:7.1f} s wall  ({outcome.state}, {outcome.trials} "
              f"trials, {outcome.measured} measured, {outcome.cached} from the cache, {outcome.failed} failed)")
    ratio = results[1][0] / results[2][0]
    print(f"  speed-up with two testbeds: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
