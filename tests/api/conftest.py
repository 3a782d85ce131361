"""Fixtures of the API tests: the app on a SQLite file and on the machine's PostgreSQL.

The databases come from the shared ``db_url`` fixture (tests/conftest.py): one
PostgreSQL database per test session, dropped at the end, and a fresh schema per test.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

with warnings.catch_warnings():
    # Starlette asks for httpx2 in its test client; httpx is what nictune uses.
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

from nictune.api import ApiSettings, create_app
from nictune.api.manager import TrialHook
from nictune.db import open_database, session_scope
from nictune.db.auth import create_token, revoke_token
from tests.api.pacing import pace
from tests.conftest import _fresh_pg_schema


@dataclass(frozen=True)
class Tokens:
    """Bearer tokens of each kind, created in the test's database."""

    submit: str
    read: str
    revoked: str

    def headers(self, which: str = "submit") -> dict[str, str]:
        """``Authorization`` header with the token of that kind."""
        return {"Authorization": f"Bearer {getattr(self, which)}"}


def _make_tokens(db_url: str) -> Tokens:
    engine = open_database(db_url)
    try:
        with session_scope(engine) as s:
            _, submit = create_token(s, "ci", "submit")
            _, read = create_token(s, "dashboard", "read")
            _, revoked = create_token(s, "old", "submit")
            revoke_token(s, "old")
    finally:
        engine.dispose()
    return Tokens(submit, read, revoked)


@pytest.fixture
def tokens(db_url: str) -> Tokens:
    """A submit, a read and a revoked token (the database is created and migrated here)."""
    return _make_tokens(db_url)


AppFactory = Callable[..., AbstractContextManager[TestClient]]


@pytest.fixture
def make_api(db_url: str, tokens: Tokens) -> AppFactory:
    """Start the app (lifespan included) with settings overrides; yields a TestClient.
    ``pace_s``: its jobs wait that long after every new trial (test-only: :func:`tests.api.pacing.pace`);
    ``trial_hook``: another hook for ``create_app``."""

    @contextmanager
    def start(*, pace_s: float | None = None, trial_hook: TrialHook | None = None,
              **overrides: Any) -> Iterator[TestClient]:
        settings = ApiSettings(db_url=db_url, **overrides)
        hook = pace(pace_s) if pace_s is not None else trial_hook
        with TestClient(create_app(settings, trial_hook=hook), headers=tokens.headers("submit")) as client:
            yield client

    return start


@pytest.fixture
def api(make_api: AppFactory) -> Iterator[TestClient]:
    """The app with default settings; requests carry the submit token."""
    with make_api() as client:
        yield client


@pytest.fixture(scope="module", params=[pytest.param("sqlite", id="sqlite"),
                                        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)])
def shared_db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database shared by the tests of one module (for tests that only read or are refused)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('api') / 'nictune.db'}"
    return _fresh_pg_schema(request.getfixturevalue("pg_database_url"))


@pytest.fixture(scope="module")
def shared_tokens(shared_db_url: str) -> Tokens:
    """Tokens in the module's database."""
    return _make_tokens(shared_db_url)


@pytest.fixture(scope="module")
def shared_api(shared_db_url: str, shared_tokens: Tokens) -> Iterator[TestClient]:
    """One app for the whole module; requests carry the submit token."""
    settings = ApiSettings(db_url=shared_db_url)
    with TestClient(create_app(settings), headers=shared_tokens.headers("submit")) as client:
        yield client
