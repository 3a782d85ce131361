"""Fixtures for the real-measurement tests: veth pairs, a real sshd, a journal directory.

Every namespace a test creates starts with ``ntt``. The check that nothing is left behind
(no new namespaces or veth links, no iperf3/sockperf/busy processes, global sysctls
unchanged) runs once for the whole suite, in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nictune.measure.hosts import LocalHost, NetnsHost
from nictune.measure.testbeds.veth import VethPair
from tests.measure.support import (
    SshServer,
    netns_usable,
    start_sshd,
    unique_name,
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    why = netns_usable()
    if not why:
        return
    for item in items:
        if "netns" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"netns test: {why}"))


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Journals go to the test's temporary directory, never the user's state dir."""
    path = tmp_path / "state"
    monkeypatch.setenv("NICTUNE_STATE_DIR", str(path))
    return path / "journal"


@pytest.fixture
def veth_pair() -> Iterator[VethPair]:
    """A fresh veth pair ``ntt…``, removed afterwards."""
    pair = VethPair(unique_name())
    pair.up()
    try:
        yield pair
    finally:
        pair.down()


@pytest.fixture(scope="module")
def sshd_netns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A namespace with only loopback and a real sshd on 127.0.0.1:2222 inside it."""
    if netns_usable():
        pytest.skip(netns_usable())
    name = unique_name()
    local = LocalHost()
    local.run(["ip", "netns", "add", name])
    try:
        NetnsHost(name).run(["ip", "link", "set", "dev", "lo", "up"])
        yield from start_sshd(name, "127.0.0.1", 2222, tmp_path_factory.mktemp("sshd"))
    finally:
        local.run(["ip", "netns", "del", name])
