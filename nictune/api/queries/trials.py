"""Queries behind trial lists: a job's trials and the history of trials across jobs.

Metrics live in each trial's JSON summary; the main metrics are also columns of the trial
(indexed with the job), so sorting by one reads an index. Sorting by another metric
extracts it in SQL (``json_extract`` on SQLite, ``#>>`` on PostgreSQL), so only one page
is ever loaded.
"""

from __future__ import annotations

import base64
import bisect
import functools
import json
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import orjson
from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Select,
    Text,
    and_,
    bindparam,
    case,
    cast,
    func,
    or_,
    select,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import UnaryExpression

from nictune.db import MAIN_METRICS, Configuration, Job, Testbed, Trial, TrialItem, Workload
from nictune.db.driver import DriverStatement
from nictune.db.landmarks import INDEX_ORDERS, Landmarks, compute_landmarks, stored_landmarks
from nictune.db.types import as_utc
from nictune.errors import InvalidInputError

_S = TypeVar("_S", bound=Select)


@dataclass
class TrialFilters:
    """Filters of a trial list; ``None`` means any."""

    job_id: int | None = None
    state: str | None = None
    source: str | None = None
    testbed: str | None = None
    workload: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    #: knob -> acceptable values (already parsed by the knob: int, float, bool or str).
    knobs: Mapping[str, Sequence[Any]] = field(default_factory=dict)


@dataclass(slots=True)
class TrialRow:
    """A trial with what its view needs, read with Core (no ORM objects)."""

    id: int
    job_id: int
    number: int
    state: str
    source: str
    error: str | None
    started_at: datetime
    finished_at: datetime | None
    #: The trial's JSON summary (metrics, spread, score, repeats ...), decoded; ``{}`` for none.
    summary: dict[str, Any]
    #: The main metrics' columns (what a keyset cursor holds).
    main: dict[str, float | None]
    config_hash: str
    #: The configuration's canonical JSON, as stored.
    config_json: str
    #: The job's testbed and workload (``None`` when read for one job's page, which knows them).
    testbed: str | None
    testbed_kind: str | None
    workload: str | None


#: The columns of a :class:`TrialRow`, in its order (the summary as its JSON text: decoded here,
#: several times faster than by the JSON type).
_ROW_COLUMNS = (Trial.id, Trial.job_id, Trial.number, Trial.state, Trial.source, Trial.error, Trial.started_at,
                Trial.finished_at, cast(Trial.summary, Text), *(getattr(Trial, m) for m in MAIN_METRICS),
                Configuration.hash, Configuration.canonical, Testbed.name, Testbed.kind, Workload.name)
_N_MAIN = len(MAIN_METRICS)


def _decode(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN written by a version before SafeJSON
        value = json.loads(text)
    return value if isinstance(value, dict) else {}


def _row(r: Sequence[Any]) -> TrialRow:
    rest = 9 + _N_MAIN
    # A row of _BY_IDS_UNNAMED ends at the configuration: no testbed, kind or workload.
    testbed, kind, workload = r[rest + 2:] or (None, None, None)
    return TrialRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], _decode(r[8]),
                    dict(zip(MAIN_METRICS, r[9:rest], strict=True)), r[rest], r[rest + 1], testbed, kind, workload)


def _metric(name: str) -> ColumnElement[Any]:
    if name in MAIN_METRICS:
        column: ColumnElement[Any] = getattr(Trial, name).expression
        return column
    return Trial.summary[("metrics", name)].as_float()


def _order(key: str) -> list[UnaryExpression[Any]]:
    descending = key.startswith("-")
    name = key.lstrip("-")
    columns: list[ColumnElement[Any]]
    if name == "number":
        columns = [Trial.number.expression]
    elif name in ("started_at", "finished_at"):
        columns = [getattr(Trial, name).expression]
    elif name == "score":
        feasible = Trial.summary[("score", "feasible")].as_boolean()
        value = Trial.summary[("score", "value")].as_float()
        violation = Trial.summary[("score", "violation")].as_float()
        # Score order: feasible above infeasible; feasible by value, infeasible by less violation.
        columns = [case((feasible, 1), else_=0), case((feasible, value), else_=-violation)]
    else:
        columns = [_metric(name)]
    if name in ("number", "started_at"):  # never NULL: a plain order, which an index gives either way
        ordered = [c.desc() if descending else c.asc() for c in columns]
    else:
        ordered = [(c.desc() if descending else c.asc()).nulls_last() for c in columns]
    return [*ordered, Trial.job_id.asc(), Trial.number.asc()]


