"""What a job found: best configuration, the default's figures, and the difference."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Engine as DbEngine
from sqlalchemy.orm import Session

from nictune import db
from nictune.errors import NictuneError
from nictune.jobs.baselines import compare_baselines
from nictune.jobs.stopping import stop_reason_of
from nictune.optimizer import Goal, Score
from nictune.search_spaces import Configuration, SearchSpace, space_from_dict


def _score(goal: Goal, summary: dict[str, Any] | None) -> Score | None:
    if not summary or "metrics" not in summary:
        return None
    return goal.score(summary["metrics"])


def trial_rows(trials: list[db.TrialSummaryRow]) -> list[dict[str, Any]]:
    """A job's trials (:func:`nictune.db.job_trial_summaries`) as plain rows."""
    rows = []
    for t in trials:
        summary = t.summary or {}
        rows.append({
            "number": t.number,
            "state": t.state,
            "source": t.source,
            "config_hash": t.config_hash,
            "config": json.loads(t.canonical),
            "metrics": summary.get("metrics", {}),
            "spread": summary.get("spread", {}),
            "repeats": summary.get("repeats"),
            # Answered from the cache when the job asked for it (and measured again in the
            # final race if ``source`` is now "measured"): how many earlier samples it reused.
            "cached_from": summary.get("cached_from"),
            "score": summary.get("score"),
            "error": t.error,
        })
    return rows


