"""``/v1/history``: the best configurations of a context, and trials across jobs."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from sqlalchemy.engine import Engine as DbEngine

from nictune.api.auth import ReadToken
from nictune.api.cache import VersionedCache, data_version
from nictune.api.deps import get_db, get_settings
from nictune.api.knob_filters import parse_knob_filters
from nictune.api.pagination import Limit, Offset, next_page
from nictune.api.queries import history as hq
from nictune.api.queries.trials import TrialFilters, space_definitions, trials_page
from nictune.api.schemas.common import UtcDateTime, enum_of, error_responses
from nictune.api.schemas.history import BestConfiguration, BestOut, ObjectiveInterval
from nictune.api.schemas.trials import SortKey, TrialPage
from nictune.api.settings import ApiSettings
from nictune.api.submission import submittable_testbeds
from nictune.api.views import clean_metrics, clean_score, config_dict, finite, sim_note, trial_page, trial_view
from nictune.db import session_scope, workload_names
from nictune.errors import UnknownNameError
from nictune.jobs.best import complete, ranked_rows, ranking
from nictune.measure.benchmarks.workloads import WORKLOADS, check_workload_name
from nictune.optimizer import OBJECTIVES, Goal
from nictune.optimizer.racing import RacingPolicy

router = APIRouter(prefix="/v1/history", tags=["history"])

Db = Annotated[DbEngine, Depends(get_db)]
Settings = Annotated[ApiSettings, Depends(get_settings)]

#: The most configurations /v1/history/best shows.
MAX_TOP = 100

#: Query parameters of /v1/history/trials that are not knob filters.
TRIAL_PARAMS = frozenset({"testbed", "workload", "job_id", "since", "until", "state", "sort", "limit", "offset"})


def _check_testbed(dbe: DbEngine, settings: ApiSettings, testbed: str) -> None:
    with session_scope(dbe) as s:
        stored = hq.testbed_names(s)
    known = sorted({*submittable_testbeds(settings), *stored})
    if testbed not in known:
        raise UnknownNameError("testbed", testbed, known)


def _check_workload(dbe: DbEngine, workload: str) -> None:
    """A built-in workload or one the history holds (a user's, a built-in changed by options)."""
    if workload in WORKLOADS:
        return
    with session_scope(dbe) as s:
        check_workload_name(workload, workload_names(s))


@router.get("/best", response_model=BestOut, responses=error_responses(401, 422, 503))
def history_best(
    request: Request, _token: ReadToken, dbe: Db, settings: Settings,
    testbed: Annotated[str, Query(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$",
                                  description="The testbed (GET /v1/testbeds).",
                                  examples=["sim:benson-40g"])],
    workload: Annotated[str, Query(min_length=1, max_length=200,
                                   description=f"The workload: a built-in one ({', '.join(WORKLOADS)}) or a name "
                                               "the history holds, e.g. 'tcp(-P 4 -l 1400)'.")] = "tcp",
    objective: Annotated[str, Query(description="What 'best' means.",
                                    json_schema_extra=enum_of(OBJECTIVES))] = "throughput",
    constraint: Annotated[list[Annotated[str, Query(max_length=200)]], Query(
        max_length=20, description="Bounds the mean metrics must meet, e.g. loss_pct<=0.1 (repeatable).")] = [],  # noqa: B006
    top: Annotated[int, Query(ge=1, le=MAX_TOP, description="How many configurations.")] = 10,
) -> Response:
    """The best configurations ever measured on a testbed under a workload, across every job.

    Each configuration is scored on the mean of all its measurements in the context
    (answers from the fitness cache are not counted twice), with a 90% confidence interval
    from the testbed's noise (pooled over the configurations measured more than once). The
    ranking puts the configurations whose mean meets the constraints first, by the
    interval's conservative end (the lower bound of a maximised objective), as a job chooses
    its recommendation: one lucky run does not outrank the same mean confirmed three times.
    Measurements from different fingerprints of the testbed are kept apart.
    """
    cache: VersionedCache = request.app.state.cache
    # The whole answer is kept for the data's version: a repeated question costs one lookup
    # (its testbed, workload, objective and constraints were checked when it was computed;
    # testbeds and workloads are never removed).
    asked = ("best", testbed, workload, objective, tuple(constraint), top)
    version = data_version(dbe)
    content = cache.peek(asked, version)
    if content is None:
        _check_workload(dbe, workload)
        goal = Goal.from_names([objective], list(constraint))  # 422 naming 'objective' or 'constraint'
        _check_testbed(dbe, settings, testbed)
        # New results (or a deleted job) moved the version: one request computes the answer,
        # the ones that come meanwhile get the answer it replaces instead of waiting.
        content = cache.get(asked, version, lambda: _best_content(dbe, cache, version, goal, testbed, workload, top),
                            previous=True)
    return Response(content, media_type="application/json")


def _best_content(dbe: DbEngine, cache: VersionedCache, version: int, goal: Goal, testbed: str, workload: str,
                  top: int) -> bytes:
    """The JSON of ``GET /v1/history/best`` at ``version`` (read at that version: newer data is
    seen at the next one): the ranking's first :data:`MAX_TOP` (kept for the version, whatever
    ``top`` a question asks), then every figure of the ``top`` first."""
    policy = RacingPolicy(goal)
    constraints = tuple(map(str, goal.constraints))
    with session_scope(dbe) as s:
        ranked = cache.get(("ranked", testbed, workload, goal.objective.name, constraints), version,
                           lambda: ranking(s, policy, testbed, workload, MAX_TOP))
        chosen = complete(s, policy, ranked[:top], testbed, workload)
        beds = hq.testbeds(s, [c.testbed_id for _, c in chosen])
        simulated = any(b.kind == "sim" for b in beds.values()) or testbed.startswith("sim:")
        items = []
        for position, r in enumerate(ranked_rows(s, policy, chosen), start=1):
            cand, iv = r.candidate, r.interval
            items.append(BestConfiguration(
                rank=position, config_hash=r.config.hash, config=config_dict(r.config),
                objective_value=finite(goal.objective.value(cand.metrics)),
                interval=ObjectiveInterval(mean=finite(iv.mean), low=finite(iv.low), high=finite(iv.high), n=iv.n,
                                           confidence=iv.confidence, noise_cv=r.noise.cv),
                feasible=r.score.feasible, score=clean_score(r.score) or {}, metrics=clean_metrics(cand.metrics),
                measurements=cand.measurements, trials=cand.trials, jobs=r.jobs,
                last_measured_at=cand.last_measured_at, fingerprint=dict(beds[cand.testbed_id].fingerprint)))
    return BestOut(
        testbed=testbed, workload=workload, objective=goal.objective.name, direction=goal.objective.direction,
        unit=goal.objective.unit, constraints=[str(c) for c in goal.constraints], simulated=simulated,
        note=sim_note(simulated), items=items).model_dump_json().encode()


@router.get("/trials", response_model=TrialPage, responses=error_responses(401, 422, 503),
            description="Trials across jobs, filtered by testbed, workload, job, finishing time and knob "
                        "values. Any other query parameter is a knob filter: `?mtu=9000&rx_mode=timer` "
                        "keeps trials whose configuration has mtu 9000 and rx_mode timer; repeat a knob "
                        "to accept several values. Unknown knobs and values outside a knob's range are 422.")
def history_trials(
    request: Request, _token: ReadToken, dbe: Db, settings: Settings,
    testbed: Annotated[str | None, Query(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")] = None,
    workload: Annotated[str | None, Query(min_length=1, max_length=200,
                                          description="A built-in workload or a name the history holds.")] = None,
    job_id: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    since: Annotated[UtcDateTime | None, Query(description="Finished at or after (ISO 8601).")] = None,
    until: Annotated[UtcDateTime | None, Query(description="Finished before (ISO 8601).")] = None,
    state: Annotated[Literal["running", "completed", "failed"] | None,
                     Query(description="Trial state (default: completed).")] = "completed",
    sort: Annotated[SortKey, Query(description="Sort key; '-' for descending.")] = "-finished_at",
    limit: Limit = 100, offset: Offset = 0,
) -> Response:
    """Trials across jobs with filters on testbed, workload, time range and knob values."""
    if workload is not None:
        _check_workload(dbe, workload)
    if testbed is not None:
        _check_testbed(dbe, settings, testbed)
    raw_knobs: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        if key not in TRIAL_PARAMS:
            raw_knobs.setdefault(key, []).append(value)
    with session_scope(dbe) as s:
        definitions = space_definitions(s, testbed, workload) if raw_knobs else []
        knobs = parse_knob_filters(raw_knobs, definitions)
        filters = TrialFilters(job_id=job_id, state=state, testbed=testbed, workload=workload, since=since,
                               until=until, knobs=knobs)
        rows, total = trials_page(s, filters, sort, limit, offset)
        items = [trial_view(r, simulated=r.testbed_kind == "sim", testbed=r.testbed, workload=r.workload)
                 for r in rows]
    return trial_page(items, total, limit, offset, next_page(request, total, limit, offset),
                      simulated=any(item["simulated"] for item in items))
