"""``nictune token``: create, list and revoke the bearer tokens of the REST service."""

from __future__ import annotations

import typer
from rich.table import Table

from nictune.cli._common import console, err_console, print_json
from nictune.db import open_database, resolve_url, session_scope
from nictune.db.auth import LIFETIME_FORM, Role, create_token, list_tokens, parse_lifetime, revoke_token
from nictune.db.types import utcnow

app = typer.Typer(help="Bearer tokens of the REST service (only their hash is stored).", no_args_is_help=True)

_DB = typer.Option(None, "--db", help="Database URL or a SQLite file's path (default: $NICTUNE_DB or the "
                                      "per-user file).")


@app.command("create")
def create(
    name: str = typer.Option(..., "--name", help="Who or what uses the token (e.g. ci)."),
    role: Role = typer.Option(Role.READ, "--role", help="read: every GET; submit: also submit and cancel jobs."),
    expires: str | None = typer.Option(None, "--expires", metavar="LIFETIME",
                                       help=f"Refuse the token after this long: {LIFETIME_FORM} "
                                            "(default: it never expires)."),
    db: str | None = _DB,
) -> None:
    """Create a token and print it once: it cannot be shown again."""
    expires_at = utcnow() + parse_lifetime(expires) if expires is not None else None
    engine = open_database(resolve_url(db))
    try:
        with session_scope(engine) as s:
            row, secret = create_token(s, name, role.value, expires_at=expires_at)
            row_name, row_role = row.name, row.role
    finally:
        engine.dispose()
    print(secret)
    until = f", expires {expires_at.isoformat(timespec='seconds')}" if expires_at else ""
    err_console.print(f"token {row_name!r} (role {row_role}{until}) created; store it now, it is not shown again",
                      highlight=False)


@app.command("list")
def list_(db: str | None = _DB, json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List tokens (names and roles; the secrets are not stored)."""
    engine = open_database(resolve_url(db))
    try:
        with session_scope(engine) as s:
            now = utcnow()
            rows = [{"name": t.name, "role": t.role, "created_at": t.created_at.isoformat(),
                     "expires_at": t.expires_at.isoformat() if t.expires_at else None,
                     "expired": t.expires_at is not None and now >= t.expires_at,
                     "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None} for t in list_tokens(s)]
    finally:
        engine.dispose()
    if json_out:
        print_json(rows)
        return
    table = Table(title="API tokens")
    for col in ("name", "role", "created", "expires", "revoked"):
        table.add_column(col)
    for r in rows:
        expires = str(r["expires_at"])[:19] + (" (expired)" if r["expired"] else "") if r["expires_at"] else "never"
        table.add_row(str(r["name"]), str(r["role"]), str(r["created_at"])[:19], expires,
                      str(r["revoked_at"] or "")[:19])
    console.print(table)


@app.command("revoke")
def revoke(name: str = typer.Argument(..., help="The token's name."), db: str | None = _DB) -> None:
    """Revoke a token: requests with it get 401 from now on."""
    engine = open_database(resolve_url(db))
    try:
        with session_scope(engine) as s:
            already = any(t.name == name and t.revoked_at is not None for t in list_tokens(s))
            revoke_token(s, name)
    finally:
        engine.dispose()
    err_console.print(f"token {name!r} was already revoked" if already else f"token {name!r} revoked",
                      highlight=False)
