"""Bearer-token authentication and the two roles (``read``, ``submit``).

Every endpoint but ``/healthz`` depends on :func:`require_read` or :func:`require_submit`.
Tokens are created with ``nictune token create``; the database keeps only their hash.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.deps import get_db
from nictune.api.errors import ApiError
from nictune.db import session_scope
from nictune.db.auth import Role, TokenInfo, lookup_token

bearer = HTTPBearer(auto_error=False, description="A token from `nictune token create --role read|submit`.")
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="nictune"'}


def token_of(dbe: DbEngine, secret: str | None, needed: Role = Role.READ) -> TokenInfo:
    """The live token whose secret is ``secret``.

    Raises:
        ApiError: 401, saying whether the token is missing, unknown or revoked, or expired.
    """
    if not secret:
        raise ApiError(401, "this endpoint needs a bearer token: send 'Authorization: Bearer <token>' "
                            f"(create one with: nictune token create --role {needed.value} --name NAME)",
                       field="Authorization", allowed="Bearer <token>", headers=_CHALLENGE)
    with session_scope(dbe) as s:
        token = lookup_token(s, secret)
    if token is None:
        raise ApiError(401, "the bearer token is unknown or revoked", field="Authorization",
                       headers={"WWW-Authenticate": 'Bearer realm="nictune", error="invalid_token"'})
    if token.expired():
        when = token.expires_at.isoformat(timespec="seconds") if token.expires_at else "?"
        raise ApiError(401, f"token {token.name!r} expired at {when}; ask for a new one "
                            f"(nictune token create --name NAME --expires 90d)", field="Authorization",
                       allowed="a token that has not expired",
                       headers={"WWW-Authenticate": 'Bearer realm="nictune", error="invalid_token", '
                                                   'error_description="the token expired"'})
    return token


def bearer_secret(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else ``None``."""
    scheme, _, secret = (authorization or "").strip().partition(" ")
    return (secret.strip() or None) if scheme.lower() == "bearer" else None


def _authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None, dbe: DbEngine,
                  needed: Role) -> TokenInfo:
    ok = credentials is not None and credentials.scheme.lower() == "bearer"
    token = token_of(dbe, credentials.credentials if ok and credentials is not None else None, needed)
    if not token.role.allows(needed):
        raise ApiError(403, f"token {token.name!r} has role {token.role.value!r}; "
                            f"{request.method} {request.url.path} needs role {needed.value!r}",
                       field="role", allowed=needed.value)
    return token


def require_read(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    dbe: Annotated[DbEngine, Depends(get_db)],
) -> TokenInfo:
    """Any valid token."""
    return _authenticate(request, credentials, dbe, Role.READ)


def require_submit(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    dbe: Annotated[DbEngine, Depends(get_db)],
) -> TokenInfo:
    """A token with role ``submit``."""
    return _authenticate(request, credentials, dbe, Role.SUBMIT)


ReadToken = Annotated[TokenInfo, Depends(require_read)]
SubmitToken = Annotated[TokenInfo, Depends(require_submit)]
