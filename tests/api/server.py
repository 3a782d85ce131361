"""Running the real service (uvicorn in a subprocess, on loopback) for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.processes import ChildProcess

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server(ChildProcess):
    """A running ``nictune serve``."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path


def _wait_healthy(server: Server, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the server exited with {server.process.returncode}:\n{server.log.read_text()}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server did not answer within {timeout}s:\n{server.log.read_text()}")


@contextmanager
def running_server(db_url: str, log: Path, *, port: int | None = None, env: dict[str, str] | None = None,
                   timeout: float = 30.0, args: list[str] | None = None,
                   pace_s: float | None = None) -> Iterator[Server]:
    """Start ``nictune serve`` on 127.0.0.1 (with more of its options in ``args``) and stop it
    (SIGTERM, then SIGKILL) at the end. ``pace_s``: its jobs wait that long after every new
    trial (test-only, :mod:`tests.api.pacing`), so a simulated job keeps running a while."""
    port = port or free_port()
    entry = ["nictune.cli.serve"] if pace_s is None else ["tests.api.pacing", str(pace_s)]
    command = [sys.executable, "-m", *entry, "--host", "127.0.0.1", "--port", str(port),
               "--db", db_url, "--log-level", "warning", *(args or [])]
    child_env = os.environ | (env or {})
    if pace_s is not None:  # tests.api.pacing is imported from the repository
        child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), child_env.get("PYTHONPATH")]))
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=child_env)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        _wait_healthy(server, timeout)
        yield server
    finally:
        server.stop()
