"""``GET /healthz``: liveness and database reachability (the one endpoint without a token)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from nictune import __version__
from nictune.api.database import DatabaseProbe
from nictune.api.schemas.catalog import Health
from nictune.api.schemas.common import error_responses

router = APIRouter(tags=["service"])


@router.get("/healthz", response_model=Health, responses=error_responses(503))
async def healthz(request: Request) -> Health:
    """The service answers and its database too (503 when the database does not).

    Answered on the event loop, with the database checked on a thread of its own (at most
    once a second): a flood of requests that keeps every request thread busy does not
    delay it."""
    probe: DatabaseProbe = request.app.state.db_probe
    return Health(status="ok", database="ok", schema_revision=await probe.revision(), version=__version__)
