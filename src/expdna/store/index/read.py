"""The one read layer: every query of the index is SQL text with named parameters, run on
the standard library's ``sqlite3`` for an SQLite index and through SQLAlchemy for
PostgreSQL (and inside the write paths' own SQLAlchemy transactions).

A read command is a whole process, and importing SQLAlchemy and alembic cost several times
what its queries do (``benchmarks/cli_bench.py``). So the queries are written once, as SQL
both databases run, and a :class:`Reader` executes them: :class:`SqliteReader` on a
``sqlite3`` connection opened read-only (:mod:`expdna.store.index.readonly`: ``mode=ro``,
no file created, ``immutable`` where nobody can write), :class:`EngineReader` on a
SQLAlchemy connection. Where reads come from is an :class:`IndexReads`:
:class:`SqliteFile` (a local SQLite index) or :class:`EngineReads` (an open index engine).

Parameters are ``:name`` placeholders. A list or tuple value expands to ``(:name__0, ...)``
for ``IN`` (an empty one to ``(NULL)``, which matches nothing). A datetime is bound on
SQLite as SQLAlchemy stores it there (naive UTC text with microseconds), so comparisons
agree with the stored values; read back from SQLite a time is that text, and :func:`when`
turns either form into a datetime.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from expdna.filesystems import network_fstype
from expdna.store.errors import IndexUnavailableError, NetworkFilesystemError
from expdna.store.index.readonly import read_only_uri

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from expdna.store.index.engine import Index

__all__ = [
    "BUSY_TIMEOUT_S",
    "EngineReader",
    "EngineReads",
    "IndexReads",
    "Reader",
    "Row",
    "SqliteFile",
    "SqliteReader",
    "expand",
    "local_sqlite",
    "reader_of",
    "when",
]

BUSY_TIMEOUT_S = 60.0
Row = tuple[Any, ...]
Params = Mapping[str, Any]
_PARAM = re.compile(r":(\w+)")


def local_sqlite(database: Path, mounts_file: Path) -> None:
    """Refuse an SQLite index on a network filesystem (its WAL needs local locks)."""
    fstype = network_fstype(database.parent, mounts_file)
    if fstype is not None:
        raise NetworkFilesystemError(
            f"{database.parent} is on a network filesystem ({fstype}), where SQLite's "
            "WAL index cannot work: keep the store there but put the index in "
            "PostgreSQL with --index-url postgresql+psycopg://USER@HOST/DB "
            "(or EXPDNA_INDEX_URL)"
        )


def sqlite_time(moment: datetime) -> str:
    """``moment`` as SQLAlchemy's SQLite ``DateTime`` stores it (its fields, naive)."""
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond:06d}"


