"""``GET /v1/testbeds``: where jobs can run, and which testbeds the history knows."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.auth import ReadToken
from nictune.api.deps import get_db, get_settings
from nictune.api.queries.history import stored_testbeds
from nictune.api.schemas.catalog import AvailableTestbed, StoredTestbed, TestbedList
from nictune.api.schemas.common import error_responses
from nictune.api.settings import ApiSettings
from nictune.api.views import SIM_NOTE
from nictune.db import session_scope
from nictune.measure.sim import PROFILES

router = APIRouter(prefix="/v1/testbeds", tags=["catalog"])


def _available(settings: ApiSettings) -> list[AvailableTestbed]:
    out = [AvailableTestbed(name=name, kind="sim", simulated=True, default_space=profile.space,
                            description=f"simulated pair ({SIM_NOTE})")
           for name, profile in sorted(PROFILES.items())]
    for name in settings.testbeds:
        if name in PROFILES:
            continue
        kind = "veth" if name == "veth" or name.startswith("veth:") else "ssh"
        out.append(AvailableTestbed(name=name, kind=kind, simulated=False, default_space=None,
                                    description="allowed by the operator of this service"))
    return out


@router.get("", response_model=TestbedList, responses=error_responses(401, 503))
def list_testbeds(_token: ReadToken, dbe: Annotated[DbEngine, Depends(get_db)],
                  settings: Annotated[ApiSettings, Depends(get_settings)]) -> TestbedList:
    """Testbeds jobs may be submitted to, and the testbeds (with fingerprints) in the history."""
    with session_scope(dbe) as s:
        stored = [StoredTestbed(id=t.id, name=t.name, kind=t.kind, simulated=t.kind == "sim",
                                fingerprint=dict(t.fingerprint), created_at=t.created_at, jobs=jobs)
                  for t, jobs in stored_testbeds(s)]
    return TestbedList(available=_available(settings), stored=stored,
                       note="sim:* testbeds are models: their figures do not come from hardware")
