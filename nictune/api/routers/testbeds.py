"""``GET /v1/testbeds``: where jobs can run, and which testbeds the history knows."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.auth import ReadToken
from nictune.api.deps import get_db, get_manager, get_settings
from nictune.api.manager import JobManager
from nictune.api.queries.history import stored_testbeds
from nictune.api.schemas.catalog import AvailableTestbed, StoredTestbed, TestbedList
from nictune.api.schemas.common import error_responses
from nictune.api.settings import ApiSettings
from nictune.api.views import SIM_NOTE
from nictune.db import session_scope
from nictune.errors import NictuneError
from nictune.executors.celery_app import POOL_PREFIX
from nictune.measure.sim import PROFILES

router = APIRouter(prefix="/v1/testbeds", tags=["catalog"])


def _pool(name: str, manager: JobManager) -> AvailableTestbed:
    """A ``pool:NAME`` testbed, described by its pinned record when the registry has one."""
    registry = manager.executors.registry
    record = None
    if registry is not None:
        try:
            record = registry.pool(name.removeprefix(POOL_PREFIX))
        except NictuneError:  # the registry is down: the catalogue still answers
            record = None
    if record is None:
        return AvailableTestbed(name=name, kind="pool", simulated=False, default_space=None,
                                description="a pool of measurement workers (nictune worker); none has "
                                            "joined it yet")
    what = f"simulated pair ({SIM_NOTE})" if record.simulated else f"{record.kind} pair"
    return AvailableTestbed(name=name, kind="pool", simulated=record.simulated, default_space=record.default_space,
                            description=f"a pool of measurement workers on a {what}")


def _available(settings: ApiSettings, manager: JobManager) -> list[AvailableTestbed]:
    out = [AvailableTestbed(name=name, kind="sim", simulated=True, default_space=profile.space,
                            description=f"simulated pair ({SIM_NOTE})")
           for name, profile in sorted(PROFILES.items())]
    for name in settings.testbeds:
        if name in PROFILES:
            continue
        if name.startswith(POOL_PREFIX):
            out.append(_pool(name, manager))
            continue
        kind = "veth" if name == "veth" or name.startswith("veth:") else "ssh"
        out.append(AvailableTestbed(name=name, kind=kind, simulated=False, default_space=None,
                                    description="allowed by the operator of this service"))
    return out


@router.get("", response_model=TestbedList, responses=error_responses(401, 503))
def list_testbeds(_token: ReadToken, dbe: Annotated[DbEngine, Depends(get_db)],
                  settings: Annotated[ApiSettings, Depends(get_settings)],
                  manager: Annotated[JobManager, Depends(get_manager)]) -> TestbedList:
    """Testbeds jobs may be submitted to, and the testbeds (with fingerprints) in the history."""
    with session_scope(dbe) as s:
        stored = [StoredTestbed(id=t.id, name=t.name, kind=t.kind, simulated=t.kind == "sim",
                                fingerprint=dict(t.fingerprint), created_at=t.created_at, jobs=jobs)
                  for t, jobs in stored_testbeds(s)]
    return TestbedList(available=_available(settings, manager), stored=stored,
                       note="sim:* testbeds are models: their figures do not come from hardware")
