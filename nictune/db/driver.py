"""Hot read statements run on the database driver's cursor, compiled once per dialect.

``Connection.execute`` of a cached Core statement costs SQLAlchemy about 60 us (SQLite) to 85
us (PostgreSQL) of Python on top of the driver's own work, measured on a 2-core AMD EPYC
(2026-12-02): an execution context, a result object, row objects. A request that runs two
such statements spends a tenth of its CPU there. A :class:`DriverStatement` is a Core
statement compiled once per dialect and run on the DBAPI cursor: the same SQL, with rows as
plain tuples and each column's result processor applied where its type has one (chosen by the
driver's type code, as SQLAlchemy chooses it).

It runs inside the connection's transaction as ``Connection.execute`` would: it begins the
connection's transaction first when nothing has yet (a snapshot of :func:`connection_scope`,
or nothing sent in one without a snapshot). Driver errors come out as SQLAlchemy's
``DBAPIError``, and a lost connection is invalidated, so callers handle them as any other.
Parameters are converted by their types' bind processors; a statement with expanding (``IN``
list) or literal parameters does not qualify, which is checked when it is compiled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Select
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    #: Parameter names in their order, for a positional paramstyle (``None``: by name).
    names: tuple[str, ...] | None
    #: The parameters whose type converts a value for the driver, and how.
    processors: Mapping[str, Callable[[Any], Any]]


class DriverStatement:
    """A Core ``SELECT`` run on the driver's cursor; see the module's description."""

    __slots__ = ("_compiled", "_processors", "_statement")

    def __init__(self, statement: Select[*tuple[Any, ...]]) -> None:
        self._statement = statement
        self._compiled: dict[str, _Compiled] = {}
        #: Per dialect: each column's result processor (``None``: the driver's value as it is),
        #: or ``None`` when no column has one.
        self._processors: dict[str, tuple[Callable[[Any], Any] | None, ...] | None] = {}

    @property
    def statement(self) -> Select[*tuple[Any, ...]]:
        """The Core statement (what ``Connection.execute`` would run)."""
        return self._statement

    def _compile(self, dialect: Dialect) -> _Compiled:
        compiled = self._statement.compile(dialect=dialect)
        if compiled.literal_execute_params or compiled.post_compile_params:
            raise TypeError("a DriverStatement takes no expanding (IN) or literal parameters")
        processors = {name: processor for name, bind in compiled.binds.items()
                      if (processor := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None}
        names = tuple(compiled.positiontup or ()) if dialect.positional else None
        found = self._compiled[dialect.name] = _Compiled(compiled.string, names, processors)
        return found

    def _result_processors(self, dialect: Dialect, description: Sequence[Sequence[Any]]
                           ) -> tuple[Callable[[Any], Any] | None, ...] | None:
        columns = self._statement.selected_columns
        processors = tuple(column.type.dialect_impl(dialect).result_processor(dialect, entry[1])
                           for column, entry in zip(columns, description, strict=True))
        found = processors if any(p is not None for p in processors) else None
        self._processors[dialect.name] = found
        return found

    def rows(self, s: Session | Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The statement's rows for ``params`` (every parameter by name), as tuples; on a
        session, in its transaction.

        Raises:
            sqlalchemy.exc.DBAPIError: the driver's error, wrapped as ``Connection.execute``
                wraps it.
        """
        connection = s.connection() if isinstance(s, Session) else s
        dialect = connection.dialect
        compiled = self._compiled.get(dialect.name) or self._compile(dialect)
        if compiled.processors:
            params = {name: (value if (convert := compiled.processors.get(name)) is None or value is None
                             else convert(value)) for name, value in params.items()}
        args: Any = params if compiled.names is None else tuple(params[name] for name in compiled.names)
        if not connection.in_transaction():
            connection.begin()  # what Connection.execute's autobegin does
        pooled = connection.connection
        cursor = pooled.cursor()
        try:
            cursor.execute(compiled.sql, args)
            rows = cursor.fetchall()
            description = cursor.description
        except dialect.loaded_dbapi.Error as exc:
            lost = dialect.is_disconnect(exc, pooled.dbapi_connection, cursor)
            if lost:
                connection.invalidate(exc)
            raise DBAPIError.instance(compiled.sql, args, exc, dialect.loaded_dbapi.Error,
                                      connection_invalidated=lost, dialect=dialect) from exc
        finally:
            cursor.close()
        try:
            processors = self._processors[dialect.name]
        except KeyError:
            processors = self._result_processors(dialect, description)
        if processors is None:
            return cast("list[tuple[Any, ...]]", rows)  # the drivers' rows are tuples
        return [tuple(value if p is None else p(value) for p, value in zip(processors, row, strict=True))
                for row in rows]
