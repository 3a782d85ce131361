"""Landmarks of a finished job's trials in the orders its pages read from an index.

A page of a job's trials best first (``sort=-throughput_gbps``) or by number is a range of an
index read in order. OFFSET alone steps over every entry before the page: 10,000 of them for
the middle of a 20,000-trial job. A landmark is the (value, number) of one trial at a known
position of that order: every :data:`LANDMARK_EVERY`-th trial, and the first without a figure
(they come last). A page then starts at the landmark at or before it and steps over fewer than
:data:`LANDMARK_EVERY` entries, however deep it is.

A job's landmarks are stored (``trial_landmarks``) in the transaction that finishes it, since
its trials never change afterwards, and dropped when it runs again (a resume) or loses trials
it left running. A finished job without stored ones (a database filled by other means) has
them computed when read (:func:`compute_landmarks`): the same figures, one pass over the job's
entries of each index.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, and_, bindparam, delete, func, insert, null, select
from sqlalchemy.orm import Session

from nictune.db.models import MAIN_METRICS, Trial, TrialLandmark

#: Trials between two landmarks: a page steps over fewer index entries than this.
LANDMARK_EVERY = 256
#: The orders of a job's trials that are an index's own order (by number either way, a main
#: metric descending with missing figures last): the orders landmarks are kept for.
INDEX_ORDERS = ("number", "-number", *(f"-{metric}" for metric in MAIN_METRICS))


@dataclass(frozen=True, slots=True)
class Landmarks:
    """Positions in one job's trials in one of :data:`INDEX_ORDERS`, and the (value, number) of
    the trial at each (the value is ``None`` for a trial without the figure, and for orders by
    number); ``total``: the job's trials in all."""

    total: int
    positions: list[int]
    keys: list[tuple[float | None, int]]


def _key(sort: str) -> Any:
    name = sort.lstrip("-")
    return Trial.number if name == "number" else getattr(Trial, name)


@functools.cache
def _every_nth(sort: str) -> Select[Any]:
    """Every ``every``-th trial of job ``job_id`` in ``sort`` order: (position, value, number);
    the value is NULL in orders by number."""
    key = _key(sort)
    # The index's order, the job being fixed: the page's order (numbers are unique in a job).
    by_number = sort.lstrip("-") == "number"
    order = [Trial.number.desc()] if sort == "-number" else (
        [Trial.number.asc()] if sort == "number" else [key.desc().nulls_last(), Trial.number.asc()])
    ranked = select((null() if by_number else key).label("value"), Trial.number.label("number"),
                    (func.row_number().over(order_by=order) - 1).label("position")
                    ).where(Trial.job_id == bindparam("job_id")).subquery()
    return (select(ranked.c.position, ranked.c.value, ranked.c.number)
            .where(ranked.c.position % bindparam("every") == 0).order_by(ranked.c.position))


def compute_landmarks(s: Session | Connection, job_id: int, sort: str, every: int = LANDMARK_EVERY) -> Landmarks:
    """The landmarks of one job's trials in ``sort`` (one of :data:`INDEX_ORDERS`), one every
    ``every`` trials and the first trial without a figure, read from the trials."""
    rows = [(int(p), None if v is None else float(v), int(n))
            for p, v, n in s.execute(_every_nth(sort), {"job_id": job_id, "every": every})]
    if sort.lstrip("-") == "number":
        total = int(s.scalar(select(func.count(Trial.id)).where(Trial.job_id == job_id)) or 0)
    else:
        key = _key(sort)
        total, counted, first_without = s.execute(
            select(func.count(Trial.id), func.count(key), func.min(Trial.number).filter(key.is_(None)))
            .where(Trial.job_id == job_id)).one()
        if first_without is not None and counted % every:  # not a landmark already
            rows.append((int(counted), None, int(first_without)))
            rows.sort()
    return Landmarks(int(total), [p for p, _, _ in rows], [(v, n) for _, v, n in rows])


def store_landmarks(s: Session, job_id: int) -> None:
    """Keep the landmarks of a job that has just finished, in each of :data:`INDEX_ORDERS`
    (those stored before are replaced)."""
    clear_landmarks(s, job_id)
    rows = []
    for sort in INDEX_ORDERS:
        marks = compute_landmarks(s, job_id, sort)
        rows += [{"job_id": job_id, "sort": sort, "position": p, "value": v, "number": n, "total": marks.total}
                 for p, (v, n) in zip(marks.positions, marks.keys, strict=True)]
    if rows:
        s.execute(insert(TrialLandmark), rows)


def clear_landmarks(s: Session | Connection, job_id: int) -> None:
    """Drop a job's stored landmarks (it runs again, or its trials change)."""
    s.execute(delete(TrialLandmark).where(TrialLandmark.job_id == job_id))


_STORED = (select(TrialLandmark.position, TrialLandmark.value, TrialLandmark.number, TrialLandmark.total)
           .where(and_(TrialLandmark.job_id == bindparam("job_id"), TrialLandmark.sort == bindparam("sort")))
           .order_by(TrialLandmark.position))


def stored_landmarks(s: Session | Connection, job_id: int, sort: str) -> Landmarks | None:
    """The landmarks stored for one job in ``sort`` order, ``None`` when none are."""
    rows = s.execute(_STORED, {"job_id": job_id, "sort": sort}).all()
    if not rows:
        return None
    return Landmarks(int(rows[0].total), [int(r.position) for r in rows],
                     [(None if r.value is None else float(r.value), int(r.number)) for r in rows])
