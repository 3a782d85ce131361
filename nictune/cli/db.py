"""``nictune db``: the history database's schema."""

from __future__ import annotations

import typer

from nictune import db
from nictune.cli._common import console
from nictune.cli.dbopt import DB_OPTION

app = typer.Typer(help="Manage the history database (schema migrations).", no_args_is_help=True)


@app.command("upgrade")
def upgrade(db_url: str | None = DB_OPTION) -> None:
    """Create the schema or upgrade it to the newest revision (runs automatically on first use)."""
    url = db_url or db.default_url()
    before = db.current_revision(url)
    after = db.upgrade(url)
    console.print(f"database {url}: revision {before or '(empty)'} -> {after}")


@app.command("current")
def current(db_url: str | None = DB_OPTION) -> None:
    """Print the schema revision of the database and the newest one nictune knows."""
    url = db_url or db.default_url()
    console.print(f"database {url}: revision {db.current_revision(url) or '(empty)'}; "
                  f"newest {db.head_revision()}")
