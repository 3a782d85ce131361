"""The history's ranking sorts by sqrt(n) in SQL: a SQLite library built without its math
functions gets Python's on every connection nictune opens (pure logic: no database)."""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from nictune.db.session import _on_sqlite_connect


class _Cursor:
    def __init__(self, has_sqrt: bool) -> None:
        self.has_sqrt = has_sqrt

    def execute(self, statement: str) -> None:
        if statement.startswith("SELECT sqrt") and not self.has_sqrt:
            raise sqlite3.OperationalError("no such function: sqrt")

    def close(self) -> None:
        pass


class _Connection:
    def __init__(self, has_sqrt: bool) -> None:
        self.has_sqrt = has_sqrt
        self.isolation_level: Any = ""
        self.functions: dict[str, Any] = {}

    def cursor(self) -> _Cursor:
        return _Cursor(self.has_sqrt)

    def create_function(self, name: str, narg: int, func: Any, *, deterministic: bool = False) -> None:
        self.functions[name] = (narg, func, deterministic)


def test_a_library_without_sqrt_gets_pythons() -> None:
    bare = _Connection(has_sqrt=False)
    _on_sqlite_connect(bare, None)
    assert bare.functions == {"sqrt": (1, math.sqrt, True)}
    built_in = _Connection(has_sqrt=True)
    _on_sqlite_connect(built_in, None)
    assert built_in.functions == {}  # the library's own is kept


def test_this_librarys_connections_compute_sqrt() -> None:
    connection = sqlite3.connect(":memory:")
    _on_sqlite_connect(connection, None)
    assert connection.execute("SELECT sqrt(2.0)").fetchone()[0] == math.sqrt(2.0)
