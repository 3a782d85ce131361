"""``GET /metrics``: Prometheus text format (needs a token like every other endpoint)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from nictune.api.auth import ReadToken
from nictune.api.schemas.common import json_error_responses

router = APIRouter(tags=["service"])

_EXAMPLE = '# TYPE nictune_jobs gauge\nnictune_jobs{state="running"} 1.0\n'


@router.get("/metrics", response_class=PlainTextResponse,
            responses={200: {"description": "Prometheus exposition format.",
                             "content": {"text/plain": {"schema": {"type": "string"}, "example": _EXAMPLE}}},
                       **json_error_responses(401, 503)})
def metrics(request: Request, _token: ReadToken) -> PlainTextResponse:
    """Jobs by state, trials measured, cache hits, measurement seconds (from the shared database)."""
    return PlainTextResponse(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)
