"""Hosts: one contract over every kind (local, namespace, real sshd), then kind specifics."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nictune.errors import HostCommandError, InvalidInputError
from nictune.measure.hosts import (
    GLOBAL_SYSCTLS,
    Host,
    LocalHost,
    NetnsHost,
    SshHost,
    host_from_spec,
    sysctl_path,
    sysctl_scope,
)
from nictune.measure.hosts.netns import INIT_ONLY, MIRRORED
from tests.measure.support import SshServer, unique_name

pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def namespace() -> Iterator[str]:
    name = unique_name()
    LocalHost().run(["ip", "netns", "add", name])
    try:
        yield name
    finally:
        LocalHost().run(["ip", "netns", "del", name])


@pytest.fixture(params=["local", "netns", "ssh", "ssh-master"])
def host(request: pytest.FixtureRequest, namespace: str) -> Iterator[Host]:
    if request.param == "local":
        yield LocalHost()
    elif request.param == "netns":
        yield NetnsHost(namespace)
    else:
        server: SshServer = request.getfixturevalue("sshd_netns")
        host = server.host()
        if request.param == "ssh-master":
            host.open()
        try:
            yield host
        finally:
            host.close()


class TestHostContract:
    """What appliers and the iperf3 runner rely on, for every kind of host."""

    def test_run_returns_output(self, host: Host) -> None:
        res = host.run(["echo", "hello", "two words"])
        assert (res.returncode, res.stdout) == (0, "hello two words\n")

    def test_arguments_reach_the_program_verbatim(self, host: Host) -> None:
        odd = ["$(id)", "a;b", "'q'", '"d"', "*", "x y", "`id`", "$HOME"]
        assert host.run(["printf", "%s\\n", *odd]).stdout.splitlines() == odd

    def test_failure_names_the_command(self, host: Host) -> None:
        with pytest.raises(HostCommandError, match="ls /nonexistent-nictune"):
            host.run(["ls", "/nonexistent-nictune"])
        assert host.run(["false"], check=False).returncode == 1

    def test_timeout(self, host: Host) -> None:
        t0 = time.monotonic()
        with pytest.raises(HostCommandError, match="timed out"):
            host.run(["sleep", "3"], timeout=1.0)
        assert time.monotonic() - t0 < 5

    def test_input(self, host: Host) -> None:
        assert host.run(["cat"], input="fed\n").stdout == "fed\n"

    def test_read_and_write_files(self, host: Host, tmp_path: Path) -> None:
        target = tmp_path / "f.txt"
        host.write_file(str(target), "42\n")
        assert host.read_file(str(target)) == "42\n"
        assert host.read_file(sysctl_path("net.core.somaxconn")).strip().isdigit()
        assert host.exists(str(target)) and not host.exists(str(tmp_path / "nope"))

    def test_read_files_in_one_go(self, host: Host) -> None:
        paths = [sysctl_path("net.core.somaxconn"), sysctl_path("net.ipv4.tcp_rmem"),
                 sysctl_path("net.core.rmem_max"), "/sys/devices/system/cpu/online"]  # fmt: skip
        assert host.read_files(paths) == {p: host.read_file(p) for p in paths}

    def test_relative_or_dotdot_paths_are_refused(self, host: Host) -> None:
        for bad in ("../../etc/passwd", "/proc/sys/../../etc/passwd", "etc/passwd"):
            with pytest.raises(InvalidInputError):
                host.read_file(bad)

    def test_spawn_and_stop(self, host: Host) -> None:
        proc = host.spawn(["sleep", "30"])
        assert proc.poll() is None
        t0 = time.monotonic()
        proc.stop(grace=2.0)
        assert proc.poll() is not None and time.monotonic() - t0 < 10

    def test_spec_round_trip(self, host: Host) -> None:
        again = host_from_spec(host.spec())
        assert type(again) is type(host) and again.spec() == host.spec()


def test_namespace_sysctl_is_per_namespace(namespace: str) -> None:
    ns = NetnsHost(namespace)
    path = sysctl_path("net.core.somaxconn")
    outside = LocalHost().read_file(path)
    ns.write_file(path, "1234\n")
    assert ns.read_file(path).strip() == "1234"
    assert LocalHost().read_file(path) == outside


def test_global_sysctls_are_read_from_the_initial_namespace(namespace: str) -> None:
    ns = NetnsHost(namespace)
    for key in ("net.core.netdev_max_backlog", "net.core.rmem_max"):
        assert ns.read_file(sysctl_path(key)) == LocalHost().read_file(sysctl_path(key))


@pytest.mark.parametrize(
    "key",
    ["net.core.netdev_max_backlog", "net.core.busy_read", "net.core.rmem_max",
     "net.core.wmem_default", "net.ipv4.tcp_mem", "net.core.somaxconn", "net.ipv4.tcp_rmem"],
)  # fmt: skip
def test_global_table_matches_this_kernel(namespace: str, key: str) -> None:
    scope = sysctl_scope(key, NetnsHost(namespace))
    expected = {INIT_ONLY: "global", MIRRORED: "global-mirrored"}.get(
        GLOBAL_SYSCTLS.get(key, ""), "namespace"
    )
    assert scope == expected


def test_ssh_host_reads_proc_sys_through_real_sshd(sshd_netns: SshServer) -> None:
    host = sshd_netns.host()
    inside = NetnsHost(sshd_netns.namespace).read_file(sysctl_path("net.core.somaxconn"))
    assert host.read_file(sysctl_path("net.core.somaxconn")) == inside
    assert host.run(["id", "-u"]).stdout.strip() == "0"


def test_ssh_host_quotes_each_argument_once(sshd_netns: SshServer) -> None:
    argv = sshd_netns.host().local_argv(["echo", "$(id)", "a b"])
    assert argv[-3:] == ["echo", "'$(id)'", "'a b'"]
    assert "-o" in argv and "BatchMode=yes" in argv and "StrictHostKeyChecking=yes" in argv


def test_ssh_host_key_checking_is_on(sshd_netns: SshServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = SshHost(
        sshd_netns.address, "root", port=sshd_netns.port, key=str(sshd_netns.key),
        known_hosts=str(empty), client=NetnsHost(sshd_netns.namespace),
    )  # fmt: skip
    with pytest.raises(HostCommandError, match="failed"):
        host.run(["true"])
    assert empty.read_text() == ""


def test_ssh_spawn_signals_the_remote_process(sshd_netns: SshServer) -> None:
    host = sshd_netns.host()
    proc = host.spawn(["sleep", "30"])
    assert proc.remote_pid is not None
    proc.stop(grace=3.0)
    ns = NetnsHost(sshd_netns.namespace)
    deadline = time.monotonic() + 5  # a loaded machine may take a moment to reap it
    while ns.run(["kill", "-0", str(proc.remote_pid)], check=False).returncode == 0:
        assert time.monotonic() < deadline, "the remote process survived stop()"
        time.sleep(0.1)


def test_ssh_host_rejects_odd_destinations() -> None:
    for kwargs in ({"host": "-oProxyCommand=x", "user": "root"}, {"host": "h", "user": "r;m"}):
        with pytest.raises(InvalidInputError):
            SshHost(**kwargs)  # type: ignore[arg-type]
