"""Alembic, configured in code: the migrations ship inside the package.

No ``alembic.ini`` in the working directory is needed or read. :func:`upgrade` runs in
one transaction under a lock (a PostgreSQL advisory lock; SQLite's write lock taken by
``BEGIN IMMEDIATE``), so concurrent first runs do not race to create the schema and an
interrupted upgrade leaves the previous schema in place. :func:`open_database` opens a
database and upgrades it; :mod:`nictune.db.session` makes engines and never touches the
schema (it does not import this module).

Alembic is imported only when a schema has to change or be inspected in depth: a database
already at :data:`SHIPPED_HEAD` is recognised by one query, so a command that opens an
up-to-date database does not pay Alembic's import (about a third of a second per start).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.engine import URL

from nictune.db._errors import storage_errors
from nictune.db.session import make_engine
from nictune.errors import StorageError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")
"""The Alembic script directory inside the installed package."""

# Any fixed 64-bit number works; it only has to be the same in every nictune process.
_PG_LOCK_KEY = 0x6E6963_74756E65  # "nictune"

# Alembic keeps the running migration context in module globals (alembic.context), so two
# threads must never run migrations at once, even on different databases.
_ALEMBIC_LOCK = threading.Lock()

SHIPPED_HEAD = "0009"
"""The newest revision in ``migrations/versions`` (a test checks it against Alembic's own
:func:`head_revision`): what lets an up-to-date database open without importing Alembic."""


def alembic_config(url: str | URL | None = None) -> Config:
    """Build the Alembic configuration for nictune's migrations.

    Args:
        url: stored as ``sqlalchemy.url`` (used by offline mode and by ``env.py`` when no
            connection is handed over); optional.

    Returns:
        A :class:`alembic.config.Config` whose ``script_location`` is the package's
        migrations directory.
    """
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        rendered = url.render_as_string(hide_password=False) if isinstance(url, URL) else url
        # ConfigParser interpolation: a literal % must be doubled.
        config.set_main_option("sqlalchemy.url", rendered.replace("%", "%%"))
    return config


def head_revision() -> str:
    """Return the newest revision shipped with this version of nictune (Alembic's reading of
    the migrations directory)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships migrations
        raise StorageError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def _engine_for(target: str | URL | Engine | None) -> tuple[Engine, bool]:
    if isinstance(target, Engine):
        return target, False
    return make_engine(target), True


def _lock(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        # Released at commit or rollback of the migration transaction.
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})


@contextmanager
def _quiet_alembic() -> Iterator[None]:
    """Alembic logs "Context impl SQLiteImpl." and "Will assume non-transactional DDL." at
    INFO each time it looks at a database: noise in a service's log when nothing migrates.
    Its "Running upgrade" lines still come through. Callers hold ``_ALEMBIC_LOCK``."""
    logger = logging.getLogger("alembic.runtime.migration")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _stored_revision(connection: Connection) -> str | None:
    """The revision in ``alembic_version``, without Alembic (``None``: no such table, or
    not exactly one row, which Alembic then sorts out)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return str(rows[0]) if len(rows) == 1 else None


def upgrade(target: str | URL | Engine | None = None, revision: str = "head") -> str | None:
    """Upgrade the schema at ``target`` to ``revision``; a no-op when it is already there.

    Args:
        target: a URL (an engine is made and disposed of) or an engine to reuse;
            :func:`~nictune.db.session.default_url` when ``None``.
        revision: the Alembic revision to reach.

    Returns:
        The revision the database is at afterwards.

    Raises:
        StorageError: the database cannot be reached, is at a revision this version of
            nictune does not know (written by a newer nictune?), or a migration failed.
    """
    engine, owned = _engine_for(target)
    try:
        with (
            _ALEMBIC_LOCK,
            storage_errors("checking (or upgrading) the database schema"),
            engine.begin() as connection,
        ):
            _lock(connection)
            if revision == "head" and _stored_revision(connection) == SHIPPED_HEAD:
                return SHIPPED_HEAD  # nothing to do, nothing to log, and no Alembic to import
            from alembic import command
            from alembic.runtime.migration import MigrationContext
            from alembic.script.revision import RevisionError
            from alembic.util.exc import CommandError

            config = alembic_config()
            config.attributes["connection"] = connection
            try:
                command.upgrade(config, revision)
            except (CommandError, RevisionError) as exc:
                raise StorageError(
                    f"cannot upgrade the database schema to {revision!r}: {exc} "
                    "(was the database written by a newer nictune?)"
                ) from exc
            with _quiet_alembic():
                return MigrationContext.configure(connection).get_current_revision()
    finally:
        if owned:
            engine.dispose()


def current_revision(target: str | URL | Engine | None = None) -> str | None:
    """Return the schema revision of the database at ``target``.

    Args:
        target: a URL or an engine, as for :func:`upgrade`.

    Returns:
        The revision id, or ``None`` for a database nictune has never opened.

    Raises:
        StorageError: the database cannot be reached.
    """
    from alembic.runtime.migration import MigrationContext

    engine, owned = _engine_for(target)
    try:
        with storage_errors("reading the schema revision"), engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        if owned:
            engine.dispose()


def open_database(url: str | URL | None = None) -> Engine:
    """Open the database at ``url``, creating or upgrading its schema to the newest.

    Safe to call from several processes at once: the migration takes a lock first.

    Args:
        url: a SQLAlchemy URL; :func:`~nictune.db.session.default_url` when ``None``.

    Returns:
        An engine for the up-to-date database.

    Raises:
        StorageError: the database cannot be reached or migrated.
    """
    engine = make_engine(url)
    try:
        upgrade(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine
