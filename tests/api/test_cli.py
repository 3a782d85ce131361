"""``nictune token`` and ``nictune serve`` as commands."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from nictune.cli import serve as serve_cli
from nictune.cli import token as token_cli
from nictune.db import open_database, session_scope
from nictune.db.auth import TOKEN_PREFIX, verify_token


def test_token_create_prints_it_once_and_stores_a_hash(db_url: str) -> None:
    runner = CliRunner()
    created = runner.invoke(token_cli.app, ["create", "--role", "submit", "--name", "ci", "--db", db_url])
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip()
    assert secret.startswith(TOKEN_PREFIX) and len(secret) > 40

    listed = runner.invoke(token_cli.app, ["list", "--json", "--db", db_url])
    rows = json.loads(listed.stdout)
    assert [(r["name"], r["role"], r["revoked_at"]) for r in rows] == [("ci", "submit", None)]
    assert secret not in listed.stdout

    duplicate = runner.invoke(token_cli.app, ["create", "--name", "ci", "--db", db_url])
    assert duplicate.exit_code != 0
    bad_role = runner.invoke(token_cli.app, ["create", "--name", "x", "--role", "admin", "--db", db_url])
    assert bad_role.exit_code == 2

    revoked = runner.invoke(token_cli.app, ["revoke", "ci", "--db", db_url])
    assert revoked.exit_code == 0 and "token 'ci' revoked" in revoked.output
    again = runner.invoke(token_cli.app, ["revoke", "ci", "--db", db_url])
    assert again.exit_code == 0 and "token 'ci' was already revoked" in again.output
    reused = runner.invoke(token_cli.app, ["create", "--name", "ci", "--db", db_url])
    assert reused.exit_code != 0 and "was revoked; names are not reused" in str(reused.exception)
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            assert verify_token(s, secret) is None
    finally:
        engine.dispose()


def test_serve_binds_loopback_by_default() -> None:
    import inspect

    import typer

    host = inspect.signature(serve_cli.serve).parameters["host"].default
    assert isinstance(host, typer.models.OptionInfo) and host.default == "127.0.0.1"
    assert serve_cli._is_loopback("127.0.0.1") and serve_cli._is_loopback("::1")
    assert serve_cli._is_loopback("localhost") and not serve_cli._is_loopback("0.0.0.0")
    app = typer.Typer()
    serve_cli.register(app)
    assert [c.name for c in app.registered_commands] == ["serve"]
