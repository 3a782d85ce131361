"""Queries behind the history endpoints: testbeds and measurements (the best configurations
across jobs: :mod:`nictune.jobs.best`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from nictune.db import Job, Measurement, Testbed, Trial, Workload


def testbed_names(s: Session) -> list[str]:
    """Names of the testbeds the history knows."""
    return sorted(set(s.scalars(select(Testbed.name))))


def testbeds(s: Session, ids: Iterable[int]) -> dict[int, Testbed]:
    """Testbed rows by id."""
    wanted = list(set(ids))
    if not wanted:
        return {}
    return {t.id: t for t in s.scalars(select(Testbed).where(Testbed.id.in_(wanted)))}


def stored_testbeds(s: Session) -> list[tuple[Testbed, int]]:
    """Every stored testbed with its number of jobs."""
    jobs = dict(s.execute(select(Job.testbed_id, func.count()).group_by(Job.testbed_id)).all())
    return [(t, int(jobs.get(t.id, 0))) for t in s.scalars(select(Testbed).order_by(Testbed.id))]


def measurement_rows(s: Session, configuration_id: int) -> list[tuple[Measurement, Trial, Any, Any, Any]]:
    """Every measurement of one configuration with its trial, testbed name/kind and workload name."""
    stmt = (select(Measurement, Trial, Testbed.name, Testbed.kind, Workload.name)
            .join(Trial, Measurement.trial_id == Trial.id)
            .join(Testbed, Measurement.testbed_id == Testbed.id)
            .join(Workload, Measurement.workload_id == Workload.id)
            .where(Measurement.configuration_id == configuration_id, Measurement.short.is_(False))
            .order_by(Measurement.started_at, Measurement.id))
    return [(m, t, tb, kind, wl) for m, t, tb, kind, wl in s.execute(stmt)]
