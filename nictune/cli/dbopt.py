"""The ``--db`` option shared by every command that reads or writes history."""

from __future__ import annotations

import typer
from sqlalchemy.engine import Engine

from nictune import db

DB_OPTION = typer.Option(
    None, "--db", metavar="URL", envvar="NICTUNE_DB",
    help="Database URL (sqlite:///path or postgresql+psycopg://...); default: a SQLite file in "
         "the user data directory, or $NICTUNE_DB.",
)


def open_db(url: str | None) -> Engine:
    """Open (creating or upgrading) the database at ``url`` or the default one."""
    return db.open_database(url)
