"""How the REST service answers while hostile or careless clients flood it.

Usage: .venv/bin/python bench/api_flood.py [--seconds 10] [--streams 50] [--pages 100] [--tokens 10]

Starts the real server (uvicorn, 127.0.0.1 only) on a fresh SQLite database, submits one
simulated job slowed down to keep running (``--trial-delay``: the server is started through
the test helper :mod:`tests.api.pacing`; figures of the simulated testbed: a model, not
hardware), waits until it has some trials, then probes
``GET /healthz`` and ``GET /v1/jobs/{id}`` ten times a second from clients of their own
(created before any timing, in a process of their own: the flood's clients do not delay
them) through three phases of ``--seconds`` each:

* **quiet**: nothing else;
* **streams**: ``--streams`` event streams of the running job opened at once, spread over
  ``--tokens`` read tokens, kept open for the phase;
* **pages**: ``--pages`` clients of one token asking for trial pages of the running job
  sorted by throughput, in a loop, for the phase.

For each phase it prints the probes' p50 / p99 / max in milliseconds, the probes that got no
answer within 10 s, and how the flood's own requests were answered (status counts). Timings
are figures, not pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nictune import db  # noqa: E402
from nictune.db.auth import create_token  # noqa: E402
from tests.api.server import running_server  # noqa: E402

PROBE_TIMEOUT_S = 10.0


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


class Prober(threading.Thread):
    """Sends ``path`` every ``interval`` seconds (after the previous answer) and records each
    latency (ms), from a client of its own created before any timing."""

    def __init__(self, base: str, token: str, path: str, interval: float = 0.1):
        super().__init__(daemon=True)
        self.client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"},
                                   timeout=PROBE_TIMEOUT_S)
        self.path = path
        self.interval = interval
        self.latencies: list[float] = []
        self.failures: Counter[str] = Counter()
        self.running = threading.Event()
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            if not self.running.is_set():
                time.sleep(0.01)
                continue
            began = time.perf_counter()
            try:
                response = self.client.get(self.path)
                if response.status_code != 200:
                    self.failures[str(response.status_code)] += 1
                self.latencies.append((time.perf_counter() - began) * 1000)
            except httpx.HTTPError as exc:
                self.failures[type(exc).__name__] += 1
            time.sleep(self.interval)

    def take(self) -> tuple[list[float], Counter[str]]:
        """The latencies and failures recorded so far, and start afresh."""
        out, failures = self.latencies, self.failures
        self.latencies, self.failures = [], Counter()
        return out, failures


def _probe_process(base: str, token: str, paths: dict[str, str], commands: Connection) -> None:
    """The probers, in a process of their own: the flood's clients share an interpreter (and
    its lock) with nothing that is timed. Answers ``take`` with {name: (latencies, failures)}."""
    probers = {name: Prober(base, token, path) for name, path in paths.items()}
    for prober in probers.values():
        prober.start()
    while True:
        command = commands.recv()
        if command == "start":
            for prober in probers.values():
                prober.running.set()
        elif command == "pause":
            for prober in probers.values():
                prober.running.clear()
        elif command == "take":
            commands.send({name: prober.take() for name, prober in probers.items()})
        else:
            for prober in probers.values():
                prober.stopped.set()
            return


class Probes:
    """:class:`Prober` threads in a child process, driven from here."""

    def __init__(self, base: str, token: str, paths: dict[str, str]):
        context = multiprocessing.get_context("spawn")
        self.commands, theirs = context.Pipe()
        self.process = context.Process(target=_probe_process, args=(base, token, paths, theirs), daemon=True)
        self.process.start()

    def start(self) -> None:
        self.commands.send("start")

    def pause(self) -> None:
        self.commands.send("pause")

    def take(self) -> dict[str, tuple[list[float], Counter[str]]]:
        self.commands.send("take")
        answer: dict[str, tuple[list[float], Counter[str]]] = self.commands.recv()
        return answer

    def stop(self) -> None:
        self.commands.send("stop")
        self.process.join(timeout=15)


async def streams_flood(base: str, tokens: list[str], job_id: int, n: int, seconds: float) -> Counter[str]:
    """Open ``n`` event streams at once (round robin over ``tokens``) and read them for ``seconds``."""
    statuses: Counter[str] = Counter()
    clients = [httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {t}"}, timeout=seconds + 30)
               for t in tokens]

    async def one(i: int) -> None:
        try:
            async with clients[i % len(clients)].stream("GET", f"/v1/jobs/{job_id}/events") as response:
                statuses[str(response.status_code)] += 1
                if response.status_code != 200:
                    return
                with_deadline = asyncio.timeout(seconds)
                try:
                    async with with_deadline:
                        async for _ in response.aiter_bytes():
                            pass
                except TimeoutError:
                    pass
        except httpx.HTTPError as exc:
            statuses[type(exc).__name__] += 1

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        for c in clients:
            await c.aclose()
    return statuses


async def pages_flood(base: str, token: str, job_id: int, n: int, seconds: float) -> Counter[str]:
    """``n`` clients ask for trial pages of ``job_id`` sorted by throughput, in a loop, for ``seconds``."""
    statuses: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60,
                                 limits=httpx.Limits(max_connections=n + 5)) as http:
        async def one(i: int) -> None:
            offset = 0
            while time.monotonic() < deadline:
                try:
                    response = await http.get(f"/v1/jobs/{job_id}/trials",
                                              params={"sort": "-throughput_gbps", "limit": 50, "offset": offset})
                    statuses[str(response.status_code)] += 1
                    if response.status_code == 429:
                        await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
                except httpx.HTTPError as exc:
                    statuses[type(exc).__name__] += 1
                offset = (offset + 50 * (i + 1)) % 500

        await asyncio.gather(*(one(i) for i in range(n)))
    return statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=10, help="read tokens the streams are spread over")
    parser.add_argument("--trial-delay", type=float, default=0.2,
                        help="seconds the service waits after each trial of the running job")
    parser.add_argument("--min-trials", type=int, default=200, help="trials the job has before the phases start")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'flood.db'}"
        engine = db.open_database(url)
        with db.session_scope(engine) as s:
            _, submit = create_token(s, "bench", "submit")
            readers = [create_token(s, f"reader{i}", "read")[1] for i in range(args.tokens)]
        engine.dispose()
        with running_server(url, Path(folder) / "server.log", pace_s=args.trial_delay, timeout=60) as server:
            with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {submit}"}, timeout=30) as http:
                job = http.post("/v1/jobs", json={"testbed": "sim:benson-40g", "budget": 10_000, "repeats": 1,
                                                  "engine": "random"})
                job.raise_for_status()
                job_id = int(job.json()["id"])
                while http.get(f"/v1/jobs/{job_id}/trials", params={"limit": 1}).json()["total"] < args.min_trials:
                    time.sleep(0.5)
            probes = Probes(server.url, readers[0], {"healthz": "/healthz", "/v1/jobs/{id}": f"/v1/jobs/{job_id}"})
            rows = []
            for phase in ("quiet", "streams", "pages"):
                probes.take()
                probes.start()
                if phase == "quiet":
                    time.sleep(args.seconds)
                    flood: Counter[str] = Counter()
                elif phase == "streams":
                    flood = asyncio.run(streams_flood(server.url, readers, job_id, args.streams, args.seconds))
                else:
                    flood = asyncio.run(pages_flood(server.url, submit, job_id, args.pages, args.seconds))
                probes.pause()
                time.sleep(0.3)
                for name, (values, failures) in probes.take().items():
                    rows.append((phase, name, len(values), percentile(values, 50), percentile(values, 99),
                                 max(values, default=float("nan")), sum(failures.values()), dict(flood)))
                print(f"phase {phase}: done", flush=True)
            probes.stop()
            with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {submit}"}, timeout=30) as http:
                http.post(f"/v1/jobs/{job_id}/cancel")
    print()
    print(f"command: .venv/bin/python bench/api_flood.py --seconds {args.seconds:g} --streams {args.streams} "
          f"--pages {args.pages} --tokens {args.tokens} --trial-delay {args.trial_delay:g}")
    print(f"machine: {os.cpu_count()} cores, 1-minute load average {load_before:.1f} at the start; server, job and "
          "clients on the same machine, 127.0.0.1 only; a simulated job (a model, not hardware)")
    print(f"{'phase':<8} {'probe':<16} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'failed':>6}  flood answers")
    for phase, probe, n, p50, p99, top, failed, answers in rows:
        print(f"{phase:<8} {probe:<16} {n:>4} {p50:>8.1f} {p99:>8.1f} {top:>8.1f} {failed:>6}  "
              + (", ".join(f"{k}: {v}" for k, v in sorted(answers.items())) or "-"))


if __name__ == "__main__":
    main()