def _knob_clause(name: str, values: Sequence[Any]) -> ColumnElement[bool]:
    # Canonical JSON has sorted keys and no spaces, so '"mtu":9000' followed by ',' or '}'
    # matches exactly that knob and value, on every backend.
    options = []
    for value in values:
        token = json.dumps({name: value}, sort_keys=True, separators=(",", ":"))[1:-1]
        options.append(or_(Configuration.canonical.contains(token + ",", autoescape=True),
                           Configuration.canonical.contains(token + "}", autoescape=True)))
    return or_(*options)


def _filtered(stmt: _S, f: TrialFilters) -> _S:
    conditions: list[ColumnElement[bool]] = []
    if f.job_id is not None:
        conditions.append(Trial.job_id == f.job_id)
    if f.state is not None:
        conditions.append(Trial.state == f.state)
    if f.source is not None:
        conditions.append(Trial.source == f.source)
    if f.testbed is not None:
        conditions.append(Testbed.name == f.testbed)
    if f.workload is not None:
        conditions.append(Workload.name == f.workload)
    if f.since is not None:
        conditions.append(Trial.finished_at >= as_utc(f.since))
    if f.until is not None:
        conditions.append(Trial.finished_at < as_utc(f.until))
    conditions.extend(_knob_clause(name, values) for name, values in f.knobs.items())
    return stmt.where(and_(*conditions)) if conditions else stmt


def _joined(stmt: _S) -> _S:
    return (stmt.join(Configuration, Trial.configuration_id == Configuration.id)
            .join(Job, Trial.job_id == Job.id)
            .join(Testbed, Job.testbed_id == Testbed.id)
            .join(Workload, Job.workload_id == Workload.id))


#: Sort keys a job's page reads from an index of ``trials`` (without the table).
INDEXED_SORTS = frozenset({"number", *MAIN_METRICS})
#: Sort keys whose order is an index's own order (number either way, a main metric descending
#: with missing figures last): a job's page at any depth is a range of it, without a sort.
INDEX_ORDERED = frozenset(INDEX_ORDERS)


def _job_only(filters: TrialFilters) -> bool:
    return (filters.job_id is not None and filters.testbed is None and filters.workload is None
            and filters.since is None and filters.until is None and not filters.knobs)


def trials_page(s: Session | Connection, filters: TrialFilters, sort: str, limit: int,
                offset: int) -> tuple[list[TrialRow], int]:
    """One page of trials matching ``filters`` in ``sort`` order, and how many match in all."""
    if _job_only(filters):
        # One job's trials: count and order them on ``trials`` alone, then load the page.
        return trials_by_ids(s, page_ids(s, filters, sort, limit, offset)), trial_count(s, filters)
    total = s.scalar(_filtered(_joined(select(func.count(Trial.id))), filters)) or 0
    stmt = _filtered(_joined(select(*_ROW_COLUMNS)), filters)
    rows = s.execute(stmt.order_by(*_order(sort)).limit(limit).offset(offset))
    return [_row(r) for r in rows], int(total)


# The statements a job's trial page runs on every request are built once per shape, with bind
# parameters for the values: building one costs more than SQLite takes to run it.
@functools.cache
def _job_trials(what: str, sort: str, state: bool, source: bool) -> Select[Any]:
    """``what`` (the ``ids`` of a page in ``sort`` order, all of them in ``order``, or their
    ``count``) of one job's trials, with parameters ``job_id`` (and ``state``, ``source``;
    ``limit`` and ``offset`` for a page)."""
    stmt: Select[Any] = select(func.count(Trial.id)) if what == "count" else select(Trial.id)
    stmt = stmt.where(Trial.job_id == bindparam("job_id"))
    if state:
        stmt = stmt.where(Trial.state == bindparam("state"))
    if source:
        stmt = stmt.where(Trial.source == bindparam("source"))
    if what != "count":
        stmt = stmt.order_by(*_order(sort))
    if what == "ids":
        stmt = stmt.limit(bindparam("limit")).offset(bindparam("offset"))
    return stmt


def _job_params(filters: TrialFilters) -> dict[str, Any]:
    return {"job_id": filters.job_id, "state": filters.state, "source": filters.source}


def trial_count(s: Session | Connection, filters: TrialFilters) -> int:
    """How many trials of one job match ``filters`` (job, state and source only)."""
    stmt = _job_trials("count", "", filters.state is not None, filters.source is not None)
    return int(s.scalar(stmt, _job_params(filters)) or 0)


def page_ids(s: Session | Connection, filters: TrialFilters, sort: str, limit: int, offset: int) -> list[int]:
    """The ids of one page of one job's trials (job, state and source filters only)."""
    stmt = _job_trials("ids", sort, filters.state is not None, filters.source is not None)
    return list(s.scalars(stmt, {**_job_params(filters), "limit": limit, "offset": offset}))


