"""The per-configuration statistics table (:data:`~nictune.db.models.config_stats`): kept in
the transaction that records measurements, recomputed for the keys a deletion touches; and
the history's version (:data:`~nictune.db.models.history_version`), counted up by the same
transactions.

A row sums the full-length (not short) measurements of completed, measured trials of one
configuration on one testbed fingerprint under one workload: what the history's best
configurations are ranked on (:func:`nictune.db.best.configuration_means`). Trials
answered from the cache add nothing (their numbers belong to the trial that measured them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Connection,
    CursorResult,
    case,
    delete,
    distinct,
    func,
    insert,
    null,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from nictune.db.models import (
    MAIN_METRICS,
    Measurement,
    Trial,
    TrialSource,
    TrialState,
    config_stats,
    history_version,
    stat_column,
)

#: Squares below this count as 0, above ``1 / TINY`` they are left out (PostgreSQL raises on
#: float underflow and overflow).
TINY = 1e-100
_KEY = ("testbed_id", "workload_id", "configuration_id")
#: Keys per ``IN`` list (SQLite's bound-parameter limit is far above; lists stay short).
_CHUNK = 500


def _square(value: float) -> float | None:
    magnitude = abs(value)
    if magnitude < TINY:
        return 0.0
    if magnitude > 1 / TINY:
        return None
    return value * value


def square_expression(column: Any) -> ColumnElement[Any]:
    """``column * column`` as :func:`_square` computes it, in SQL."""
    magnitude = func.abs(column)
    return case((magnitude < TINY, 0.0), (magnitude > 1 / TINY, null()), else_=column * column)


def _row(key: tuple[int, int, int], measurements: Sequence[Measurement], new_trial: bool) -> dict[str, Any]:
    row: dict[str, Any] = dict(zip(_KEY, key, strict=True))
    row["measurements"] = len(measurements)
    row["trials"] = 1 if new_trial else 0
    row["last_measured_at"] = max(m.finished_at for m in measurements)
    for metric in MAIN_METRICS:
        values = [float(v) for v in (getattr(m, metric) for m in measurements) if v is not None]
        squares = [sq for sq in map(_square, values) if sq is not None]
        row[stat_column(metric, "n")] = len(values)
        row[stat_column(metric, "sum")] = sum(values, 0.0)
        row[stat_column(metric, "sumsq")] = sum(squares, 0.0)
        row[stat_column(metric, "nsq")] = len(squares)
    return row


def _upsert(s: Session, row: dict[str, Any]) -> None:
    dialect = s.get_bind().dialect.name
    stmt: Any
    if dialect == "postgresql":
        stmt = postgresql.insert(config_stats).values(**row)
    elif dialect == "sqlite":
        stmt = sqlite.insert(config_stats).values(**row)
    else:  # pragma: no cover - nictune opens SQLite and PostgreSQL only
        raise NotImplementedError(dialect)
    new = stmt.excluded
    updates: dict[str, Any] = {name: config_stats.c[name] + new[name] for name in row if name not in _KEY}
    last = config_stats.c.last_measured_at
    updates["last_measured_at"] = case((last.is_(None), new.last_measured_at),
                                       (new.last_measured_at > last, new.last_measured_at), else_=last)
    s.execute(stmt.on_conflict_do_update(index_elements=list(_KEY), set_=updates))


_VERSION = select(history_version.c.version).where(history_version.c.id == 1)


def version(connection: Connection | Session) -> int:
    """The history's version (0 in a database that has no row): the same number means the same
    measurements and the same :data:`config_stats`."""
    return int(connection.scalar(_VERSION) or 0)


def count_change(s: Session) -> None:
    """Count the history's version up, in the transaction that changes the measurements. On
    PostgreSQL the row stays locked until that transaction ends, so concurrent writers count
    up in the order they commit."""
    counted = s.execute(update(history_version).where(history_version.c.id == 1)
                        .values(version=history_version.c.version + 1))
    if not cast(CursorResult[Any], counted).rowcount:  # the row was deleted behind nictune's back
        s.execute(insert(history_version).values(id=1, version=1))


def record(s: Session, trial: Trial, measurements: Sequence[Measurement], *, counted_before: bool) -> None:
    """Add ``measurements`` (just stored for the completed, measured ``trial``) to the table,
    and count the history's version up (:func:`count_change`) when there are any.

    Short screening runs are skipped. ``counted_before``: the trial already has counted
    measurements (it is not a new trial for its row).
    """
    if measurements:
        count_change(s)
    if trial.state != TrialState.COMPLETED or trial.source != TrialSource.MEASURED:
        return
    full = [m for m in measurements if not m.short]
    if not full:
        return
    groups: dict[tuple[int, int, int], list[Measurement]] = {}
    for m in full:
        groups.setdefault((m.testbed_id, m.workload_id, m.configuration_id), []).append(m)
    for key, rows in groups.items():
        _upsert(s, _row(key, rows, new_trial=not counted_before))


def aggregate_select(configuration_ids: Sequence[int] | None = None) -> Any:
    """The table's rows computed from the measurements (one scan), optionally for some configurations."""
    columns: list[Any] = [Measurement.testbed_id, Measurement.workload_id, Measurement.configuration_id,
                          func.count(Measurement.id), func.count(distinct(Measurement.trial_id)),
                          func.max(Measurement.finished_at)]
    for metric in MAIN_METRICS:
        column = getattr(Measurement, metric)
        square = square_expression(column)
        columns += [func.count(column), func.coalesce(func.sum(column), 0.0),
                    func.coalesce(func.sum(square), 0.0), func.count(square)]
    stmt = (select(*columns).join(Trial, Measurement.trial_id == Trial.id)
            .where(Trial.state == TrialState.COMPLETED.value, Trial.source == TrialSource.MEASURED.value,
                   Measurement.short.is_(False)))
    if configuration_ids is not None:
        stmt = stmt.where(Measurement.configuration_id.in_(list(configuration_ids)))
    return stmt.group_by(Measurement.testbed_id, Measurement.workload_id, Measurement.configuration_id)


def _names() -> list[str]:
    return [*_KEY, "measurements", "trials", "last_measured_at",
            *(stat_column(m, x) for m in MAIN_METRICS for x in ("n", "sum", "sumsq", "nsq"))]


def recompute(s: Session, configuration_ids: Iterable[int] | None = None) -> None:
    """Rebuild the rows of these configurations (all rows for ``None``) from the measurements.

    For deletions (a subtraction would leave rounding behind and cannot undo a maximum) and
    for rows written behind the repository's back (bulk loads). Counts the history's version
    up (:func:`count_change`).
    """
    count_change(s)
    if configuration_ids is None:
        s.execute(delete(config_stats))
        s.execute(insert(config_stats).from_select(_names(), aggregate_select()))
        return
    wanted = sorted(set(configuration_ids))
    for i in range(0, len(wanted), _CHUNK):
        chunk = wanted[i:i + _CHUNK]
        s.execute(delete(config_stats).where(config_stats.c.configuration_id.in_(chunk)))
        s.execute(insert(config_stats).from_select(_names(), aggregate_select(chunk)))
