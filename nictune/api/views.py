"""Turning stored rows into response models: jobs with progress, best and ETA; trials."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from fastapi import Response
from sqlalchemy import Connection
from sqlalchemy.orm import Session

from nictune.api.cache import VersionedCache
from nictune.api.manager import CANCEL_KEY, JobManager
from nictune.api.queries.jobs import CompletedTrial, TrialCounts, completed_trials
from nictune.api.queries.trials import TrialRow, stored_items, trials_by_ids
from nictune.api.schemas.jobs import (
    Baselines,
    BestTrial,
    FrontMember,
    JobLinks,
    JobOut,
    KnobChange,
    Progress,
    RaceState,
    Recommendation,
)
from nictune.db import Configuration, Job, clean_score, finite, item_json, trial_item
from nictune.errors import NictuneError
from nictune.jobs.report import job_account, short_runs
from nictune.jobs.stopping import stop_reason_of
from nictune.optimizer import Goal, Score

SIM_NOTE = "simulated testbed: figures come from a model, not from hardware"
#: Trials whose finishing times the ETA is estimated from.
ETA_WINDOW = 20


def sim_note(simulated: bool) -> str | None:
    """The note that goes with figures from a simulated testbed."""
    return SIM_NOTE if simulated else None


def clean_metrics(metrics: Any) -> dict[str, float | None]:
    """Metric name -> JSON-safe value."""
    return {str(k): finite(v) for k, v in dict(metrics or {}).items()}


def clean_spread(spread: Any) -> dict[str, dict[str, float | None]]:
    """Metric name -> {"min", "max"} over a trial's repeats, JSON-safe."""
    return {str(k): {str(b): finite(v) for b, v in dict(bounds).items()}
            for k, bounds in dict(spread or {}).items() if isinstance(bounds, Mapping)}


def config_dict(row: Configuration) -> dict[str, Any]:
    """The configuration's knob values."""
    value = json.loads(row.canonical)
    return value if isinstance(value, dict) else {"value": value}


def _goal(job: Job) -> Goal | None:
    try:
        return Goal.from_names(list(job.objectives), list(job.constraints))
    except NictuneError:
        return None


def best_of(goal: Goal | None, trials: list[CompletedTrial]) -> tuple[CompletedTrial, Score] | None:
    """The completed trial with the highest score under ``goal`` among those that meet its
    constraints (on their mean): the best so far is never a trial that breaks one."""
    best: tuple[CompletedTrial, Score] | None = None
    if goal is None:
        return None
    for trial in trials:
        metrics = trial.summary.get("metrics")
        if not metrics:
            continue
        try:
            score = goal.score(metrics)
        except (NictuneError, ValueError, TypeError):
            continue
        if score.feasible and (best is None or score > best[1]):
            best = (trial, score)
    return best


def eta_seconds(job: Job, counts: TrialCounts, trials: list[CompletedTrial]) -> float | None:
    """Seconds left for a running job, from the pace of its latest trials."""
    if job.state != "running":
        return None
    remaining = max(job.budget - counts.done, 0)
    if remaining == 0:
        return 0.0
    recent = [t.finished_at for t in trials[-ETA_WINDOW:] if t.finished_at is not None]
    if len(recent) >= 2:
        span = (max(recent) - min(recent)).total_seconds()
        if span > 0:
            return span / (len(recent) - 1) * remaining
    durations = [t.seconds for t in trials if t.seconds is not None]
    return sum(durations) / len(durations) * remaining if durations else None


def links(job_id: int) -> JobLinks:
    """The URLs of a job's sub-resources."""
    base = f"/v1/jobs/{job_id}"
    return JobLinks(self=base, trials=f"{base}/trials", events=f"{base}/events", cancel=f"{base}/cancel")


def _details_version(job: Job, counts: TrialCounts) -> int:
    """What the detailed part of a job's view depends on: its trials (their counts) and its
    stored state and stats."""
    return hash((job.state, job.finished_at, counts.done, counts.measured, counts.cached, counts.failed,
                 counts.running, json.dumps(job.stats, sort_keys=True, default=str)))


