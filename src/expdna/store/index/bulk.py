"""Inserting many rows the fast way for each database: insert-if-absent, and plain tuples;
and the one way the store splits values into ``IN (...)`` lists and batches (:func:`chunks`).

PostgreSQL: one statement binding one array per column,
``INSERT ... SELECT * FROM unnest(%s::type[], ...) ON CONFLICT (...) DO NOTHING``. A
multi-row ``VALUES`` list (what SQLAlchemy's executemany becomes there) has a placeholder
per value, which psycopg parses one by one: for 500 runs of 21 columns that was ~5x slower
than the arrays. SQLite (the other dialect expdna opens): multi-row ``VALUES`` lists on the
driver's cursor (``RETURNING`` included), with values processed as SQLAlchemy would.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Connection, Dialect, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert

from expdna.store.index.chunks import CHUNK as CHUNK
from expdna.store.index.chunks import chunks as chunks
from expdna.store.index.models import Base

_INSERTS: dict[str, Callable[[Table], Any]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


def table_of(entity: type[Base]) -> Table:
    """The Core table of a model: statements run on connections, never ORM sessions."""
    return cast(Table, entity.__table__)


def insert_ignore(conn: Connection, entity: type[Base], keys: Sequence[str]) -> Insert:
    """``INSERT ... ON CONFLICT (keys) DO NOTHING`` for this connection's dialect, as a
    statement to add values or ``RETURNING`` to (:func:`insert_absent` is the fast path for
    many rows)."""
    make = _INSERTS[conn.dialect.name]
    stmt: Insert = make(table_of(entity)).on_conflict_do_nothing(index_elements=list(keys))
    return stmt


def _unnest(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    returning: Sequence[str],
) -> list[tuple[Any, ...]]:
    quote = conn.dialect.identifier_preparer.quote
    columns = list(rows[0])
    arrays = ", ".join(
        f"%s::{table.c[name].type.compile(dialect=conn.dialect)}[]" for name in columns
    )
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
        f"SELECT * FROM unnest({arrays}) "
        f"ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO NOTHING"
    )
    if returning:
        sql += f" RETURNING {', '.join(quote(c) for c in returning)}"
    values = tuple([row[name] for row in rows] for name in columns)
    result = conn.exec_driver_sql(sql, values)
    return [tuple(row) for row in result] if returning else []


@functools.lru_cache(maxsize=64)
def _processors(table: Table, columns: tuple[str, ...], dialect: Dialect) -> tuple[Any, ...]:
    """Each column's bind processor (how SQLAlchemy writes a datetime for SQLite)."""
    return tuple(
        table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns
    )


def _sqlite(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    returning: Sequence[str],
) -> list[tuple[Any, ...]]:
    # The driver directly, with SQLAlchemy's own value processing: its per-row parameter
    # handling cost more than the inserts themselves.
    quote = conn.dialect.identifier_preparer.quote
    columns = tuple(rows[0])
    processors = [
        (i, process)
        for i, process in enumerate(_processors(table, columns, conn.dialect))
        if process is not None
    ]
    get = operator.itemgetter(*columns)
    params = [get(row) if len(columns) > 1 else (get(row),) for row in rows]
    if processors:
        for position, values in enumerate(params):
            processed = list(values)
            for i, process in processors:
                processed[i] = process(processed[i])
            params[position] = tuple(processed)
    tail = f" ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO NOTHING"
    if returning:
        tail += f" RETURNING {', '.join(quote(c) for c in returning)}"
    names = ", ".join(quote(c) for c in columns)
    return _sqlite_values(conn, quote(table.name), names, params, tail, returns=bool(returning))


#: SQLite's default cap on the parameters of one statement (since 3.32; RETURNING, which
#: the store uses, needs 3.35): a build may lower it, which Python 3.11 can read.
_SQLITE_VARIABLES = 32766
#: sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER (Python 3.11+)
_LIMIT_VARIABLE_NUMBER = 9


def _sqlite_values(
    conn: Connection,
    table: str,
    columns: str,
    rows: Sequence[Sequence[Any]],
    tail: str = "",
    *,
    returns: bool = False,
) -> list[tuple[Any, ...]]:
    """Insert ``rows`` with multi-row ``VALUES`` lists, as many rows a statement as its
    parameters allow; ``returns``: the rows ``tail``'s ``RETURNING`` gives (in no set
    order). One statement for hundreds of rows: sqlite3's executemany prepares nothing
    twice but still steps the statement once a row, and returns no rows, so each
    ``RETURNING`` had a statement to itself."""
    driver = conn.connection.driver_connection
    assert driver is not None
    width = len(rows[0])
    limit = getattr(driver, "getlimit", None)  # Python 3.11
    variables = _SQLITE_VARIABLES if limit is None else limit(_LIMIT_VARIABLE_NUMBER)
    per = max(1, min(variables, _SQLITE_VARIABLES) // width)
    marks = "(" + ", ".join("?" * width) + ")"
    head = f"INSERT INTO {table} ({columns}) VALUES "
    found: list[tuple[Any, ...]] = []
    cursor = driver.cursor()
    try:
        for start in range(0, len(rows), per):
            part = rows[start : start + per]
            sql = head + ", ".join(itertools.repeat(marks, len(part))) + tail
            cursor.execute(sql, [value for row in part for value in row])
            if returns:
                found += [tuple(row) for row in cursor.fetchall()]
    finally:
        cursor.close()
    return found


_INSERT_ABSENT = {"postgresql": _unnest, "sqlite": _sqlite}


def insert_absent(
    conn: Connection,
    entity: type[Base],
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    returning: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """Insert ``rows`` (dicts with the same keys) except those whose ``keys`` exist;
    returns the ``returning`` columns of the rows inserted."""
    if not rows:
        return []
    return _INSERT_ABSENT[conn.dialect.name](conn, table_of(entity), rows, keys, returning)


def _sqlite_rows(conn: Connection, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    _sqlite_values(conn, table, columns, rows)


def _copy(conn: Connection, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    # PostgreSQL: COPY on the transaction's own connection, several times faster than
    # INSERT for thousands of small rows.
    driver = conn.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


_BULK = {"postgresql": _copy, "sqlite": _sqlite_rows}


def bulk_insert(
    conn: Connection, entity: type[Base], columns: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert plain tuples, bypassing SQLAlchemy's per-row parameter processing (with ~80
    fact rows a run, it was the largest cost of recording): multi-row VALUES, or COPY."""
    if not rows:
        return
    quote = conn.dialect.identifier_preparer.quote
    names = ", ".join(quote(c) for c in columns)
    _BULK[conn.dialect.name](conn, quote(table_of(entity).name), names, rows)
