"""Two read-only job endpoints the dashboard uses, built on :mod:`nictune.export` and the job's space.

* ``GET /v1/jobs/{id}/export?format=json|sysctl|tuned|script`` — the best (or ``trial=N``)
  configuration of a job as a download, exactly what ``nictune export`` writes; for
  ``script``, ``part=rollback`` gives the rollback script instead of the apply script.
* ``GET /v1/jobs/{id}/default`` — the job's default configuration (the search space's
  defaults: what an untuned host has), the trial that measured it, if any, and the job's
  objective, so a client can put "default vs best" side by side and draw the default's
  value as a reference line.

Both need a ``read`` token, like every other read of a job.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.auth import ReadToken
from nictune.api.deps import get_db
from nictune.api.routers.jobs import JobId, require_job
from nictune.api.schemas.common import error_responses, json_error_responses
from nictune.api.views import clean_metrics, clean_spread, sim_note
from nictune.db import Configuration, Trial, session_scope
from nictune.errors import InvalidInputError
from nictune.export import (
    ExportSource,
    default_path,
    load_source,
    profile_name,
    render_json,
    render_scripts,
    render_sysctl,
    render_tuned,
    rollback_path,
)
from nictune.jobs.report import earlier_figures
from nictune.optimizer import get_objective
from nictune.search_spaces import space_from_dict

ExportFormat = Literal["json", "sysctl", "tuned", "script"]
ScriptPart = Literal["apply", "rollback"]

_MEDIA = {"json": "application/json", "sysctl": "text/plain; charset=utf-8",
          "tuned": "text/plain; charset=utf-8", "script": "text/x-shellscript; charset=utf-8"}

Db = Annotated[DbEngine, Depends(get_db)]


class DefaultTrial(BaseModel):
    """The first completed trial of the job that measured the default configuration."""

    number: int
    metrics: dict[str, float | None] = Field(description="Mean over the repeats.")
    spread: dict[str, dict[str, float | None]] = Field(
        default_factory=dict, description="Metric -> min and max over the repeats.")


class DefaultHistory(BaseModel):
    """Earlier measurements of the default configuration on the job's testbed and workload
    (from any job), for a job whose own trials did not measure it (a warm start knew it)."""

    repeats: int = Field(description="Measurements behind the figures.")
    metrics: dict[str, float | None] = Field(description="Mean over the measurements.")
    spread: dict[str, dict[str, float | None]] = Field(description="Metric -> min and max.")


class JobDefault(BaseModel):
    """The default configuration of a job's search space and the job's objective."""

    job_id: int
    space: str
    config_hash: str = Field(description="Hash of the default configuration (compare with trials' config_hash).")
    config: dict[str, Any] = Field(description="Knob -> default value (active knobs only).")
    units: dict[str, str] = Field(description="Knob -> unit, for every knob of the space that has one.")
    knobs: list[str] = Field(default_factory=list, description="The space's knobs in its order (the order a "
                                                               "configuration's changes are listed in).")
    trial: DefaultTrial | None = Field(description="The trial that measured the default; null if none did (yet).")
    history: DefaultHistory | None = Field(
        None, description="When no trial of the job measured the default: its earlier measurements on this "
                          "testbed and workload, if any (what the local report shows); else null.")
    objective: dict[str, Any] = Field(description="The objective that ranks trials: name, metric, per, "
                                                  "direction, label, unit.")
    simulated: bool
    note: str | None = None


def export_filename(src: ExportSource, fmt: str, part: str = "apply") -> str:
    """The download's file name: what ``nictune export`` would write (``tuned``: ``<profile>-tuned.conf``,
    to be installed as ``/etc/tuned/<profile>/tuned.conf``)."""
    if fmt == "tuned":
        return f"{profile_name(src)}-tuned.conf"
    path = default_path(src, fmt)
    return rollback_path(path).name if fmt == "script" and part == "rollback" else path.name


def render_export(src: ExportSource, fmt: str, part: str = "apply") -> str:
    """The text of one export file.

    Raises:
        InvalidInputError: a value that may not be exported (from the renderers).
    """
    if fmt == "json":
        return render_json(src)
    if fmt == "sysctl":
        return render_sysctl(src, default_path(src, "sysctl").name)
    if fmt == "tuned":
        return render_tuned(src)
    apply_path = default_path(src, "script")
    scripts = render_scripts(src, apply_path.name, rollback_path(apply_path).name)
    return scripts.rollback if part == "rollback" else scripts.apply


def export_router() -> APIRouter:
    """Build the router of ``GET /v1/jobs/{id}/export`` and ``GET /v1/jobs/{id}/default``.

    Returns:
        An :class:`~fastapi.APIRouter` to pass to ``app.include_router``.
    """
    router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

    @router.get("/{job_id}/export", response_class=Response,
                responses={200: {"description": "The export file, as an attachment.",
                                 "content": {"text/plain": {}, "application/json": {},
                                             "text/x-shellscript": {}}},
                           **json_error_responses(401, 404, 422, 503)})
    def export_job(
        job_id: JobId, _token: ReadToken, dbe: Db,
        fmt: Annotated[ExportFormat, Query(alias="format", description="json, sysctl, tuned or script.")],
        trial: Annotated[int | None, Query(ge=0, le=2**31 - 1,
                                           description="Export this trial instead of the best.")] = None,
        part: Annotated[ScriptPart, Query(description="script only: the apply script or its rollback.")] = "apply",
        device: Annotated[str | None, Query(min_length=1, max_length=15, pattern=r"^[A-Za-z0-9_.-]+$",
                                            description="The target host's data interface (default: the one "
                                                        "the trial measured).")] = None,
        include: Annotated[list[str] | None, Query(max_length=3, description=(
            "tuned only: stock TuneD profiles the profile includes (include=...), e.g. network-throughput."))] = None,
    ) -> Response:
        """The best (or a chosen) configuration of a job as ``nictune export`` writes it.

        ``tuned`` is the profile's ``tuned.conf``, ``sysctl`` a ``/etc/sysctl.d`` drop-in,
        ``script`` an idempotent shell script (``part=rollback`` for its rollback), ``json``
        the configuration with its metrics. A job without a completed trial is a 422.
        """
        with session_scope(dbe) as s:
            require_job(s, job_id)
        if include and fmt != "tuned":
            raise InvalidInputError(f"include is for format tuned, not {fmt}", field="include",
                                    allowed="include with format=tuned")
        src = load_source(dbe, job_id, trial, device=device, include=include)
        body = render_export(src, fmt, part)
        headers = {"Content-Disposition": f'attachment; filename="{export_filename(src, fmt, part)}"',
                   "Cache-Control": "no-store", "X-Nictune-Trial": str(src.trial),
                   "X-Nictune-Simulated": "true" if src.simulated else "false"}
        return Response(body, media_type=_MEDIA[fmt], headers=headers)

    @router.get("/{job_id}/default", response_model=JobDefault, responses=error_responses(401, 404, 422, 503))
    def job_default(job_id: JobId, _token: ReadToken, dbe: Db) -> JobDefault:
        """The job's default configuration (its space's defaults), the trial that measured it, and its objective."""
        with session_scope(dbe) as s:
            job = require_job(s, job_id)
            space = space_from_dict(dict(job.space_definition))
            default = space.default()
            stmt = (select(Trial.number, Trial.summary)
                    .join(Configuration, Trial.configuration_id == Configuration.id)
                    .where(Trial.job_id == job_id, Configuration.hash == default.hash, Trial.state == "completed")
                    .order_by(Trial.number))
            measured = None
            for number, summary in s.execute(stmt):
                metrics = (summary or {}).get("metrics")
                if metrics:
                    measured = DefaultTrial(number=number, metrics=clean_metrics(metrics),
                                            spread=clean_spread(summary.get("spread")))
                    break
            earlier = earlier_figures(s, job, default.hash) if measured is None else None
            history = None if earlier is None else DefaultHistory(
                repeats=earlier["repeats"], metrics=clean_metrics(earlier["metrics"]),
                spread=clean_spread(earlier["spread"]))
            simulated = job.testbed.kind == "sim"
            return JobDefault(
                job_id=job_id, space=job.space_name, config_hash=default.hash, config=default.as_dict(),
                units={name: knob.unit for name, knob in space.knobs.items() if knob.unit}, knobs=list(space.knobs),
                trial=measured,
                history=history,
                objective=get_objective(str(job.objectives[0])).describe(), simulated=simulated,
                note=sim_note(simulated))

    return router


__all__ = ["DefaultHistory", "DefaultTrial", "JobDefault", "export_filename", "export_router", "render_export"]
