"""Limits of the service: request bodies above a size (413), open event streams (429), a token's
requests in progress (429).

Starlette's :class:`~starlette.middleware.body_limit.RequestBodyLimitMiddleware` counts the
bytes of request bodies; this module gives its refusals the service's error body, after
authentication.

The pending jobs of a token are counted by :class:`~nictune.api.manager.JobManager`.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy.engine import Engine as DbEngine
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nictune.api.auth import bearer_secret, token_of
from nictune.api.errors import ApiError, error_response
from nictune.db.auth import hash_token
from nictune.errors import NictuneError


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


async def body_too_large(dbe: DbEngine | None, authorization: str | None, max_bytes: int) -> JSONResponse:
    """The answer to a body above ``max_bytes``: a 413 with the error body (``field`` body,
    ``allowed`` the limit), or the 401 a request without a working token gets anyway: the size
    of a body says nothing to a client that may not send one.

    Args:
        dbe: the database that knows the tokens (``None``: the size alone answers).
        authorization: the request's ``Authorization`` header.
        max_bytes: the largest body accepted.
    """
    if dbe is not None:
        try:
            await run_in_threadpool(token_of, dbe, bearer_secret(authorization))
        except ApiError as exc:
            return error_response(exc.status, exc.message, field=exc.field, allowed=exc.allowed, headers=exc.headers)
        except NictuneError:  # the database cannot tell: the size alone answers
            pass
    return error_response(413, f"request body above {max_bytes} bytes", field="body",
                          allowed=f"at most {max_bytes} bytes")


async def on_body_too_large(request: Request, exc: Exception) -> JSONResponse:
    """Exception handler for status 413: Starlette's :class:`RequestBodyLimitMiddleware` raises
    one when the body read so far (a chunked one) passes its limit."""
    limit = request.scope.get(MAX_BODY_SIZE_SCOPE_KEY)
    max_bytes = limit if isinstance(limit, int) else request.app.state.settings.max_body_bytes
    return await body_too_large(getattr(request.app.state, "db", None), request.headers.get("authorization"),
                                max_bytes)


class DeclaredBodyLimit:
    """Answer a request whose ``Content-Length`` is above ``max_bytes`` at once (see
    :func:`body_too_large`), before the application runs.

    Starlette's :class:`RequestBodyLimitMiddleware`, installed inside this one, counts the
    bytes of every body and stops a chunked one at the limit (:func:`on_body_too_large`
    answers); but to a body declared too large it answers a plain-text 413 itself, in place of
    whatever the application answered (a 401 too). This middleware keeps those requests from
    reaching it.

    Args:
        app: the wrapped application.
        max_bytes: the largest body accepted.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413 (or 401)."""
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                dbe = getattr(getattr(scope.get("app"), "state", None), "db", None)
                response = await body_too_large(dbe, headers.get("authorization"), self.max_bytes)
                await response(scope, _no_body, send)
                return
        await self.app(scope, receive, send)


class StreamLimitError(NictuneError):
    """No stream slot is free (for this token, or in the whole service).

    Attributes:
        message: for humans: which limit, and how many streams are open.
        allowed: the limit, as the error body's ``allowed``.
    """

    def __init__(self, message: str, allowed: str):
        super().__init__(message)
        self.message = message
        self.allowed = allowed


class StreamSlot:
    """One open stream's place; :meth:`release` frees it (once, however often it is called)."""

    def __init__(self, slots: StreamSlots, token: str):
        self._slots = slots
        self.token = token
        self._released = False

    def release(self) -> None:
        """Give the place back."""
        if not self._released:
            self._released = True
            self._slots._release(self.token)


