"""``GET /metrics``: Prometheus text format. It needs a read token like every other endpoint,
unless the service runs with ``metrics_public`` (``nictune serve --metrics-public``): a
Prometheus scrape usually carries no credentials."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.auth import authenticate, bearer
from nictune.api.deps import get_db
from nictune.api.schemas.common import json_error_responses
from nictune.db.auth import Role

router = APIRouter(tags=["service"])

_EXAMPLE = '# TYPE nictune_jobs gauge\nnictune_jobs{state="running"} 1.0\n'


@router.get("/metrics", response_class=PlainTextResponse,
            responses={200: {"description": "Prometheus exposition format.",
                             "content": {"text/plain": {"schema": {"type": "string"}, "example": _EXAMPLE}}},
                       **json_error_responses(401, 503)})
def metrics(request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
            dbe: Annotated[DbEngine, Depends(get_db)]) -> PlainTextResponse:
    """Jobs by state, trials measured, cache hits, measurement seconds (real testbeds) and the
    simulated testbeds' model seconds apart (from the shared database). A read token, unless
    the service was started with --metrics-public."""
    if not request.app.state.settings.metrics_public:
        authenticate(request, credentials, dbe, Role.READ)
    return PlainTextResponse(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)
