"""Engines and transactions: where the database lives and how writes are made safe.

Every write goes through :func:`session_scope`: one transaction that commits at the end
of the block or rolls back on any exception. SQLite runs in WAL mode with
``synchronous=FULL``, so a process killed at any instant leaves the database intact
with every committed transaction in it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, Dialect, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError, SQLAlchemyError
from sqlalchemy.orm import Session

from nictune.db._errors import describe
from nictune.errors import DatabaseUrlError, StorageError
from nictune.settings import CommonSettings

ENV_VAR = "NICTUNE_DB"
"""Environment variable that overrides :func:`default_url` (a URL or a file path): the
``db`` field of :class:`~nictune.settings.CommonSettings`."""

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite connection waits for another writer before giving up."""


def default_url(settings: CommonSettings | None = None) -> str:
    """Return the database URL to use when none is given.

    ``settings.db`` (``$NICTUNE_DB``) wins: a value containing ``://`` is used as a
    SQLAlchemy URL, any other value as the path of a SQLite file. Otherwise the database is
    ``nictune.db`` in the per-user data directory (``platformdirs.user_data_dir``).

    Args:
        settings: the process's settings; read from the environment now when ``None``.

    Returns:
        A SQLAlchemy URL string.
    """
    override = ((settings if settings is not None else CommonSettings()).db or "").strip()
    if override:
        return str(resolve_url(override))
    return f"sqlite:///{Path(platformdirs.user_data_dir('nictune')) / 'nictune.db'}"


def resolve_url(url: str | URL | None) -> str | URL:
    """``url`` as a SQLAlchemy URL: :func:`default_url` when None, a plain path as a SQLite file
    (``--db ~/lab.db`` as ``$NICTUNE_DB`` takes it)."""
    if url is None:
        return default_url()
    if isinstance(url, str) and "://" not in url:
        return f"sqlite:///{Path(url.strip()).expanduser().resolve()}"
    return url


#: The databases nictune keeps its history in, and how to name them.
SUPPORTED_BACKENDS = ("sqlite", "postgresql")
URL_FORMS = "sqlite:///PATH, a SQLite file's path, or postgresql+psycopg://USER@HOST[:PORT]/DATABASE"


def _parse(url: str | URL) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise DatabaseUrlError(f"invalid database URL: {exc}", field="db", allowed=URL_FORMS) from exc
    if parsed.get_backend_name() not in SUPPORTED_BACKENDS:
        raise DatabaseUrlError(f"database URL {parsed.render_as_string(hide_password=True)}: nictune keeps its "
                               f"history in SQLite or PostgreSQL, not {parsed.get_backend_name()}", field="db",
                               allowed=URL_FORMS)
    return parsed


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL or plain path (see :func:`resolve_url`); None for other
    databases and in-memory SQLite."""
    parsed = _parse(resolve_url(url))
    return _sqlite_file(parsed) if parsed.get_backend_name() == "sqlite" else None


def _sqlite_file(url: URL) -> Path | None:
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _on_sqlite_connect(dbapi_connection: Any, connection_record: Any) -> None:
    # Take BEGIN away from the sqlite3 module (its legacy mode skips BEGIN before SELECT
    # and SAVEPOINT, which breaks savepoints and transactional DDL); see _sqlite_begin.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # busy_timeout first: switching to WAL needs a lock another process may hold.
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        # FULL also survives power loss, not only a killed process; commits are rare.
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.execute("PRAGMA foreign_keys = ON")
        try:  # the history's ranking sorts by sqrt(n): a library built without math functions
            cursor.execute("SELECT sqrt(1)")
        except sqlite3.OperationalError:
            dbapi_connection.create_function("sqrt", 1, math.sqrt, deterministic=True)
    finally:
        cursor.close()


#: A key of a pooled SQLite connection's ``info`` while a :func:`connection_scope` without a
#: snapshot holds it: its statements each commit on their own (no BEGIN is sent).
NO_BEGIN = "nictune_no_begin"


def _sqlite_begin(statement: str, connection: Any) -> None:
    # The dialect's do_begin, not an engine "begin" event: any engine-level listener makes
    # SQLAlchemy dispatch events around every statement (40 us of each request's 135 us to
    # read a job's header here). IMMEDIATE takes the write lock at BEGIN. A deferred
    # transaction that reads and then writes fails at once with "database is locked" when
    # another process wrote in between (busy_timeout cannot help there); IMMEDIATE waits for
    # the lock instead.
    if not connection.info.get(NO_BEGIN):
        connection.execute(statement)


def make_engine(url: str | URL | None = None, *, read_only: bool = False, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` with nictune's connection settings.

    SQLite: the parent directory is created; every connection gets WAL journaling,
    ``synchronous=FULL``, foreign keys and a busy timeout, and transactions start with
    ``BEGIN IMMEDIATE`` so savepoints and DDL are transactional. PostgreSQL: pooled
    connections idle for over a second are pinged before use (a dead one is replaced).

    Args:
        url: a SQLAlchemy URL; :func:`default_url` when ``None``.
        read_only: an engine for reads only: its SQLite transactions begin ``DEFERRED`` (in
            WAL mode a consistent snapshot without any lock, so a reader never waits for a
            writer). No difference on PostgreSQL.
        **kwargs: passed to :func:`sqlalchemy.create_engine`.

    Returns:
        The engine. The schema is not touched; see :func:`~nictune.db.migrate.open_database`.

    Raises:
        StorageError: the URL is invalid or its driver is not installed.
    """
    parsed = _parse(url if url is not None else default_url())
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite:
        path = _sqlite_file(parsed)
        if path is not None:
            try:
                path.expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(f"cannot create the directory of {path}: {exc}") from exc
            _create_private(path.expanduser())
    try:
        engine = create_engine(parsed, **kwargs)
    except (ArgumentError, ImportError) as exc:
        raise DatabaseUrlError(f"cannot use database URL {parsed!r}: {exc}", field="db", allowed=URL_FORMS) from exc
    if is_sqlite:
        event.listen(engine, "connect", _on_sqlite_connect)  # a pool event: none per statement
        engine.dialect.do_begin = functools.partial(  # type: ignore[method-assign]
            _sqlite_begin, "BEGIN" if read_only else "BEGIN IMMEDIATE")
    elif not kwargs.get("pool_pre_ping"):
        event.listen(engine.pool, "checkin", _on_checkin)
        event.listen(engine.pool, "checkout", functools.partial(_on_checkout, engine.dialect))
    return engine


