"""Event-loop time of 500 trial events sent three ways (why nictune.api.events batches them).

Usage: .venv/bin/python bench/sse_framing.py [--events 500] [--runs 5]

Drives three FastAPI endpoints in process (no socket) and measures the CPU time of the
event loop's thread per response, the events themselves built beforehand on a worker thread:

* **data**: a generator endpoint (``response_class=EventSourceResponse``) yielding
  ``ServerSentEvent(data=dict)``: FastAPI encodes each event on the loop and sends it alone;
* **raw_data**: the same, each event's JSON encoded on the worker thread (``raw_data=``);
* **one chunk**: the events framed with ``fastapi.sse.format_sse_event`` on the worker thread
  and sent as one chunk, as the service does.

Prints, per way, the best of ``--runs``: wall and loop-thread milliseconds, chunks, bytes.
Figures of this machine, not pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent, format_sse_event
from starlette.types import Message


def trial(number: int, budget: int) -> dict[str, Any]:
    """A trial event's data, the size of a real one (30 knobs, 12 metrics, the best so far)."""
    score = {"value": [1.0, 2.0], "feasible": True}
    return {"job_id": 12, "number": number, "budget": budget, "state": "completed", "source": "measured",
            "config_hash": "ab" * 32, "config": {f"knob_{k}": k * 1000 + number for k in range(30)},
            "metrics": {f"metric_{k}": 1.2345 * k + number for k in range(12)}, "score": score,
            "seconds": 1.5, "error": None, "finished_at": "2026-11-28T12:00:00+00:00",
            "progress": {"done": number + 1, "budget": budget},
            "best": {"number": 3, "config_hash": "cd" * 32, "metrics": {f"metric_{k}": 2.0 * k for k in range(12)},
                     "score": score}, "simulated": True}


def make_app(n: int) -> FastAPI:
    """The three endpoints: ``/data``, ``/raw_data``, ``/chunk``."""
    app = FastAPI()

    def compact(number: int) -> str:
        return json.dumps(trial(number, n), separators=(",", ":"))

    @app.get("/data", response_class=EventSourceResponse)
    async def data() -> AsyncIterator[ServerSentEvent]:
        events = await anyio.to_thread.run_sync(
            lambda: [ServerSentEvent(data=trial(i, n), event="trial", id=str(i)) for i in range(n)])
        for event in events:
            yield event

    @app.get("/raw_data", response_class=EventSourceResponse)
    async def raw_data() -> AsyncIterator[ServerSentEvent]:
        events = await anyio.to_thread.run_sync(
            lambda: [ServerSentEvent(raw_data=compact(i), event="trial", id=str(i)) for i in range(n)])
        for event in events:
            yield event

    @app.get("/chunk")
    async def chunk() -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield await anyio.to_thread.run_sync(
                lambda: b"".join(format_sse_event(data_str=compact(i), event="trial", id=str(i)) for i in range(n)))

        return EventSourceResponse(body())

    return app


async def drive(app: FastAPI, path: str) -> tuple[float, float, int, int]:
    """One GET of ``path``: wall seconds, loop-thread CPU seconds, body chunks, bytes."""
    chunks: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> Message:
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [], "scheme": "http", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1),
             "root_path": "", "http_version": "1.1", "asgi": {"version": "3.0"}, "app": app}
    wall, cpu = time.perf_counter(), time.thread_time()
    await app(scope, receive, send)
    return time.perf_counter() - wall, time.thread_time() - cpu, len([c for c in chunks if c]), sum(map(len, chunks))


async def main_async(n: int, runs: int) -> None:
    app = make_app(n)
    ways = {"data": "/data", "raw_data": "/raw_data", "one chunk": "/chunk"}
    for path in ways.values():  # warm up
        await drive(app, path)
    for name, path in ways.items():
        results = [await drive(app, path) for _ in range(runs)]
        wall, cpu, chunks, size = min(results, key=lambda r: r[1])
        print(f"{name:>9}: wall {wall * 1000:6.1f} ms, loop thread {cpu * 1000:6.1f} ms, "
              f"{chunks} chunks, {size} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"command: .venv/bin/python bench/sse_framing.py --events {args.events} --runs {args.runs}")
    asyncio.run(main_async(args.events, args.runs))


if __name__ == "__main__":
    main()
