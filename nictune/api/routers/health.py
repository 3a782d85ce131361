"""``GET /healthz``: liveness and database reachability (the one endpoint without a token)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy.engine import Engine as DbEngine

from nictune import __version__
from nictune.api.deps import get_db
from nictune.api.schemas.catalog import Health
from nictune.api.schemas.common import error_responses
from nictune.db import current_revision

router = APIRouter(tags=["service"])


@router.get("/healthz", response_model=Health, responses=error_responses(503))
def healthz(dbe: Annotated[DbEngine, Depends(get_db)]) -> Health:
    """The service answers and its database too (503 when the database does not)."""
    return Health(status="ok", database="ok", schema_revision=current_revision(dbe), version=__version__)
