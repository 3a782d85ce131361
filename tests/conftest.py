"""Fixtures: every db test runs on a SQLite file and on the machine's PostgreSQL.

PostgreSQL: one fresh database per test session (dropped at the end) and one fresh
schema per test inside it. Unreachable PostgreSQL skips those tests, or fails them when
``$CI`` is set, because CI has to prove both backends.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("nictune") is None:  # not installed: test the checkout
    sys.path.insert(0, str(REPO_ROOT))

from sqlalchemy import Engine  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from nictune.db import open_database  # noqa: E402
from tests.environment import unavailable  # noqa: E402

PG_ADMIN_URL = os.environ.get(
    "NICTUNE_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


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


@pytest.fixture(scope="session", autouse=True)
def host_leak_check() -> Iterator[None]:
    """After the whole suite the machine is as the tests found it: no new network namespace
    or veth link, no iperf3 or busy-loop process, every global sysctl unchanged."""
    from nictune.measure.hosts import LocalHost
    from nictune.measure.veth import list_namespaces
    from tests.measure.support import global_sysctls, wait_no_processes

    usable = os.geteuid() == 0 and shutil.which("ip") is not None
    before = global_sysctls()
    namespaces_before = set(list_namespaces(LocalHost())) if usable else set()
    links_before = _veth_links() if usable else set()
    yield
    if not usable:
        return
    namespaces = sorted(set(list_namespaces(LocalHost())) - namespaces_before)
    links = sorted(_veth_links() - links_before)
    processes = wait_no_processes()
    after = global_sysctls()
    changed = {k: (before[k], after.get(k)) for k in before if after.get(k) != before[k]}
    assert not namespaces, f"namespaces left behind: {namespaces}"
    assert not links, f"veth links left behind in the root namespace: {links}"
    assert not processes, f"processes left behind: {processes}"
    assert not changed, f"global sysctls changed: {changed}"


def _veth_links() -> set[str]:
    import subprocess

    out = subprocess.run(["ip", "-o", "link", "show", "type", "veth"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}
