"""Limits of the service: request bodies above a size (413), open event streams (429).

The pending jobs of a token are counted by :class:`~nictune.api.manager.JobManager`.
"""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nictune.api.auth import bearer_secret, token_of
from nictune.api.errors import ApiError, error_response
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
        left = self._open.get(token, 0) - 1
        if left > 0:
            self._open[token] = left
        else:
            self._open.pop(token, None)
