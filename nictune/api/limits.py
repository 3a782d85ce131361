"""Limits of the service: request bodies above a size (413), open event streams (429), a token's
requests in progress (429).

The pending jobs of a token are counted by :class:`~nictune.api.manager.JobManager`.
"""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nictune.api.auth import bearer_secret, token_of
from nictune.api.errors import ApiError, error_response
from nictune.db.auth import hash_token
from nictune.errors import NictuneError


class _TooLarge(Exception):
    pass


#: Methods whose requests may carry a body.
_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


class BodySizeLimit:
    """Refuse bodies above ``max_bytes``, by ``Content-Length`` or while reading a chunked body.

    A request without a working token gets the 401 it would get anyway, not a 413: the size
    of a body says nothing to a client that may not send one.

    Args:
        app: the wrapped application.
        max_bytes: the largest body accepted.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sized = False
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                sized = True
                if value.isdigit() and int(value) > self.max_bytes:
                    await self._refuse(scope, send)
                    return
        if not sized and scope.get("method") in _WITH_BODY:
            await self._buffered(scope, receive, send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(scope, send)

    async def _buffered(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A body without ``Content-Length`` (chunked): read whole, up to the limit, before the
        application sees it. (Refusing while the application reads it does not work: FastAPI
        turns any error while it reads a body into a 400.)"""
        parts: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body = message.get("body", b"")
            seen += len(body)
            if seen > self.max_bytes:
                await self._refuse(scope, send)
                return
            parts.append(body)
            if not message.get("more_body", False):
                break
        whole: Message | None = {"type": "http.request", "body": b"".join(parts), "more_body": False}

        async def replay() -> Message:
            nonlocal whole
            if whole is not None:
                message, whole = whole, None
                return message
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        dbe = getattr(getattr(scope.get("app"), "state", None), "db", None)
        if dbe is not None:
            authorization = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"),
                                 None)
            try:
                await run_in_threadpool(token_of, dbe, bearer_secret(authorization))
            except ApiError as exc:
                response = error_response(exc.status, exc.message, field=exc.field, allowed=exc.allowed,
                                          headers=exc.headers)
                await response(scope, _no_body, send)
                return
            except NictuneError:  # the database cannot tell: the size alone answers
                pass
        body = json.dumps({"error": "too_large", "message": f"request body above {self.max_bytes} bytes",
                           "field": "body", "allowed": f"at most {self.max_bytes} bytes",
                           "problems": []}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


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