def knob_changes(space: SearchSpace, config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The knobs whose value in ``config`` differs from ``space``'s default configuration, in
    the space's order: ``knob``, ``default``, ``best`` (``None``: inactive there) and ``unit``."""
    default = space.default().as_dict()
    return [{"knob": name, "default": default.get(name), "best": config.get(name), "unit": knob.unit}
            for name, knob in space.knobs.items() if default.get(name) != config.get(name)]


def earlier_figures(s: Session, job: db.Job, config_hash: str) -> dict[str, Any] | None:
    """A configuration's earlier measurements on the job's testbed and workload (from any
    job): ``repeats``, mean ``metrics`` and ``spread``; ``None`` if it was never measured there."""
    samples = db.cached_samples(s, job.testbed_id, job.workload_id, config_hash)
    if not samples:
        return None
    return {"repeats": len(samples), "metrics": Goal.mean_metrics(samples), "spread": Goal.spread(samples)}


def known_row(s: Session, job: db.Job, config: Configuration, completed: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A configuration's row among a job's ``completed`` rows (:func:`trial_rows`) or, when it
    is not a trial of the job (a warm start knew it already), its earlier figures on the job's
    testbed and workload (``number`` None, ``source`` history); ``None`` if never measured there."""
    row = next((r for r in completed if r["config_hash"] == config.hash), None)
    earlier = earlier_figures(s, job, config.hash) if row is None else None
    if earlier is not None:
        row = {"number": None, "state": "completed", "source": "history", "config_hash": config.hash,
               "config": json.loads(config.canonical_json), "score": None, "error": None, **earlier}
    return row


def default_row(s: Session, job: db.Job, space: SearchSpace, completed: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The default configuration's row (:func:`known_row`)."""
    return known_row(s, job, space.default(), completed)


def baseline_rows(s: Session, job: db.Job, space: SearchSpace,
                  completed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Config hash -> row (:func:`known_row`) of the default and of each stock profile that
    was measured on the job's testbed and workload, by this job or an earlier one."""
    configs = [space.default()]
    for name in space.stock_profiles():
        try:
            configs.append(space.profile(name))
        except NictuneError:  # a stored space whose profile no longer validates
            continue
    rows = {c.hash: known_row(s, job, c, completed) for c in configs}
    return {h: r for h, r in rows.items() if r is not None}


def job_header(dbe: DbEngine, job_id: int) -> dict[str, Any]:
    """What :func:`job_report` says of the job itself (no trials read): enough for a header."""
    with db.session_scope(dbe) as s:
        return _job_fields(db.get_job(s, job_id))


def _job_fields(job: db.Job) -> dict[str, Any]:
    """The job's own fields of a report."""
    return {
        "job_id": job.id,
        "state": job.state,
        "testbed": job.testbed.name,
        "simulated": job.testbed.kind == "sim",
        "fingerprint": dict(job.testbed.fingerprint),
        "workload": job.workload.name,
        "space": job.space_name,
        "objectives": list(job.objectives),
        "constraints": list(job.constraints),
        "engine": job.engine,
        "engine_params": dict(job.engine_params),
        "budget": job.budget,
        "repeats": job.repeats,
        "seed": job.seed,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "error": job.error,
        "stats": dict(job.stats or {}),
    }


def job_report(dbe: DbEngine, job_id: int) -> dict[str, Any]:
    """A plain-data account of a job (:func:`job_account`, without its trial rows)."""
    with db.session_scope(dbe) as s:
        return job_account(s, job_id)[0]


def job_account(s: Session, job_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A plain-data account of a job: settings, counts, best and default trials, knob changes,
    the recommendation against the default and the stock profiles; and its trials
    (:func:`trial_rows`). The one account of a job: the CLI prints it, the report is built
    from it, and the API serves it (``GET /v1/jobs/{id}/account``, and the best trial and
    baselines of ``GET /v1/jobs/{id}``).

    Raises:
        NotFoundError: no such job.
    """
    job = db.get_job(s, job_id)
    space = space_from_dict(dict(job.space_definition))
    goal = Goal.from_names(list(job.objectives), list(job.constraints))
    trials = db.job_trial_summaries(s, job_id)
    rows = trial_rows(trials)
    completed = [r for r in rows if r["state"] == "completed" and r["metrics"]]
    default = default_row(s, job, space, completed)
    known = baseline_rows(s, job, space, completed)
    recommended_id = job.best_trial_id
    recommended = next((t.number for t in trials if t.id == recommended_id), None)
    info = _job_fields(job)
    info["trials"] = len(rows)
    # Counted by how each trial was answered when the job asked for it, as the job's progress
    # counts them: a cached trial the final race measured again is still "from the cache".
    info["measured"] = sum(r["source"] == "measured" and r["state"] == "completed" and not r["cached_from"]
                           for r in rows)
    info["cached"] = sum(r["source"] == "cache" or bool(r["cached_from"]) for r in rows)
    info["failed"] = sum(r["state"] == "failed" for r in rows)
    # The job's recommendation (best lower confidence bound, see optimizer.racing) when it
    # has one; older or unfinished jobs: the best mean.
    best = next((r for r in completed if r["number"] == recommended), None)
    if best is None:
        best = max(completed, key=lambda r: goal.score(r["metrics"]), default=None)
    stats = info["stats"]
    info["recommendation"] = stats.get("recommendation")
    info["noise"] = stats.get("noise")
    info["runs"] = stats.get("runs")
    info["racing"] = bool((stats.get("options") or {}).get("racing"))
    info["race"] = stats.get("race")  # measurements of the final race, its cap, whether it was decided
    info["short_runs"] = short_runs(stats)
    info["bench_seconds"] = stats.get("bench_seconds")
    info["warm_start"] = stats.get("warm_start")
    info["engine_done_at"] = stats.get("engine_done_at")
    options = dict(stats.get("options") or {})
    info["time_limit_s"] = options.get("time_limit_s")
    info["patience"] = options.get("patience")
    info["elapsed_s"] = stats.get("elapsed_s")
    info["stop_reason"], info["stop_text"] = stop_reason_of(info["state"], stats)
    info["notices"] = list(stats.get("notices") or [])
    info["space_size"] = space.size()
    info["default_config"] = space.default().as_dict()
    info["front"] = [r for r in completed if r["number"] in {f["number"] for f in stats.get("front") or []}]
    info["best"] = best
    info["default"] = default
    # The recommendation against the default and each stock profile (TuneD, ESnet ...).
    info["baselines"] = compare_baselines(space, goal, stats, rows, best, known)
    if best is not None:
        info["best_feasible"] = goal.score(best["metrics"]).feasible
        best_cfg = dict(best["config"])
        info["changes"] = knob_changes(space, best_cfg)
        info["best_config"] = best_cfg
    return info, rows


def short_runs(stats: Mapping[str, Any]) -> dict[str, Any] | None:
    """How short runs first screened a job's configurations (``None`` when the job ran full runs only)."""
    options = dict(stats.get("options") or {})
    if not options.get("short_run_s"):
        return None
    return {"duration_s": float(options["short_run_s"]), "risk": float(options.get("short_risk", 0.05)),
            "runs": int(stats.get("short_runs", 0)), "screened": int(stats.get("screened", 0)),
            "promoted": int(stats.get("promoted", 0))}
