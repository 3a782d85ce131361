"""The unit layer keeps to what its name says: its tests cannot start a process or a server."""

from __future__ import annotations

import socket
import subprocess

import pytest


def test_a_unit_test_cannot_start_a_process() -> None:
    with pytest.raises(AssertionError, match="a unit test may not start a subprocess"):
        subprocess.run(["true"], check=False)


def test_a_unit_test_cannot_listen_on_a_port() -> None:
    with socket.socket() as sock, pytest.raises(AssertionError, match="may not bind a network socket"):
        sock.bind(("127.0.0.1", 0))


@pytest.mark.system
def test_a_system_test_may() -> None:
    assert subprocess.run(["true"], check=False).returncode == 0
