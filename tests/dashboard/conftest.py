"""Fixtures of the dashboard tests: an app with the dashboard routers on a SQLite file, and tokens."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

with warnings.catch_warnings():
    # Starlette asks for httpx2 in its test client; httpx is what nictune uses.
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

from nictune.api import ApiSettings
from nictune.db import open_database, session_scope
from nictune.db.auth import create_token
from tests.dashboard.serve_app import build_app


@dataclass(frozen=True)
class Tokens:
    """A submit and a read token of the test's database."""

    submit: str
    read: str

    def headers(self, which: str = "read") -> dict[str, str]:
        """``Authorization`` header with the token of that kind."""
        return {"Authorization": f"Bearer {getattr(self, which)}"}


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite database file (migrated when first opened)."""
    return f"sqlite:///{tmp_path / 'nictune.db'}"


@pytest.fixture
def tokens(sqlite_url: str) -> Tokens:
    """Tokens created in the test's database."""
    engine = open_database(sqlite_url)
    try:
        with session_scope(engine) as s:
            _, submit = create_token(s, "ci", "submit")
            _, read = create_token(s, "dashboard", "read")
    finally:
        engine.dispose()
    return Tokens(submit, read)


@pytest.fixture
def client(sqlite_url: str, tokens: Tokens) -> Iterator[TestClient]:
    """The service with the dashboard and export routers (lifespan running); no default headers."""
    with TestClient(build_app(ApiSettings(db_url=sqlite_url))) as test_client:
        yield test_client
