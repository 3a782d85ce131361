"""Bearer tokens: every endpoint but /healthz needs one; mutating ones need role submit."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from nictune.db import open_database, session_scope
from nictune.db.auth import ApiToken, hash_token, verify_token
from nictune.db.migrate import head_revision
from tests.api.conftest import Tokens


def operations(api: TestClient) -> list[tuple[str, str]]:
    """Every (method, path) of the OpenAPI schema, with ids filled in."""
    out = []
    for path, methods in api.get("/openapi.json").json()["paths"].items():
        concrete = path.replace("{job_id}", "1").replace("{config_hash}", "abcdef").replace("{name}", "benson-40g")
        out.extend((method.upper(), concrete) for method in methods)
    return out


def test_healthz_needs_no_token(shared_api: TestClient) -> None:
    response = shared_api.get("/healthz", headers={"Authorization": ""})
    assert response.status_code == 200
    assert response.json()["status"] == "ok" and response.json()["schema_revision"] == head_revision()


def test_every_other_endpoint_needs_a_token(shared_api: TestClient, shared_tokens: Tokens) -> None:
    checked = 0
    for method, path in operations(shared_api):
        if path == "/healthz":
            continue
        missing = shared_api.request(method, path, headers={"Authorization": ""})
        assert missing.status_code == 401, (method, path)
        assert missing.json()["error"] == "unauthorized" and "Bearer" in missing.json()["message"]
        # The token it suggests creating is one this endpoint accepts (a read token cannot submit).
        role = "read" if method == "GET" else "submit"
        assert f"nictune token create --role {role} " in missing.json()["message"], (method, path)
        assert missing.headers["www-authenticate"].startswith("Bearer")
        revoked = shared_api.request(method, path, headers=shared_tokens.headers("revoked"))
        assert revoked.status_code == 401 and "revoked" in revoked.json()["message"], (method, path)
        wrong = shared_api.request(method, path, headers={"Authorization": "Bearer nt_not-a-token"})
        assert wrong.status_code == 401, (method, path)
        checked += 1
    assert checked >= 12


def test_mutating_endpoints_need_role_submit(shared_api: TestClient, shared_tokens: Tokens) -> None:
    read = shared_tokens.headers("read")
    for method, path in operations(shared_api):
        response = shared_api.request(method, path, headers=read)
        if method == "GET":
            assert response.status_code != 403, (method, path)
            continue
        assert response.status_code == 403, (method, path)
        body = response.json()
        assert body["error"] == "forbidden" and body["allowed"] == "submit"
        assert "role 'read'" in body["message"] and "needs role 'submit'" in body["message"]


def test_only_a_hash_of_the_token_is_stored(shared_db_url: str, shared_tokens: Tokens) -> None:
    engine = open_database(shared_db_url)
    try:
        with session_scope(engine) as s:
            rows = s.query(ApiToken).all()
            stored = {row.token_hash for row in rows}
            assert shared_tokens.submit not in stored and hash_token(shared_tokens.submit) in stored
            assert all(len(h) == 64 for h in stored)
            info = verify_token(s, shared_tokens.submit)
            assert info is not None and info.role == "submit"
            assert verify_token(s, shared_tokens.revoked) is None
    finally:
        engine.dispose()


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "token abc"])
def test_malformed_authorization_headers_are_401(shared_api: TestClient, header: str) -> None:
    response = shared_api.get("/v1/jobs", headers={"Authorization": header})
    assert response.status_code == 401 and response.json()["field"] == "Authorization"
