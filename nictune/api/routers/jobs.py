"""``/v1/jobs``: submit, list, read, cancel jobs and page through their trials."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy.engine import Engine as DbEngine
from sqlalchemy.orm import Session

from nictune.api.auth import ReadToken, SubmitToken
from nictune.api.cache import VersionedCache
from nictune.api.deps import get_db, get_manager, get_settings
from nictune.api.errors import ApiError
from nictune.api.manager import FINAL_STATES, JobManager, TooManyPendingJobs
from nictune.api.pagination import Limit, Offset, next_page
from nictune.api.queries.jobs import JobFilters, job_header, jobs_page, load_job, trial_counts
from nictune.api.queries.trials import (
    INDEX_ORDERED,
    INDEXED_SORTS,
    TrialFilters,
    decode_cursor,
    encode_cursor,
    ids_after,
    job_landmarks,
    landmark_page,
    ordered_ids,
    page_ids,
    trial_count,
    trials_by_ids,
)
from nictune.api.schemas.common import UtcDateTime, enum_of, error_responses
from nictune.api.schemas.jobs import JobCreate, JobOut, JobPage, JobStateName
from nictune.api.schemas.trials import SortKey, TrialPage
from nictune.api.settings import ApiSettings
from nictune.api.submission import build_spec
from nictune.api.views import account_of, job_page_items, job_view, json_safe, trial_page, trial_view
from nictune.db import Job, connection_scope, session_scope
from nictune.optimizer import OBJECTIVES

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

Db = Annotated[DbEngine, Depends(get_db)]
Manager = Annotated[JobManager, Depends(get_manager)]
JobId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The job's id.")]
Text = Annotated[str | None, Query(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")]


def require_job(s: Session, job_id: int) -> Job:
    """The job, or a 404."""
    job = load_job(s, job_id)
    if job is None:
        raise ApiError(404, f"there is no job with id {job_id}", field="job_id")
    return job


def read_job(dbe: DbEngine, manager: JobManager, job_id: int, cache: VersionedCache | None = None) -> JobOut:
    """The detailed view of one job.

    The manager is asked whether the job is stopping for a cancel before the job is read: a
    job that ends between the two answers is stored ``cancelled`` by then, while the other
    order could read a running job whose stored flag the runner's last stats write dropped
    and then hear from the manager that it has ended (``cancel_requested`` false).
    """
    cancelling = manager.cancel_requested(job_id)
    with session_scope(dbe) as s:
        job = require_job(s, job_id)
        return job_view(s, job, trial_counts(s, [job_id])[job_id], manager, detailed=True, cancelling=cancelling,
                        cache=cache)


@router.post("", status_code=201, response_model=JobOut,
             responses={201: {"description": "The job is stored and queued; `Location` is its URL.",
                              "headers": {"Location": {"description": "URL of the job",
                                                       "schema": {"type": "string"}}}},
                        **error_responses(400, 401, 403, 413, 422, 429, 503)})
def submit_job(body: JobCreate, response: Response, token: SubmitToken, dbe: Db, manager: Manager,
               settings: Annotated[ApiSettings, Depends(get_settings)]) -> JobOut:
    """Submit a job; it runs in the background (jobs on one testbed run one after another).

    Everything is validated before the job is stored: an unknown testbed, space, objective,
    engine or knob, a value outside its range, a negative budget or a malformed
    constraint is a 422 naming the field and the allowed values. A token with
    ``max_pending_jobs`` jobs pending or running gets a 429 saying so.
    """
    spec = build_spec(body, settings)
    try:
        job_id = manager.submit(spec, submitted_by=token.name)
    except TooManyPendingJobs as exc:
        raise ApiError(429, str(exc), field="token", allowed=f"at most {exc.limit} jobs pending or running per token",
                       headers={"Retry-After": "30"}) from None
    response.headers["Location"] = f"/v1/jobs/{job_id}"
    return read_job(dbe, manager, job_id)


@router.get("", response_model=JobPage, responses=error_responses(401, 422, 503))
def list_jobs(
    request: Request, _token: ReadToken, dbe: Db, manager: Manager,
    state: Annotated[JobStateName | None, Query(description="Only jobs in this state.")] = None,
    testbed: Annotated[Text, Query(description="Only jobs on this testbed.")] = None,
    workload: Annotated[Text, Query(description="Only jobs under this workload.")] = None,
    objective: Annotated[str | None, Query(description="Only jobs with this objective.",
                                           json_schema_extra=enum_of(OBJECTIVES))] = None,
    created_after: Annotated[UtcDateTime | None, Query(description="Created at or after (ISO 8601).")] = None,
    created_before: Annotated[UtcDateTime | None, Query(description="Created before (ISO 8601).")] = None,
    limit: Limit = 50, offset: Offset = 0,
) -> JobPage:
    """Jobs, newest first, filtered by state, testbed, workload, objective and creation time."""
    if objective is not None and objective not in OBJECTIVES:
        raise ApiError(422, f"unknown objective {objective!r}", field="objective", allowed=", ".join(OBJECTIVES))
    filters = JobFilters(state=state, testbed=testbed, workload=workload, objective=objective,
                         created_after=created_after, created_before=created_before)
    with session_scope(dbe) as s:
        jobs, total = jobs_page(s, filters, limit, offset)
        counts = trial_counts(s, [job.id for job in jobs])
        items = [job_view(s, job, counts[job.id], manager, detailed=False) for job in jobs]
    return JobPage(items=items, total=total, limit=limit, offset=offset,
                   next=next_page(request, total, limit, offset))


@router.get("/{job_id}", response_model=JobOut, responses=error_responses(401, 404, 422, 503))
def get_job(request: Request, job_id: JobId, _token: ReadToken, dbe: Db, manager: Manager) -> JobOut:
    """A job: state, progress, best trial so far and estimated time left."""
    return read_job(dbe, manager, job_id, request.app.state.cache)


@router.get("/{job_id}/trials", response_model=TrialPage, responses=error_responses(401, 404, 422, 503))
def job_trials(
    request: Request, job_id: JobId, _token: ReadToken, dbe: Db,
    sort: Annotated[SortKey, Query(description="number, started_at, finished_at, score or a metric; "
                                               "a leading '-' sorts descending.")] = "number",
    state: Annotated[Literal["running", "completed", "failed"] | None,
                     Query(description="Only trials in this state.")] = None,
    source: Annotated[Literal["measured", "cache"] | None, Query(description="Only trials from this source.")] = None,
    limit: Limit = 100, offset: Offset = 0,
    after: Annotated[str | None, Query(max_length=300, description=(
        "Keyset pagination (sort by number or a main metric: throughput_gbps, loss_pct, interrupts_per_gb, "
        "cpu_rx_pct, packet_rate_mpps): empty for the first page, then the value in the `next` link. "
        "Each page costs the same however deep; not with `offset`."))] = None,
) -> Response:
    """The trials of a job, paginated and sortable by any metric (``sort=-throughput_gbps``)."""
    filters = TrialFilters(job_id=job_id, state=state, source=source)
    if after is not None:
        return _keyset_page(request, dbe, job_id, filters, sort, limit, offset, after)
    # No snapshot: a finished job's trials do not change, and a running job's page is as of
    # its reads (a trial that finishes between them shows as it is then).
    with connection_scope(dbe, snapshot=False) as s:
        header = job_header(s, job_id)
        if header is None:
            raise ApiError(404, f"there is no job with id {job_id}", field="job_id")
        simulated = header.kind == "sim"
        finished = header.state in FINAL_STATES and header.finished_at is not None
        cache: VersionedCache = request.app.state.cache
        version = int(header.finished_at.timestamp() * 1e6) if header.finished_at is not None else 0
        stored: dict[int, str | None] | None = None  # the page's items, when read with its ids
        if sort in INDEX_ORDERED and state is None and source is None and finished:
            # Best first by a main metric, or by number, of a finished job: a range of an index
            # read in order from the landmark before the page (found once per job and order),
            # so a deep page steps over as few index entries as the first.
            marks = cache.get(("trial-landmarks", job_id, sort), version, lambda: job_landmarks(s, job_id, sort))
            stored = dict(landmark_page(s, job_id, sort, marks, limit, offset))
            ids, total = list(stored), marks.total
        elif finished:
            # Another order of a finished job, whose trials never change: sort them once, then
            # cut every page out of that order (no sort per page). It is kept while the job's
            # end time is the same: a deleted job's id is a 404 above, and a new job under a
            # reused id ends at another time.
            order = cache.get(("trial-order", job_id, sort, state, source), version,
                              lambda: ordered_ids(s, filters, sort))
            ids, total = order[offset:offset + limit].tolist(), len(order)
        else:
            # A running job's page: a range of an index read in order from its start (OFFSET) for
            # an index's order, else a sort of its trials.
            ids, total = page_ids(s, filters, sort, limit, offset), trial_count(s, filters)
        # Finished trials are their stored JSON (trial_items), put together as they are.
        items = job_page_items(s, ids, simulated=simulated, stored=stored)
    return trial_page(items, total, limit, offset, next_page(request, total, limit, offset), simulated=simulated)


@router.get("/{job_id}/account", responses={
    200: {"description": "The account: the job's settings and counts, `best` (the recommended trial), `default`, "
                         "`baselines` (the recommendation against the default and the stock profiles), `changes`, "
                         "`stop_reason`, `race`, `noise` ..., and `trials`: every trial in order.",
          "content": {"application/json": {"schema": {"type": "object", "required": ["account", "trials"]}}}},
    **error_responses(401, 404, 422, 503)})
def get_job_account(request: Request, job_id: JobId, _token: ReadToken, dbe: Db) -> Response:
    """A job's whole account, the one `nictune history show N --json` prints from the local
    database (the same function builds both, and the report): what `nictune history show N
    --server URL` reads. Non-finite numbers are null."""
    with session_scope(dbe) as s:
        job = require_job(s, job_id)
        account, rows = account_of(s, job, trial_counts(s, [job_id])[job_id], request.app.state.cache)
        body = json_safe({"account": account, "trials": rows})
    return JSONResponse(body)


def _keyset_page(request: Request, dbe: DbEngine, job_id: int, filters: TrialFilters, sort: str, limit: int,
                 offset: int, after: str) -> Response:
    """A page of ``GET /v1/jobs/{id}/trials?after=...``: the trials after the cursor."""
    if sort.lstrip("-") not in INDEXED_SORTS:
        raise ApiError(422, f"'after' pages are sorted by number or a main metric, not {sort!r}", field="sort",
                       allowed=", ".join(sorted(INDEXED_SORTS)))
    if offset:
        raise ApiError(422, "give either 'after' or 'offset', not both", field="offset", allowed="0 with 'after'")
    position = decode_cursor(after, sort) if after else None
    with connection_scope(dbe) as s:
        header = job_header(s, job_id)
        if header is None:
            raise ApiError(404, f"there is no job with id {job_id}", field="job_id")
        simulated = header.kind == "sim"
        ids = ids_after(s, filters, sort, position, limit + 1)
        rows = trials_by_ids(s, ids[:limit], named=False)
        total = trial_count(s, filters)
        cursor = encode_cursor(sort, rows[-1]) if len(ids) > limit else None
        items = [trial_view(r, simulated=simulated) for r in rows]
    following = None
    if cursor is not None:
        url = request.url.remove_query_params("offset").include_query_params(after=cursor)
        following = f"{url.path}?{url.query}"
    return trial_page(items, total, limit, 0, following, simulated=simulated)


@router.post("/{job_id}/cancel", response_model=JobOut,
             responses={200: {"description": "The job was waiting and is now cancelled."},
                        202: {"description": "The job stops after the trial in flight (its settings "
                                             "restored) and then ends cancelled.", "model": JobOut},
                        **error_responses(401, 403, 404, 409, 422, 503)})
def cancel_job(job_id: JobId, response: Response, token: SubmitToken, dbe: Db, manager: Manager) -> JobOut:
    """Cancel a job. A 409 says the job has already ended (or runs in the CLI's process)."""
    with session_scope(dbe) as s:
        require_job(s, job_id)
    stopping = manager.cancel(job_id, cancelled_by=token.name)
    response.status_code = 202 if stopping else 200
    return read_job(dbe, manager, job_id)
