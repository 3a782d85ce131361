"""``nictune token create --expires``: the lifetime is stored, listed, and bad lifetimes exit 2."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from nictune.cli.main import main
from nictune.db import open_database, session_scope
from nictune.db.auth import parse_lifetime, verify_token
from nictune.db.types import utcnow
from nictune.errors import InvalidInputError


@pytest.mark.parametrize(("text", "lifetime"), [("90d", timedelta(days=90)), ("12h", timedelta(hours=12)),
                                                ("2w", timedelta(weeks=2)), (" 30m ", timedelta(minutes=30))])
def test_lifetimes(text: str, lifetime: timedelta) -> None:
    assert parse_lifetime(text) == lifetime


@pytest.mark.parametrize("text", ["90", "0d", "-1d", "3651d", "soon", "1y", "1.5d"])
def test_bad_lifetimes_name_the_option_and_the_form(text: str) -> None:
    with pytest.raises(InvalidInputError) as exc:
        parse_lifetime(text)
    assert exc.value.field == "expires" and "90d" in (exc.value.allowed or "")


def test_token_create_expires_is_stored_listed_and_enforced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'n.db'}"
    assert main(["token", "create", "--name", "ci", "--role", "submit", "--expires", "90d", "--db", db]) == 0
    secret = capsys.readouterr().out.strip()
    assert main(["token", "create", "--name", "forever", "--db", db]) == 0
    capsys.readouterr()

    assert main(["token", "list", "--json", "--db", db]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    expires = datetime.fromisoformat(rows["ci"]["expires_at"])
    assert abs(expires - (utcnow() + timedelta(days=90))) < timedelta(minutes=1)
    assert rows["ci"]["expired"] is False
    assert (rows["forever"]["expires_at"], rows["forever"]["expired"]) == (None, False)

    assert main(["token", "list", "--db", db]) == 0
    table = capsys.readouterr().out
    assert "expires" in table and expires.isoformat()[:10] in table and "never" in table

    engine = open_database(db)
    try:
        with session_scope(engine) as s:
            token = verify_token(s, secret)
            assert token is not None and token.expires_at == expires
            assert token.expired(now=expires) and not token.expired(now=expires - timedelta(seconds=1))
    finally:
        engine.dispose()


def test_token_create_with_a_bad_lifetime_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'n.db'}"
    assert main(["token", "create", "--name", "ci", "--expires", "forever", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "--expires 'forever' is not a lifetime" in err and "90d" in err
