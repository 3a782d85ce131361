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
    url = str(db.resolve_url(db_url))
    before = db.current_revision(url)
    after = db.upgrade(url)
    console.print(f"database {url}: revision {before or '(empty)'} -> {after}")


@app.command("current")
def current(db_url: str | None = DB_OPTION) -> None:
    """Print the schema revision of the database and the newest one nictune knows."""
    url = str(db.resolve_url(db_url))
    path = db.sqlite_path(url)
    if path is not None and not path.exists():  # do not create it just to say it is empty
        console.print(f"database {url}: does not exist yet (nictune creates it on first use); "
                      f"newest revision {db.head_revision()}")
        return
    console.print(f"database {url}: revision {db.current_revision(url) or '(empty)'}; "
                  f"newest {db.head_revision()}")