def account_of(s: Session, job: Job, counts: TrialCounts, cache: VersionedCache | None = None
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The job's account and trial rows (:func:`nictune.jobs.report.job_account`), kept in
    ``cache`` while the job's trials and stats are unchanged."""
    if cache is None:
        return job_account(s, job.id)
    return cache.get(("job-account", job.id), _details_version(job, counts), lambda: job_account(s, job.id))


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _details(s: Session, job: Job, counts: TrialCounts, cache: VersionedCache | None = None
             ) -> tuple[BestTrial | None, Baselines | None, float | None]:
    """The best trial, the baselines (both from the job's account,
    :func:`nictune.jobs.report.job_account`, as the CLI and the report show them) and the ETA.

    The best trial is the job's recommendation once it has one, else the best so far that
    meets the constraints on its mean: a job none of whose trials does has no best here (the
    account still names the least bad one, with ``best_feasible`` false)."""
    account, _ = account_of(s, job, counts, cache)
    goal = _goal(job)
    row = account.get("best")
    recommended = (job.stats.get("recommendation") or {}).get("number")
    if row is None or goal is None or not (row["number"] == recommended or account.get("best_feasible")):
        best, baselines = None, None
    else:
        best = BestTrial(number=row["number"], config_hash=row["config_hash"], config=dict(row["config"]),
                         metrics=clean_metrics(row["metrics"]), spread=clean_spread(row.get("spread")),
                         score=clean_score(goal.score(row["metrics"])) or {},
                         changes=[KnobChange(**c) for c in account.get("changes") or []])
        found = account.get("baselines")
        baselines = None if found is None else Baselines.model_validate(found)
    eta = eta_seconds(job, counts, completed_trials(s, job.id)) if job.state == "running" else None
    return best, baselines, eta


def job_view(s: Session, job: Job, counts: TrialCounts, manager: JobManager | None, *,
             detailed: bool, cancelling: bool = False, cache: VersionedCache | None = None) -> JobOut:
    """A job as the API shows it; ``detailed`` adds the best trial and the ETA.

    ``cancelling``: the manager said the job was stopping for a cancel *before* ``job`` was
    read (see :func:`nictune.api.routers.jobs.read_job`). ``cache``: keep the detailed part
    (it reads every trial of the job) while the job's trials and stats are unchanged."""
    simulated = job.testbed.kind == "sim"
    best: BestTrial | None = None
    eta: float | None = None
    baselines: Baselines | None = None
    if detailed:
        best, baselines, eta = _details(s, job, counts, cache)
    cancel = cancelling or bool(job.stats.get(CANCEL_KEY)) or (manager is not None and
                                                                 manager.cancel_requested(job.id))
    return JobOut(
        id=job.id, state=job.state, simulated=simulated,  # type: ignore[arg-type]
        note=sim_note(simulated), testbed=job.testbed.name, workload=job.workload.name, space=job.space_name,
        objectives=list(job.objectives), constraints=list(job.constraints), engine=job.engine,
        engine_params=dict(job.engine_params), budget=job.budget, repeats=job.repeats, seed=job.seed,
        created_at=job.created_at, started_at=job.started_at, finished_at=job.finished_at, error=job.error,
        cancel_requested=cancel and job.state not in ("completed", "failed"),
        submitted_by=job.submitted_by, cancelled_by=job.cancelled_by,
        queue_position=manager.queue_position(job.id) if manager is not None else None,
        waiting_for=manager.waiting_for(job.id) if manager is not None and job.state == "waiting" else None,
        notices=[str(n) for n in job.stats.get("notices") or []],
        eta_s=eta,
        progress=Progress(done=counts.done, budget=job.budget, fraction=min(counts.done / job.budget, 1.0),
                          measured=counts.measured, cached=counts.cached, failed=counts.failed,
                          running=counts.running),
        best=best, baselines=baselines, links=links(job.id), **_search_details(job, detailed),
    )


def recommendation_view(rec: Mapping[str, Any] | None) -> Recommendation | None:
    """A job's stored recommendation (``stats["recommendation"]``) as the API shows it."""
    if not rec:
        return None
    iv = rec.get("interval") or {}
    return Recommendation(
        number=rec.get("number"), config_hash=str(rec.get("hash", "")), objective=str(rec.get("objective", "")),
        mean=finite(iv.get("mean")), low=finite(iv.get("low")), high=finite(iv.get("high")),
        n=int(iv.get("n", 0)), confidence=float(iv.get("confidence", 0.9)), text=str(rec.get("text", "")),
    )


def _search_details(job: Job, detailed: bool) -> dict[str, Any]:
    """Racing, noise, warm start, final race and Pareto front of a job (from its stats)."""
    stats = job.stats or {}
    out: dict[str, Any] = {
        "racing": bool((stats.get("options") or {}).get("racing")),
        "runs": stats.get("runs"),
        "short_runs": short_runs(stats),
        "bench_seconds": stats.get("bench_seconds"),
        "warm_start_reused": (stats.get("warm_start") or {}).get("configs"),
        "engine_done_at": stats.get("engine_done_at"),
        "time_limit_s": (stats.get("options") or {}).get("time_limit_s"),
        "patience": (stats.get("options") or {}).get("patience"),
        "elapsed_s": stats.get("elapsed_s"),
    }
    out["stop_reason"], out["stop_text"] = stop_reason_of(job.state, stats)
    # Stored with the job (no trial read): the job list shows each job's result too.
    rec = recommendation_view(stats.get("recommendation"))
    if rec is not None:
        out["recommendation"] = rec
    if not detailed:
        return out
    if stats.get("noise"):
        out["noise"] = {name: {k: float(v) for k, v in d.items()} for name, d in stats["noise"].items()}
    if stats.get("final_race"):
        out["final_race"] = [str(h) for h in stats["final_race"]]
    if stats.get("race"):
        out["race"] = RaceState(**stats["race"])
    if stats.get("front") is not None:
        out["front"] = [FrontMember(number=int(f["number"]), config_hash=str(f["hash"]),
                                    metrics=clean_metrics(f.get("metrics")), feasible=bool(f.get("feasible")))
                        for f in stats["front"]]
    return out


def trial_view(row: TrialRow, *, simulated: bool, testbed: str | None = None,
               workload: str | None = None) -> dict[str, Any]:
    """A trial as the API shows it (:func:`nictune.db.trial_item`, from a row read by the
    queries: the one definition, also what ``trial_items`` keeps for a job's page)."""
    return trial_item(job_id=row.job_id, number=row.number, state=row.state, source=row.source,
                      config_hash=row.config_hash, canonical=row.config_json, summary=row.summary, error=row.error,
                      started_at=row.started_at, finished_at=row.finished_at, simulated=simulated, testbed=testbed,
                      workload=workload)


def job_page_items(s: Connection, ids: Sequence[int], *, simulated: bool,
                   stored: Mapping[int, str | None] | None = None) -> list[Any]:
    """The items of one job's trial page, in the order of ``ids``: each finished trial's stored
    JSON (``trial_items``) as it is, the others (running, or stored without one) built from
    their rows; an id without a trial is left out. ``stored``: the stored items, when read
    with the ids (else they are read here)."""
    if stored is None:
        stored = stored_items(s, ids)
    missing = [i for i in ids if stored.get(i) is None]
    rows = {row.id: row for row in trials_by_ids(s, missing, named=False)}
    items: list[Any] = []
    for i in ids:
        text = stored.get(i)
        if text is not None:
            items.append(orjson.Fragment(text))
        elif i in rows:
            items.append(trial_view(rows[i], simulated=simulated))
    return items


def trial_page(items: list[Any], total: int, limit: int, offset: int, following: str | None, *,
               simulated: bool) -> Response:
    """A :class:`~nictune.api.schemas.trials.TrialPage` of :func:`trial_view` items (or their
    JSON), whose ``next`` is ``following``."""
    page = {"items": items, "total": total, "limit": limit, "offset": offset, "next": following,
            "simulated": simulated, "note": sim_note(simulated)}
    return Response(item_json(page), media_type="application/json")
