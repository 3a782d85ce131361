"""Waking event streams (asyncio) when a job thread of this process writes a trial."""

from __future__ import annotations

import asyncio
import contextlib


class Notifier:
    """Per-job wake-ups from worker threads to the event loop.

    Event streams read trials from the database, so a stream also sees jobs that another
    process (the CLI) runs, by polling. A notification only makes a stream look now
    instead of at its next poll.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[int, set[asyncio.Event]] = {}
        self.closed = False

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` (the server's) to deliver notifications."""
        self._loop = loop

    def subscribe(self, job_id: int) -> asyncio.Event:
        """An event set whenever job ``job_id`` changes; call from the event loop."""
        event = asyncio.Event()
        self._waiters.setdefault(job_id, set()).add(event)
        return event

    def unsubscribe(self, job_id: int, event: asyncio.Event) -> None:
        """Stop notifying ``event``; call from the event loop."""
        waiters = self._waiters.get(job_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiters[job_id]

    def notify(self, job_id: int) -> None:
        """Wake the streams of job ``job_id``; safe to call from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        # The loop may close between the check and the call while the service stops.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._wake, job_id)

    def close(self) -> None:
        """End every stream (the server is stopping); safe to call from a signal handler."""
        self.closed = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._wake_all)

    def _wake(self, job_id: int) -> None:
        for event in self._waiters.get(job_id, ()):
            event.set()

    def _wake_all(self) -> None:
        for waiters in self._waiters.values():
            for event in waiters:
                event.set()
