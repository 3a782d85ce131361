"""Bearer-token authentication and the two roles (``read``, ``submit``).

Every endpoint but ``/healthz`` depends on :func:`require_read` or :func:`require_submit`.
Tokens are created with ``nictune token create``; the database keeps only their hash. A
token found valid is trusted for ``token_cache_s`` (:class:`TokenCache`): a request of a
known token costs no database read and no worker thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.engine import Engine as DbEngine
from starlette.concurrency import run_in_threadpool

from nictune.api.deps import get_db
from nictune.api.errors import ApiError
from nictune.db import session_scope
from nictune.db.auth import Role, TokenInfo, hash_token, lookup_token

bearer = HTTPBearer(auto_error=False, description="A token from `nictune token create --role read|submit`.")
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="nictune"'}


class TokenCache:
    """Tokens the database found valid, by their secret's hash, trusted for ``ttl`` seconds.

    Only valid tokens are kept (an unknown or revoked secret asks the database every time), so
    ``nictune token revoke`` takes effect within ``ttl``; expiry is checked on every use.
    ``ttl`` 0 keeps nothing. At most ``max_entries`` tokens, the oldest found forgotten first.
    """

    def __init__(self, ttl: float, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic):
        self.ttl = ttl
        self.max_entries = max_entries
        self.clock = clock
        self._found: dict[str, tuple[float, TokenInfo]] = {}
        self._lock = threading.Lock()

    def get(self, secret: str) -> TokenInfo | None:
        """The token of ``secret`` if it was found valid less than ``ttl`` seconds ago."""
        if self.ttl <= 0:
            return None
        found = self._found.get(hash_token(secret))
        if found is None or self.clock() - found[0] >= self.ttl:
            return None
        return found[1]

    def put(self, secret: str, token: TokenInfo) -> None:
        """Remember that the database found ``secret`` to be ``token`` just now."""
        if self.ttl <= 0:
            return
        with self._lock:
            if len(self._found) >= self.max_entries:
                now = self.clock()
                self._found = {k: v for k, v in self._found.items() if now - v[0] < self.ttl}
                while len(self._found) >= self.max_entries:
                    del self._found[next(iter(self._found))]
            self._found[hash_token(secret)] = (self.clock(), token)


def token_of(dbe: DbEngine, secret: str | None, needed: Role = Role.READ, known: TokenCache | None = None) -> TokenInfo:
    """The live token whose secret is ``secret``: from ``known`` when it holds the token, else
    from the database (and then kept in ``known``).

    Raises:
        ApiError: 401, saying whether the token is missing, unknown or revoked, or expired.
    """
    if not secret:
        raise ApiError(401, "this endpoint needs a bearer token: send 'Authorization: Bearer <token>' "
                            f"(create one with: nictune token create --role {needed.value} --name NAME)",
                       field="Authorization", allowed="Bearer <token>", headers=_CHALLENGE)
    token = known.get(secret) if known is not None else None
    if token is None:
        with session_scope(dbe) as s:
            token = lookup_token(s, secret)
        if token is not None and known is not None:
            known.put(secret, token)
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


def _secret(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    ok = credentials is not None and credentials.scheme.lower() == "bearer"
    return credentials.credentials if ok and credentials is not None else None


def authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None, dbe: DbEngine,
                 needed: Role) -> TokenInfo:
    """The request's token, if it has role ``needed`` (it may read the database: call it from
    a worker thread).

    Raises:
        ApiError: 401 (no, unknown, revoked or expired token), 403 (a role below ``needed``).
    """
    token = token_of(dbe, _secret(credentials), needed, request.app.state.tokens)
    if not token.role.allows(needed):
        raise ApiError(403, f"token {token.name!r} has role {token.role.value!r}; "
                            f"{request.method} {request.url.path} needs role {needed.value!r}",
                       field="role", allowed=needed.value)
    return token


async def _require(request: Request, credentials: HTTPAuthorizationCredentials | None, dbe: DbEngine,
                   needed: Role) -> TokenInfo:
    secret = _secret(credentials)
    if secret is None or request.app.state.tokens.get(secret) is not None:
        return authenticate(request, credentials, dbe, needed)  # no database read
    return await run_in_threadpool(authenticate, request, credentials, dbe, needed)


async def require_read(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    dbe: Annotated[DbEngine, Depends(get_db)],
) -> TokenInfo:
    """Any valid token."""
    return await _require(request, credentials, dbe, Role.READ)


async def require_submit(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    dbe: Annotated[DbEngine, Depends(get_db)],
) -> TokenInfo:
    """A token with role ``submit``."""
    return await _require(request, credentials, dbe, Role.SUBMIT)


ReadToken = Annotated[TokenInfo, Depends(require_read)]
SubmitToken = Annotated[TokenInfo, Depends(require_submit)]
