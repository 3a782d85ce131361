"""``GET /v1/workers``: the measurement workers (Celery executor) and their pools."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from nictune.api.auth import ReadToken
from nictune.api.deps import get_manager
from nictune.api.manager import JobManager
from nictune.api.schemas.common import error_responses
from nictune.api.schemas.workers import WorkerList

router = APIRouter(prefix="/v1/workers", tags=["service"])


@router.get("", response_model=WorkerList, responses=error_responses(401, 503))
async def list_workers(_token: ReadToken, manager: Annotated[JobManager, Depends(get_manager)]) -> WorkerList:
    """Live workers: testbed, pool, state, current trial, last heartbeat; and the pools they form.

    503 when the worker registry (the Celery result backend) cannot be reached.
    """
    return WorkerList.model_validate(await run_in_threadpool(manager.workers))