def encode_cursor(sort: str, trial: TrialRow) -> str:
    """The keyset cursor after ``trial`` in ``sort`` order (an indexed sort)."""
    name = sort.lstrip("-")
    value = None if name == "number" else trial.main[name]
    raw = json.dumps([sort, value, trial.number], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, sort: str) -> tuple[float | None, int]:
    """The (value, number) a cursor of :func:`encode_cursor` stands for.

    Raises:
        InvalidInputError: not such a cursor, or one of another sort order (field ``after``).
    """
    wrong = InvalidInputError("'after' is not a cursor of this listing; use the 'next' link of the page before "
                              "(with the same sort)", field="after",
                              allowed="the after= value of a page's next link, or empty for the first page")
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):
        raise wrong from None
    if not (isinstance(decoded, list) and len(decoded) == 3 and decoded[0] == sort):
        raise wrong
    _, value, number = decoded
    if isinstance(number, bool) or not isinstance(number, int) or isinstance(value, bool) or not (
            value is None or isinstance(value, int | float)):
        raise wrong
    return (None if value is None else float(value)), number


def ids_after(s: Session | Connection, filters: TrialFilters, sort: str, after: tuple[float | None, int] | None,
              limit: int) -> list[int]:
    """Up to ``limit`` ids of one job's trials following ``after`` (a decoded cursor; ``None``:
    from the first) in ``sort`` order, an indexed sort: a range of the index, whatever the depth."""
    if after is None:
        return page_ids(s, filters, sort, limit, 0)
    return [i for i, _ in _range(s, filters, sort, after, limit, skip=0, inclusive=False, items=False)]


@functools.cache
def _job_range(sort: str, part: str, inclusive: bool, state: bool, source: bool, items: bool) -> DriverStatement:
    """The ids of one job's trials from a position on in ``sort`` order (an indexed sort), with
    parameters ``job_id`` (``state``, ``source``), ``value`` and ``number`` (the position),
    ``limit`` and ``offset``; with ``items``, each with its stored page item (NULL for none).
    ``part``: ``number`` (a sort by number), ``figures`` (the trials with a figure from
    ``value``/``number`` on) or ``tail`` (those without one, by number from ``number`` on)."""
    name, descending = sort.lstrip("-"), sort.startswith("-")
    key = Trial.number if name == "number" else getattr(Trial, name)
    stmt: Select[Any] = select(Trial.id, key.label("key"), Trial.number.label("n")) if items else select(Trial.id)
    stmt = stmt.where(Trial.job_id == bindparam("job_id"))
    if state:
        stmt = stmt.where(Trial.state == bindparam("state"))
    if source:
        stmt = stmt.where(Trial.source == bindparam("source"))
    number: Any = bindparam("number")
    later = Trial.number >= number if inclusive else Trial.number > number
    if part == "number":
        earlier = Trial.number <= number if inclusive else Trial.number < number
        stmt = stmt.where(earlier if descending else later).order_by(*_order(sort))
    elif part == "figures":
        value = bindparam("value", type_=Float())
        if descending:
            stmt = stmt.where(key <= value, or_(key < value, later))
        else:
            stmt = stmt.where(key >= value, or_(key > value, later))
        stmt = stmt.order_by(*_order(sort))
    else:
        stmt = stmt.where(key.is_(None), later).order_by(Trial.number)
    stmt = stmt.limit(bindparam("limit")).offset(bindparam("offset"))
    if not items:
        return DriverStatement(stmt)
    # The page's trials first, then their items: no item is read for a trial OFFSET skips. The
    # rows come with their sort key and number, put in order by the caller (no sort of 50 rows
    # of items in the database).
    page = stmt.subquery()
    return DriverStatement(select(page.c.id, TrialItem.item, page.c.key, page.c.n).outerjoin(
        TrialItem, TrialItem.trial_id == page.c.id))


def _range(s: Session | Connection, filters: TrialFilters, sort: str, start: tuple[float | None, int],
           limit: int, *, skip: int, inclusive: bool, items: bool) -> list[tuple[int, str | None]]:
    """Up to ``limit`` of one job's trials in ``sort`` order (an indexed sort) from the position
    ``start`` (value, number) on, ``inclusive`` of it or not, the first ``skip`` left out: (id,
    stored page item, read in the same statement with ``items``, else ``None``). With a figure
    in ``start``, ``skip`` must stay among the trials with a figure (those without one then
    follow from their first)."""
    value, number = start
    flags = (filters.state is not None, filters.source is not None, items)
    params = {**_job_params(filters), "number": number, "limit": limit, "offset": skip}

    descending = sort.startswith("-")

    def run(part: str, values: dict[str, Any]) -> list[tuple[int, str | None]]:
        rows = _job_range(sort, part, inclusive, *flags).rows(s, values)
        if not items:
            return [(r[0], None) for r in rows]
        if part == "tail":  # by number; else by key (descending or not), then number
            rows.sort(key=lambda r: r[3])
        else:
            rows.sort(key=lambda r: (-r[2] if descending else r[2], r[3]))
        return [(r[0], r[1]) for r in rows]

    if sort.lstrip("-") == "number":
        return run("number", params)
    found: list[tuple[int, str | None]] = []
    if value is not None:
        found = run("figures", {**params, "value": value})
        params.update(number=-1, offset=0)
        inclusive = False
    if len(found) < limit:
        params["limit"] = limit - len(found)
        found += run("tail", params)
    return found