#: A pooled PostgreSQL connection idle longer than this is pinged before it is handed out.
PING_IDLE_S = 1.0


def _on_checkin(dbapi_connection: Any, connection_record: Any) -> None:
    connection_record.info["returned_at"] = time.monotonic()


def _on_checkout(dialect: Dialect, dbapi_connection: Any, connection_record: Any, connection_proxy: Any) -> None:
    # SQLAlchemy's pool_pre_ping pings at every checkout: a round trip per request (0.05 ms of
    # the service's CPU and 0.02 ms of the backend's). A connection back in the pool within the
    # last second was working then; one idle longer (a restarted server, a firewall's timeout)
    # is pinged as pool_pre_ping would, and a dead one is replaced: the pool tries another.
    if time.monotonic() - connection_record.info.get("returned_at", 0.0) <= PING_IDLE_S:
        return
    try:
        alive = dialect.do_ping(dbapi_connection)
    except Exception as exc:  # whatever the driver raises, the connection is unusable
        raise DisconnectionError(f"a pooled connection failed its ping: {exc}") from exc
    if not alive:
        raise DisconnectionError("a pooled connection failed its ping")


def _create_private(path: Path) -> None:
    """Create a new SQLite file readable by its owner only (0600: it holds the history and the
    service's token hashes); SQLite gives its journal files the same mode. An existing file is
    left as it is."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    except OSError:
        return  # not creatable here: SQLite reports it, with its own message, when it opens
    os.close(fd)


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """Run a block in one transaction: commit at its end, roll back on any exception.

    Objects stay usable after the block (``expire_on_commit=False``), so a caller can
    read ``job.id`` once the job is committed.

    Args:
        engine: from :func:`make_engine` or :func:`~nictune.db.migrate.open_database`.

    Yields:
        A session bound to ``engine``.

    Raises:
        StorageError: a database error inside the block or at commit (the transaction
            is rolled back). Any other exception is re-raised unchanged after rollback.
    """
    session = Session(engine, expire_on_commit=False)
    try:
        yield session
        session.commit()
    except SQLAlchemyError as exc:
        _rollback_quietly(session)
        raise StorageError(f"database error, transaction rolled back: {describe(exc)}") from exc
    except BaseException:
        _rollback_quietly(session)
        raise
    finally:
        session.close()


def _rollback_quietly(session: Session) -> None:
    # A rollback on a dead connection raises too; the first error is the one to report.
    with contextlib.suppress(SQLAlchemyError):
        session.rollback()


@contextmanager
def connection_scope(engine: Engine, *, snapshot: bool = True) -> Iterator[Connection]:
    """A Core connection for a few quick reads, without an ORM session: a fraction of
    :func:`session_scope`'s cost, for what a request asks on every call. Its transaction is
    rolled back at the end (it is for reads).

    ``snapshot=False``: the reads need not see one snapshot (each is one statement, or what
    they read does not change). Each statement then commits on its own: no BEGIN and ROLLBACK
    around them (on PostgreSQL two round trips; on SQLite two statements, and no write lock
    taken on an engine whose transactions begin ``IMMEDIATE``).

    Raises:
        StorageError: a database error inside the block.
    """
    try:
        with engine.connect() as connection:
            if snapshot:
                yield connection
            elif connection.dialect.name == "postgresql":
                connection.execution_options(isolation_level="AUTOCOMMIT")
                yield connection
            else:
                # The sqlite3 module is in autocommit mode (_on_sqlite_connect): without the
                # dialect's BEGIN (_sqlite_begin), every statement is a transaction of its own.
                pooled = connection.connection
                pooled.info[NO_BEGIN] = True
                try:
                    yield connection
                finally:
                    pooled.info.pop(NO_BEGIN, None)
    except SQLAlchemyError as exc:
        raise StorageError(f"database error: {describe(exc)}") from exc
