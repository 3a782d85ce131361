"""What every benchmark between two hosts shares (iperf3, sockperf): the two ends, CPU
pinning, the programs it needs, and its server's life: the port checked free, the server
started and waited for, the client run under a hard timeout, the server stopped whatever
happens.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from nictune.errors import HostCommandError, MeasurementError
from nictune.measure.hosts import CommandResult, Host, Process
from nictune.measure.validation import check_cpu_list, check_device, check_int, check_token

#: Seconds added to a run's own length before it is declared hung.
TIMEOUT_MARGIN_S = 10.0
#: Seconds to wait for a server to listen.
SERVER_START_S = 5.0
#: Prints those of its arguments that are not installed (a constant script; the program
#: names are passed as arguments, never pasted into it).
MISSING_SCRIPT = 'for t; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'


@dataclass(frozen=True)
class Endpoints:
    """The two ends of a benchmark.

    Attributes:
        sender: host running the clients (iperf3's sender, sockperf's requester).
        receiver: host running the servers.
        sender_device: data interface on the sender.
        receiver_device: data interface on the receiver (its counters are read).
        receiver_address: address the clients connect to.
        port: iperf3's server port.
        sockperf_port: sockperf's server port; ``None``: the one next to ``port``
            (:attr:`latency_port`).
    """

    sender: Host
    receiver: Host
    sender_device: str
    receiver_device: str
    receiver_address: str
    port: int = 5201
    sockperf_port: int | None = None

    def __post_init__(self) -> None:
        check_device(self.sender_device)
        check_device(self.receiver_device)
        check_token("receiver address", self.receiver_address)
        check_int("port", self.port, 1024, 65535)
        if self.sockperf_port is not None:
            check_int("sockperf port", self.sockperf_port, 1024, 65535)

    @property
    def latency_port(self) -> int:
        """sockperf's port: :attr:`sockperf_port`, else the one after iperf3's (before it
        when iperf3's is the last)."""
        if self.sockperf_port is not None:
            return self.sockperf_port
        return self.port + 1 if self.port < 65535 else self.port - 1


def pinned(argv: list[str], cpus: str | None) -> list[str]:
    """``argv`` run on ``cpus`` (``taskset -c``); unchanged when ``cpus`` is ``None``."""
    return ["taskset", "-c", check_cpu_list("cpus", cpus), *argv] if cpus else argv


def missing_programs(host: Host, programs: Sequence[str]) -> list[str]:
    """Those of ``programs`` that are not installed on ``host``."""
    for program in programs:
        check_token("program", program)
    return host.run(["sh", "-c", MISSING_SCRIPT, "sh", *programs]).stdout.split()


def listening(host: Host, port: int, protocol: str = "tcp") -> bool:
    """Whether a program on ``host`` listens on ``port`` (a bound UDP socket for ``udp``)."""
    flags = "-Hlun" if protocol == "udp" else "-Hltn"
    out = host.run(["ss", flags, "sport", "=", f":{port}"], check=False, timeout=5)
    return bool(out.stdout.strip())


def check_port_free(host: Host, port: int, program: str, protocol: str = "tcp", setting: str = "port") -> None:
    """Before a server starts: a port another program listens on would take the client's
    connection, and the run would time out talking to it instead of failing at once.

    Raises:
        MeasurementError: naming the port and how to find who holds it.
    """
    if listening(host, port, protocol):
        flags = "-lunp" if protocol == "udp" else "-ltnp"
        raise MeasurementError(
            f"port {port} on {host.name} is taken by another program (ss {flags} "
            f"'sport = :{port}' names it), so {program}'s server cannot listen there: stop it (or set another "
            f"{setting} in the pair file)"
        )


def wait_listening(host: Host, server: Process, port: int, program: str, protocol: str = "tcp") -> None:
    """Wait until ``server`` listens on ``port``.

    Raises:
        MeasurementError: it exited, or did not listen within :data:`SERVER_START_S`.
    """
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            res = server.wait(1.0)
            raise MeasurementError(f"{program} server exited: {(res.stdout + res.stderr)[-300:]}")
        if listening(host, port, protocol):
            return
        time.sleep(0.05)
    raise MeasurementError(f"{program} server on {host.name} not listening after {SERVER_START_S:g}s")


@contextmanager
def serving(host: Host, argv: list[str], port: int, program: str, protocol: str = "tcp",
            setting: str = "port") -> Iterator[Process]:
    """The server ``argv`` started on ``host`` and listening on ``port`` for the ``with``
    block; stopped at its end whatever happens (unless it has exited by itself).

    Raises:
        MeasurementError: the port is taken, or the server did not come up.
    """
    check_port_free(host, port, program, protocol, setting)
    server = host.spawn(argv)
    try:
        wait_listening(host, server, port, program, protocol)
        yield server
    finally:
        if server.poll() is None:
            server.stop(grace=1.0)


def run_client(host: Host, argv: list[str], timeout: float, program: str) -> CommandResult:
    """Run a benchmark's client; its exit status is the caller's to judge.

    Raises:
        MeasurementError: it did not finish within ``timeout`` seconds (it was killed).
    """
    try:
        return host.run(argv, timeout=timeout, check=False)
    except HostCommandError as exc:
        raise MeasurementError(f"{program} did not finish within {timeout:g}s: {exc}") from exc
