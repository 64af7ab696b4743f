"""Inserting many rows the fast way for each database: insert-if-absent, and plain tuples;
and the one way the store splits values into ``IN (...)`` lists and batches (:func:`chunks`).

PostgreSQL: one statement binding one array per column,
``INSERT ... SELECT * FROM unnest(%s::type[], ...) ON CONFLICT (...) DO NOTHING``. A
multi-row ``VALUES`` list (what SQLAlchemy's executemany becomes there) has a placeholder
per value, which psycopg parses one by one: for 500 runs of 21 columns that was ~5x slower
than the arrays. SQLite (the other dialect expdna opens): the driver's executemany, or one
``INSERT ... RETURNING`` a row, with values processed as SQLAlchemy would.
"""

from __future__ import annotations

import functools
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
    # handling for executemany with RETURNING cost more than the inserts themselves.
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
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join('?' for _ in columns)}) "
        f"ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO NOTHING"
    )
    if not returning:
        conn.exec_driver_sql(sql, params)
        return []
    # sqlite3's executemany returns no rows: one execute a row, still a C loop mostly.
    sql += f" RETURNING {', '.join(quote(c) for c in returning)}"
    driver = conn.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        found = (cursor.execute(sql, values).fetchone() for values in params)
        return [tuple(row) for row in found if row is not None]
    finally:
        cursor.close()


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


_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def _executemany(conn: Connection, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    mark = _MARKS[conn.dialect.paramstyle]
    marks = ", ".join(mark for _ in rows[0])
    conn.exec_driver_sql(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def _copy(conn: Connection, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    # PostgreSQL: COPY on the transaction's own connection, several times faster than
    # INSERT for thousands of small rows.
    driver = conn.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


_BULK = {"postgresql": _copy}


def bulk_insert(
    conn: Connection, entity: type[Base], columns: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert plain tuples, bypassing SQLAlchemy's per-row parameter processing (with ~80
    fact rows a run, it was the largest cost of recording): executemany, or COPY."""
    if not rows:
        return
    quote = conn.dialect.identifier_preparer.quote
    names = ", ".join(quote(c) for c in columns)
    _BULK.get(conn.dialect.name, _executemany)(conn, quote(table_of(entity).name), names, rows)
