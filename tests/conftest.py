"""Fixtures: every db test runs on a SQLite file and on the machine's PostgreSQL.

PostgreSQL: one fresh database per test session (dropped at the end) and one fresh
schema per test inside it. Unreachable PostgreSQL skips those tests, or fails them when
``$CI`` is set, because CI has to prove both backends.

Test layers: a test is in the ``unit`` layer (``pytest -m unit``) unless it is marked
``system`` (starts a subprocess or a server), ``slow``, ``netns`` or ``postgres``. A unit
test that starts a process or binds a listening socket fails (see :func:`unit_guard`), so
the layer stays what its name says.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("nictune") is None:  # not installed: test the checkout
    sys.path.insert(0, str(REPO_ROOT))

from sqlalchemy import Engine  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from nictune.db import open_database  # noqa: E402
from tests.environment import unavailable  # noqa: E402

# A background job (`cmd &` in a shell without job control, e.g. `nohup bash .ci/run &`)
# starts with SIGINT ignored, and the processes the tests start inherit that: a test that
# presses Ctrl-C on a child (`optimize --server`, `measure`) would wait for it in vain.
# Python's handler here gives the children the default disposition, as under a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

PG_ADMIN_URL = os.environ.get(
    "NICTUNE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


_NOT_UNIT = ("system", "slow", "netns", "postgres")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that no other layer claims as ``unit``."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in _NOT_UNIT):
            item.add_marker(pytest.mark.unit)


_TESTS = Path(__file__).resolve().parent
#: Tests that touch the host: namespaces, machine-wide sysctls, iperf3/sockperf/sshd
#: processes, machine locks, Celery workers. Two of them at once would see each other's
#: changes and processes, so one xdist worker runs them all, one after the other.
_HOST_DIRS = ("tests/measure/", "tests/executors/")


def _host_files() -> frozenset[str]:
    """Test files elsewhere that hold a namespace test."""
    return frozenset(f"tests/{path.relative_to(_TESTS)}" for path in _TESTS.rglob("test_*.py")
                     if "mark.netns" in path.read_text(encoding="utf-8"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's load-by-module scheduling, with every host-touching test in one unit: the
    largest, so it starts first on a worker of its own while the other worker takes the rest."""
    from xdist.scheduler import LoadScopeScheduling

    host = _host_files()

    class HostTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "host" if path.startswith(_HOST_DIRS) or path in host else super()._split_scope(nodeid)

    return HostTestsTogether(config, log)  # type: ignore[arg-type]


class UnitLayerViolation(AssertionError):
    """A unit-layer test started a process or a server."""


@pytest.fixture(autouse=True)
def unit_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse, inside a unit test, to start a subprocess, fork, or bind a socket.

    Mark the test module ``pytestmark = pytest.mark.system`` if it needs to."""
    if request.node.get_closest_marker("unit") is None:
        return
    import socket
    import subprocess

    def refuse(what: str):  # type: ignore[no-untyped-def]
        def _refused(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise UnitLayerViolation(f"a unit test may not {what}; mark it 'system' (tests/conftest.py)")
        return _refused

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse("start a subprocess"))
    monkeypatch.setattr(os, "fork", refuse("fork"))
    monkeypatch.setattr(os, "posix_spawn", refuse("spawn a process"))
    monkeypatch.setattr(os, "posix_spawnp", refuse("spawn a process"))
    original_bind = socket.socket.bind

    def bind(sock: socket.socket, address: object) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            raise UnitLayerViolation("a unit test may not bind a network socket (start a server); mark it 'system'")
        original_bind(sock, address)

    monkeypatch.setattr(socket.socket, "bind", bind)


@pytest.fixture(scope="session")
def pg_database_url() -> Iterator[str]:
    """SQLAlchemy URL of a database created for this test session."""
    import psycopg
    from psycopg import sql

    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        unavailable(f"PostgreSQL at {PG_ADMIN_URL} is unreachable: {exc}".strip())
    name = f"nictune_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _fresh_pg_schema(database_url: str) -> str:
    import psycopg
    from psycopg import sql

    schema = f"t_{uuid.uuid4().hex[:12]}"
    conninfo = make_url(database_url).set(drivername="postgresql")
    with psycopg.connect(conninfo.render_as_string(hide_password=False), autocommit=True) as c:
        c.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    url = make_url(database_url).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty database: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'nictune.db'}"
    return _fresh_pg_schema(request.getfixturevalue("pg_database_url"))


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a database upgraded to the newest schema."""
    opened = open_database(db_url)
    try:
        yield opened
    finally:
        opened.dispose()


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Record the host's state before any test runs (once: in the xdist controller, or the
    only process of a serial run)."""
    if not _is_xdist_worker(session.config):
        session.config.stash[_HOST_BEFORE] = _host_state()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After the whole suite the machine is as the tests found it: no new network namespace
    or veth link, no iperf3 or busy-loop process, every global sysctl unchanged. Checked
    after every worker has finished, so one worker's namespace in use is never another's
    leak; a leak fails the run."""
    before = session.config.stash.get(_HOST_BEFORE, None)
    if before is None or _is_xdist_worker(session.config):
        return
    problems = _host_leaks(before)
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "the tests left the host changed", red=True, bold=True)
            for problem in problems:
                reporter.write_line(problem, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@dataclass(frozen=True)
class _HostState:
    """What the suite must leave as it found it."""

    usable: bool  # root with iproute2: namespaces and links can be listed
    sysctls: dict[str, str]
    namespaces: frozenset[str]
    links: frozenset[str]


_HOST_BEFORE = pytest.StashKey[_HostState]()


def _host_state() -> _HostState:
    from nictune.measure.hosts import LocalHost
    from nictune.measure.testbeds.veth import list_namespaces
    from tests.measure.support import global_sysctls

    usable = os.geteuid() == 0 and shutil.which("ip") is not None
    return _HostState(usable, global_sysctls(),
                      frozenset(list_namespaces(LocalHost())) if usable else frozenset(),
                      frozenset(_veth_links()) if usable else frozenset())


def _host_leaks(before: _HostState) -> list[str]:
    if not before.usable:
        return []
    from tests.measure.support import wait_no_processes

    after = _host_state()
    processes = wait_no_processes()
    changed = {k: (v, after.sysctls.get(k)) for k, v in before.sysctls.items() if after.sysctls.get(k) != v}
    found = {"namespaces left behind": sorted(after.namespaces - before.namespaces),
             "veth links left behind in the root namespace": sorted(after.links - before.links),
             "processes left behind": processes, "global sysctls changed": changed}
    return [f"{what}: {leak}" for what, leak in found.items() if leak]


def _veth_links() -> set[str]:
    import subprocess

    out = subprocess.run(["ip", "-o", "link", "show", "type", "veth"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}
