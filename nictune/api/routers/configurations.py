"""``GET /v1/configurations/{hash}``: every measurement of one configuration."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.auth import ReadToken
from nictune.api.deps import get_db
from nictune.api.errors import ApiError
from nictune.api.queries.history import measurement_rows
from nictune.api.schemas.common import error_responses
from nictune.api.schemas.history import ConfigurationOut, MeasurementOut
from nictune.api.views import clean_metrics, config_dict, sim_note
from nictune.db import resolve_configuration, session_scope
from nictune.errors import UnknownNameError

router = APIRouter(prefix="/v1/configurations", tags=["history"])


@router.get("/{config_hash}", response_model=ConfigurationOut, responses=error_responses(401, 404, 422, 503))
def get_configuration(
    config_hash: Annotated[str, Path(pattern=r"^[0-9a-fA-F]{6,128}$",
                                     description="The configuration's hash, or a unique prefix of 6+ digits.")],
    _token: ReadToken, dbe: Annotated[DbEngine, Depends(get_db)],
) -> ConfigurationOut:
    """A configuration and all its measurements, on every testbed and in every job, oldest first."""
    with session_scope(dbe) as s:
        try:
            row = resolve_configuration(s, config_hash.lower())
        except UnknownNameError as exc:
            raise ApiError(404, str(exc), field="config_hash") from None
        rows = measurement_rows(s, row.id)
        measurements = [
            MeasurementOut(job_id=trial.job_id, trial_number=trial.number, repeat=m.repeat, testbed=testbed,
                           workload=workload, simulated=kind == "sim", metrics=clean_metrics(m.metrics),
                           started_at=m.started_at, finished_at=m.finished_at)
            for m, trial, testbed, kind, workload in rows
        ]
        simulated = any(m.simulated for m in measurements)
        trials = len({(m.job_id, m.trial_number) for m in measurements})
        return ConfigurationOut(config_hash=row.hash, config=config_dict(row), simulated=simulated,
                                note=sim_note(simulated), trials=trials, measurements=measurements)
