"""``GET /v1/jobs/{id}/events``: follow a job live (server-sent events)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.sse import EventSourceResponse
from sqlalchemy.engine import Engine as DbEngine
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from nictune.api.auth import ReadToken
from nictune.api.deps import get_db, get_manager, get_notifier, get_settings
from nictune.api.errors import ApiError
from nictune.api.events import JobEventStream
from nictune.api.limits import StreamLimitError, StreamSlots
from nictune.api.manager import JobManager
from nictune.api.notifier import Notifier
from nictune.api.routers.jobs import JobId, require_job
from nictune.api.schemas.common import json_error_responses
from nictune.api.settings import ApiSettings
from nictune.db import session_scope

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

_DESCRIPTION = """\
A `text/event-stream` of the job's progress:

* `trial` (`id:` the trial number): a trial finished; data has its configuration,
  metrics, score, and the best trial so far (by its mean).
* `state`: the job's state changed (pending, running, interrupted ...).
* `end`: the job ended (completed, failed, cancelled); data has the job's recommendation
  (`best`: trial number, configuration hash, mean with its confidence interval), chosen
  after the final race, which may overturn the last trial event's best so far; the stream
  closes.
* `error`: the stream's token was revoked or expired (it is checked again every few
  seconds); the stream closes.

A token may have a few streams open at once, and the service a few dozen (settings
`max_streams_per_token`, `max_streams`): one more is a 429 saying which limit and how
many are open.

Reconnect with `Last-Event-ID` (or `?after=N`) to receive only the trials after N.
"""

#: One event, as Open API 3.1 describes the items of a text/event-stream.
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "event": {"type": "string", "enum": ["trial", "state", "end", "error"]},
        "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The trial number (trial events)."},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "description": "JSON: the trial with the best so far (trial); job_id, state, cancel_requested "
                                "(state); job_id, state, last, best (end: the recommendation, or null)."},
        "retry": {"type": "integer"},
    },
}

_EXAMPLE = ('event: trial\ndata: {"job_id":12,"number":0,"budget":60,"state":"completed",'
            '"source":"measured","metrics":{"throughput_gbps":21.4},"best":{"number":0},"simulated":true}\nid: 0\n\n')


# Not response_class=EventSourceResponse: FastAPI then expects a generator endpoint and encodes
# each event on the event loop (see nictune.api.events); this one returns the response itself.
@router.get("/{job_id}/events", response_class=StreamingResponse, description=_DESCRIPTION,
            responses={200: {"description": "Server-sent events until the job ends.",
                             "content": {"text/event-stream": {"schema": EVENT_SCHEMA, "example": _EXAMPLE}}},
                       **json_error_responses(401, 404, 422, 429, 503)})
async def job_events(
    request: Request, job_id: JobId, token: ReadToken, dbe: Annotated[DbEngine, Depends(get_db)],
    manager: Annotated[JobManager, Depends(get_manager)], notifier: Annotated[Notifier, Depends(get_notifier)],
    settings: Annotated[ApiSettings, Depends(get_settings)],
    last_event_id: Annotated[int | None, Header(alias="Last-Event-ID", ge=-1, le=2**31 - 1,
                                                description="Last trial number received.")] = None,
    after: Annotated[int | None, Query(ge=-1, le=2**31 - 1,
                                       description="Send trials after this number (overrides Last-Event-ID).")] = None,
) -> EventSourceResponse:
    """Follow a job: server-sent events of trial completions and state changes."""
    def check() -> None:
        with session_scope(dbe) as s:
            require_job(s, job_id)

    await run_in_threadpool(check)
    slots: StreamSlots = request.app.state.streams
    try:
        slot = slots.acquire(token.name)
    except StreamLimitError as exc:
        raise ApiError(429, exc.message, field="token", allowed=exc.allowed, headers={"Retry-After": "10"}) from None
    start = after if after is not None else (last_event_id if last_event_id is not None else -1)
    stream = JobEventStream(dbe, manager, notifier, settings, job_id, start,
                            token_id=token.id, limiter=request.app.state.stream_threads)

    async def events() -> AsyncIterator[bytes]:
        try:
            async for message in stream:
                yield message
        finally:
            slot.release()

    # The background task frees the slot too when the body never started (release is idempotent).
    return EventSourceResponse(events(), background=BackgroundTask(slot.release),
                               headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})



