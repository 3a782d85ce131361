"""Queries behind the job endpoints: filtered pages, trial counts, completed summaries."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, String, bindparam, cast, func, select
from sqlalchemy.orm import Session, selectinload

from nictune.db import Configuration, Job, Testbed, Trial, Workload
from nictune.db.driver import DriverStatement
from nictune.db.types import as_utc


@dataclass
class TrialCounts:
    """Trials of one job by outcome."""

    measured: int = 0
    cached: int = 0
    failed: int = 0
    running: int = 0

    @property
    def done(self) -> int:
        """Trials that have ended, whatever their outcome."""
        return self.measured + self.cached + self.failed


@dataclass
class CompletedTrial:
    """What the job view needs of a completed trial."""

    number: int
    summary: dict[str, Any]
    seconds: float | None
    finished_at: datetime | None
    configuration_id: int


@dataclass
class JobFilters:
    """Filters of ``GET /v1/jobs``; ``None`` means any."""

    state: str | None = None
    testbed: str | None = None
    workload: str | None = None
    objective: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


def load_job(s: Session, job_id: int) -> Job | None:
    """The job with its testbed and workload, or ``None``."""
    return s.get(Job, job_id, options=[selectinload(Job.testbed), selectinload(Job.workload)])


@dataclass
class JobHeader:
    """What a trial page needs to know of its job."""

    kind: str
    state: str
    finished_at: datetime | None


_HEADER = DriverStatement(select(Testbed.kind, Job.state, Job.finished_at)
                          .join(Job, Job.testbed_id == Testbed.id).where(Job.id == bindparam("job_id")))


def job_header(s: Session | Connection, job_id: int) -> JobHeader | None:
    """The job's testbed kind (``sim`` ...), state and end, or ``None`` when there is no such job."""
    rows = _HEADER.rows(s, {"job_id": job_id})
    return JobHeader(*rows[0]) if rows else None


def jobs_page(s: Session, filters: JobFilters, limit: int, offset: int) -> tuple[list[Job], int]:
    """Jobs matching ``filters``, newest first, and how many match in all."""
    stmt = select(Job)
    if filters.testbed is not None:
        stmt = stmt.where(Job.testbed_id.in_(select(Testbed.id).where(Testbed.name == filters.testbed)))
    if filters.workload is not None:
        stmt = stmt.where(Job.workload_id.in_(select(Workload.id).where(Workload.name == filters.workload)))
    if filters.state is not None:
        stmt = stmt.where(Job.state == filters.state)
    if filters.created_after is not None:
        stmt = stmt.where(Job.created_at >= as_utc(filters.created_after))
    if filters.created_before is not None:
        stmt = stmt.where(Job.created_at < as_utc(filters.created_before))
    if filters.objective is not None:
        # JSON containment differs per backend: narrow with a portable LIKE on the JSON text.
        stmt = stmt.where(cast(Job.objectives, String).contains(json.dumps(filters.objective), autoescape=True))
    total = s.scalar(select(func.count()).select_from(stmt.subquery())) or 0
    page = stmt.options(selectinload(Job.testbed), selectinload(Job.workload)).order_by(Job.id.desc())
    return list(s.scalars(page.limit(limit).offset(offset))), int(total)


def trial_counts(s: Session, job_ids: Iterable[int]) -> dict[int, TrialCounts]:
    """Trials of each job by state and source (every id gets an entry)."""
    ids = list(job_ids)
    counts = {job_id: TrialCounts() for job_id in ids}
    if not ids:
        return counts
    stmt = (select(Trial.job_id, Trial.state, Trial.source, func.count())
            .where(Trial.job_id.in_(ids)).group_by(Trial.job_id, Trial.state, Trial.source))
    for job_id, state, source, n in s.execute(stmt):
        entry = counts[job_id]
        if state == "running":
            entry.running += n
        elif state == "failed":
            entry.failed += n
        elif source == "cache":
            entry.cached += n
        else:
            entry.measured += n
    return counts


def completed_trials(s: Session, job_id: int) -> list[CompletedTrial]:
    """Summaries of a job's completed trials, by number (no measurements loaded)."""
    stmt = (select(Trial.number, Trial.summary, Trial.started_at, Trial.finished_at, Trial.configuration_id)
            .where(Trial.job_id == job_id, Trial.state == "completed").order_by(Trial.number))
    out = []
    for number, summary, started, finished, config_id in s.execute(stmt):
        seconds = (finished - started).total_seconds() if finished is not None else None
        out.append(CompletedTrial(number, dict(summary or {}), seconds, finished, config_id))
    return out


def configuration(s: Session, configuration_id: int) -> Configuration | None:
    """The configuration row with this id."""
    return s.get(Configuration, configuration_id)