def when(value: str | datetime) -> datetime:
    """A stored time as a naive UTC datetime, from SQLite's text or PostgreSQL's value."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def expand(sql: str, params: Params | None, dialect: str) -> tuple[str, dict[str, Any]]:
    """``sql`` and ``params`` as the driver takes them: list values expanded for ``IN``,
    datetimes as text on SQLite."""
    bound: dict[str, Any] = {}
    lists: dict[str, Sequence[Any]] = {}
    for name, value in (params or {}).items():
        if isinstance(value, list | tuple):
            lists[name] = value
            bound.update({f"{name}__{i}": item for i, item in enumerate(value)})
        else:
            bound[name] = value
    if dialect == "sqlite":
        bound = {k: sqlite_time(v) if isinstance(v, datetime) else v for k, v in bound.items()}
    if lists:

        def placeholders(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in lists:
                return match.group(0)
            values = lists[name]
            if not values:
                return "(NULL)"
            return "(" + ", ".join(f":{name}__{i}" for i in range(len(values))) + ")"

        sql = _PARAM.sub(placeholders, sql)
    return sql, bound


class Reader:
    """One read transaction on the index: run SQL text, get plain tuples."""

    dialect = ""

    def _execute(self, sql: str, params: dict[str, Any]) -> Iterable[Row]:
        raise NotImplementedError

    def _batches(self, sql: str, params: dict[str, Any], size: int) -> Iterator[list[Row]]:
        raise NotImplementedError

    def rows(self, sql: str, params: Params | None = None) -> list[Row]:
        return [tuple(row) for row in self._execute(*expand(sql, params, self.dialect))]

    def first(self, sql: str, params: Params | None = None) -> Row | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    def scalar(self, sql: str, params: Params | None = None) -> Any:
        row = self.first(sql, params)
        return None if row is None else row[0]

    def column(self, sql: str, params: Params | None = None) -> list[Any]:
        return [row[0] for row in self.rows(sql, params)]

    def batches(self, sql: str, params: Params | None, size: int) -> Iterator[list[Row]]:
        """The rows in lists of at most ``size``, streamed: a large answer is never held."""
        return self._batches(*expand(sql, params, self.dialect), size)


class SqliteReader(Reader):
    """A reader on a standard-library ``sqlite3`` connection."""

    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _execute(self, sql: str, params: dict[str, Any]) -> Iterable[Row]:
        return self.conn.execute(sql, params).fetchall()

    def _batches(self, sql: str, params: dict[str, Any], size: int) -> Iterator[list[Row]]:
        cursor = self.conn.execute(sql, params)
        while rows := cursor.fetchmany(size):
            yield rows


class EngineReader(Reader):
    """A reader on a SQLAlchemy connection (PostgreSQL, or a write path's transaction)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.dialect = conn.dialect.name

    def _execute(self, sql: str, params: dict[str, Any]) -> Iterable[Row]:
        from sqlalchemy import text

        return self.conn.execute(text(sql), params).all()

    def _batches(self, sql: str, params: dict[str, Any], size: int) -> Iterator[list[Row]]:
        from sqlalchemy import text

        result = self.conn.execute(text(sql), params, execution_options={"yield_per": size})
        for part in result.partitions(size):
            yield [tuple(row) for row in part]


def reader_of(conn: Reader | Connection) -> Reader:
    """``conn`` as a reader: a write path passes its SQLAlchemy connection as it is."""
    return conn if isinstance(conn, Reader) else EngineReader(conn)


class IndexReads(Protocol):
    """Where a store's reads come from."""

    @property
    def where(self) -> str:
        """The index for messages (its URL without a password)."""

    @property
    def dialect(self) -> str: ...

    def read(self) -> contextlib.AbstractContextManager[Reader]:
        """A read transaction; database errors leave it as :class:`IndexUnavailableError`."""

    def close(self) -> None:
        """Close what the reads opened."""


class SqliteFile:
    """Reads of an SQLite index file through the standard library, read-only.

    One connection per thread, opened on the first read and kept until :meth:`close`: a
    new connection parses the schema again, and fsck reads once per fan-out directory.
    Each :meth:`read` is its own transaction on it, so it sees what writers committed.
    """

    def __init__(self, database: Path) -> None:
        self.database = database
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return f"sqlite:///{self.database}"

    @property
    def dialect(self) -> str:
        return "sqlite"

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    read_only_uri(self.database),
                    uri=True,
                    timeout=BUSY_TIMEOUT_S,
                    isolation_level=None,
                    check_same_thread=False,
                )
            except sqlite3.Error as exc:
                raise IndexUnavailableError(f"index {self.where}: {exc}") from None
            self._local.conn = conn
            with self._lock:
                self._opened.append(conn)
        return conn

    @contextlib.contextmanager
    def read(self) -> Iterator[Reader]:
        conn = self._connection()
        outer = conn.in_transaction  # a read inside a read: the outer one's snapshot
        try:
            if not outer:
                conn.execute("BEGIN")  # deferred: one snapshot for the whole read, no lock
            try:
                yield SqliteReader(conn)
            finally:
                if not outer and conn.in_transaction:
                    conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise IndexUnavailableError(f"index {self.where}: {exc}") from None

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()
        self._local = threading.local()


@dataclass(frozen=True)
class EngineReads:
    """Reads through an open SQLAlchemy index (PostgreSQL, or an index being written)."""

    index: Index

    @property
    def where(self) -> str:
        from expdna.store.index.engine import shown

        return shown(self.index.url)

    @property
    def dialect(self) -> str:
        return self.index.dialect

    @contextlib.contextmanager
    def read(self) -> Iterator[Reader]:
        with self.index.read() as conn:
            yield EngineReader(conn)

    def close(self) -> None:
        """Nothing of its own: the index's owner disposes of it."""