def job_landmarks(s: Session | Connection, job_id: int, sort: str) -> Landmarks:
    """The landmarks of a finished job's trials in ``sort`` order (one of :data:`INDEX_ORDERED`):
    those stored when it finished, else computed from its trials."""
    stored = stored_landmarks(s, job_id, sort)
    return stored if stored is not None else compute_landmarks(s, job_id, sort)


def landmark_page(s: Session | Connection, job_id: int, sort: str, marks: Landmarks, limit: int,
                  offset: int) -> list[tuple[int, str | None]]:
    """One page of one job's trials in ``sort`` order (one of :data:`INDEX_ORDERED`), from the
    landmark at or before ``offset``: the trials of :func:`page_ids` (no other filter), each
    with its stored page item (``None``: it has none), in one statement."""
    if offset >= marks.total:
        return []
    i = bisect.bisect_right(marks.positions, offset) - 1
    return _range(s, TrialFilters(job_id=job_id), sort, marks.keys[i], limit, skip=offset - marks.positions[i],
                  inclusive=True, items=True)


def ordered_ids(s: Session | Connection, filters: TrialFilters, sort: str) -> array[int]:
    """The ids of every trial of one job matching ``filters`` (job, state and source only), in
    ``sort`` order: what a finished job's pages are cut from (a compact array: 8 bytes an id)."""
    stmt = _job_trials("order", sort, filters.state is not None, filters.source is not None)
    return array("q", s.scalars(stmt, _job_params(filters)))


_BY_IDS = _joined(select(*_ROW_COLUMNS)).where(Trial.id.in_(bindparam("ids", expanding=True)))
#: The same without the job's testbed and workload: two tables, not five (PostgreSQL plans it in
#: a fraction of the time).
_BY_IDS_UNNAMED = (select(*_ROW_COLUMNS[:-3]).join(Configuration, Trial.configuration_id == Configuration.id)
                   .where(Trial.id.in_(bindparam("ids", expanding=True))))


def trials_by_ids(s: Session | Connection, ids: Sequence[int], *, named: bool = True) -> list[TrialRow]:
    """The trials with these ids, in the order given; ``named=False`` leaves out their testbed
    and workload (one job's page, which has them from the job)."""
    if not ids:
        return []
    stmt = _BY_IDS if named else _BY_IDS_UNNAMED
    found = {row.id: row for row in map(_row, s.execute(stmt, {"ids": list(ids)}))}
    return [found[i] for i in ids if i in found]


@functools.cache
def _items_sql(count: int, paramstyle: str) -> str:
    mark = "?" if paramstyle == "qmark" else "%s"
    return f"SELECT trial_id, item FROM trial_items WHERE trial_id IN ({', '.join([mark] * count)})"


def stored_items(s: Connection, ids: Sequence[int]) -> dict[int, str]:
    """Trial id -> its stored page item (``trial_items``) for those of these trials that have
    one (a finished trial). One statement on the driver: the ids are integers of this
    service's own reads, passed as parameters."""
    if not ids:
        return {}
    params = tuple(int(i) for i in ids)
    return {int(row[0]): row[1] for row in s.exec_driver_sql(_items_sql(len(params), s.dialect.paramstyle), params)}


def space_definitions(s: Session, testbed: str | None, workload: str | None) -> list[dict[str, Any]]:
    """The distinct search-space definitions of the jobs in a context (for knob filters)."""
    stmt = select(Job.space_name, Job.space_definition)
    if testbed is not None:
        stmt = stmt.join(Testbed, Job.testbed_id == Testbed.id).where(Testbed.name == testbed)
    if workload is not None:
        stmt = stmt.join(Workload, Job.workload_id == Workload.id).where(Workload.name == workload)
    seen: dict[str, dict[str, Any]] = {}
    # No DISTINCT: PostgreSQL has no equality operator for json.
    for _name, definition in s.execute(stmt):
        seen.setdefault(json.dumps(definition, sort_keys=True), dict(definition))
    return list(seen.values())