class StreamSlots:
    """Counts the long-lived streams (server-sent events) open per token and overall.

    Used from the event loop only (no locks): a stream takes a slot in its handler, before it
    answers, and gives it back when it ends, however it ends.

    Args:
        per_token: streams one token may have open at once.
        total: streams the service keeps open at once.
    """

    def __init__(self, per_token: int, total: int):
        self.per_token = per_token
        self.total = total
        self._open: dict[str, int] = {}

    def open_count(self, token: str | None = None) -> int:
        """Streams open (of ``token``, or all)."""
        return self._open.get(token, 0) if token is not None else sum(self._open.values())

    def acquire(self, token: str) -> StreamSlot:
        """A slot for one more stream of ``token``.

        Raises:
            StreamLimitError: the token, or the service, has every stream it may have open.
        """
        mine, everyone = self.open_count(token), self.open_count()
        if mine >= self.per_token:
            raise StreamLimitError(f"token {token!r} has {mine} event streams open; this service allows "
                                   f"{self.per_token} per token: close one first",
                                   f"at most {self.per_token} open event streams per token")
        if everyone >= self.total:
            raise StreamLimitError(f"the service has {everyone} event streams open, its limit: try again later",
                                   f"at most {self.total} open event streams in all")
        self._open[token] = mine + 1
        return StreamSlot(self, token)

    def _release(self, token: str) -> None:
        _count_down(self._open, token)


def _count_down(counts: dict[str, int], key: str) -> None:
    """One fewer of ``key`` in ``counts`` (the key goes at zero)."""
    left = counts.get(key, 1) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


def _is_stream(path: str) -> bool:
    """Whether ``path`` is an event stream's: counted by :class:`StreamSlots`, not per request."""
    return path.startswith("/v1/jobs/") and path.endswith("/events")


class RequestLimit:
    """Refuse a token's request while it already has ``per_token`` requests in progress (429).

    A client that sends a hundred page requests at once gets ``per_token`` of them served
    and a ``429`` with ``Retry-After: 1`` for the others, at once and without a database
    read, instead of queueing them in front of everyone else's. Requests are told apart by
    their bearer secret (hashed; a request without one counts only toward ``total``: it is
    refused by authentication anyway); ``/healthz`` is never held back, and event streams
    have their own limit.

    The service as a whole answers at most ``total`` requests at once (with a token or
    without, ``/healthz`` and streams aside): one more is a 429 too, so a crowd of tokens
    cannot queue an unbounded backlog either.

    Args:
        app: the wrapped application.
        per_token: requests one token may have in progress at once.
        total: requests in progress at once, all together.
    """

    def __init__(self, app: ASGIApp, per_token: int, total: int = 1_000_000):
        self.app = app
        self.per_token = per_token
        self.total = total
        self._busy: dict[str, int] = {}
        self._all = 0

    def in_progress(self, secret: str | None = None) -> int:
        """Requests of the token with ``secret`` in progress (all of them without one)."""
        return self._busy.get(hash_token(secret), 0) if secret is not None else self._all

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 429."""
        if scope["type"] != "http" or _is_stream(scope.get("path", "")) or scope.get("path") == "/healthz":
            await self.app(scope, receive, send)
            return
        authorization = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"), None)
        secret = bearer_secret(authorization)
        key = hash_token(secret) if secret is not None else None
        busy = self._busy.get(key, 0) if key is not None else 0
        refusal = None
        if key is not None and busy >= self.per_token:
            refusal = (f"this token has {busy} requests in progress; the service answers at most {self.per_token} "
                       "of one token at once: wait for an answer before sending more",
                       f"at most {self.per_token} requests in progress per token")
        elif self._all >= self.total:
            refusal = (f"the service has {self._all} requests in progress, its limit: try again in a moment",
                       f"at most {self.total} requests in progress in all")
        if refusal is not None:
            response = error_response(429, refusal[0], field="token", allowed=refusal[1], headers={"Retry-After": "1"})
            await response(scope, receive, send)
            return
        self._all += 1
        if key is not None:
            self._busy[key] = busy + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._all -= 1
            if key is not None:
                _count_down(self._busy, key)
