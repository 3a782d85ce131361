"""The ``--db`` option shared by every command that reads or writes history."""

from __future__ import annotations

import typer
from sqlalchemy.engine import Engine, make_url

from nictune import db
from nictune.cli._common import from_settings
from nictune.errors import DatabaseUrlError, InvalidInputError, StorageError

DB_OPTION = typer.Option(
    None, "--db", metavar="URL", callback=from_settings("db"),
    help="Database URL (sqlite:///PATH, postgresql+psycopg:// ...) or a SQLite file's path; default: "
         "$NICTUNE_DB, else a SQLite file in the user data directory.",
)


def open_db(url: str | None, *, must_exist: bool = False) -> Engine:
    """Open (creating or upgrading) the database at ``url`` or the default one.

    ``must_exist`` (commands that only read history): a SQLite file named by ``--db`` or
    ``$NICTUNE_DB`` that does not exist is an error, not a new empty database (a typo would
    otherwise show an empty history and leave a file behind).
    """
    if must_exist and url is not None:
        path = db.sqlite_path(url)
        if path is not None and not path.exists():
            raise InvalidInputError(f"--db {url}: no database at {path} (nictune optimize creates one)",
                                    field="db", allowed="an existing database, or leave --db and NICTUNE_DB unset")
    resolved = db.resolve_url(url)
    try:
        return db.open_database(resolved)
    except DatabaseUrlError:
        raise
    except StorageError as exc:  # name the database: the message alone does not say which
        shown = make_url(resolved).render_as_string(hide_password=True)
        raise StorageError(f"cannot open the database {shown}: {exc}") from exc
