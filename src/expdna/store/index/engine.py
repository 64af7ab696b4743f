"""The index database: engines for SQLite and PostgreSQL, and managed transactions.

SQLite (inside the store directory, the default): WAL so readers never wait for the writer,
a busy timeout, foreign keys on, and writers in ``BEGIN IMMEDIATE`` so two recorders queue
on the write lock instead of failing with SQLITE_BUSY (SQLAlchemy's SQLite dialect docs,
"Serializable isolation / Savepoints / Transactional DDL"). PostgreSQL (psycopg 3) when a
team shares one history: ``postgresql+psycopg://user@host/db``.

Every database error leaving a transaction becomes an :class:`IndexUnavailableError`, so
callers see one line naming the index, never a driver traceback.
"""

from __future__ import annotations

import contextlib
import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

from expdna.errors import InvalidInputError
from expdna.filesystems import DEFAULT_MOUNTS
from expdna.sqlite_journal import set_journal_mode
from expdna.store import SQLITE_NAME
from expdna.store.errors import IndexUnavailableError
from expdna.store.index.read import BUSY_TIMEOUT_S, local_sqlite
from expdna.store.index.readonly import read_only_uri

log = logging.getLogger(__name__)

_WRITER = "expdna_writer"
#: A write transaction that applies log entries synced before it (see _sqlite_durability).
_LOGGED = "expdna_logged"
#: Where a connection keeps the synchronous level a logged write lowered.
_OWN_SYNC = "expdna_synchronous"
_SYNC_NORMAL = 1
_RETRIES = 5
T = TypeVar("T")

#: URL schemes users type -> the driver expdna uses (plain postgresql:// would pick psycopg2).
_SCHEMES = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite",
}


def index_url(store_dir: Path, url: str | None) -> URL:
    """The index URL: ``url`` normalised, or the SQLite file inside ``store_dir``."""
    if url is None:
        return URL.create("sqlite", database=str(store_dir / SQLITE_NAME))
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InvalidInputError(f"not a database URL: {url!r}") from None
    driver = _SCHEMES.get(parsed.drivername)
    if driver is None:
        raise InvalidInputError(
            f"unsupported index URL scheme {parsed.drivername!r}: use "
            "postgresql+psycopg://USER@HOST/DB (or sqlite:///PATH)"
        )
    if driver == "sqlite" and not parsed.database:
        raise InvalidInputError("an SQLite index URL needs a file path: sqlite:///PATH")
    return parsed.set(drivername=driver)


def shown(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take transaction control from the driver: the "begin" hook below emits BEGIN itself.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        set_journal_mode(cursor, "WAL", BUSY_TIMEOUT_S)
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _on_sqlite_connect_read_only(dbapi_connection: Any, _record: Any) -> None:
    # As _on_sqlite_connect, less the journal mode: setting it may write the file.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _on_sqlite_begin(connection: Connection) -> None:
    options = connection.get_execution_options()
    if not options.get(_WRITER, False):
        connection.exec_driver_sql("BEGIN")
        return
    _sqlite_durability(connection, logged=options.get(_LOGGED, False))
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_durability(connection: Connection, *, logged: bool) -> None:
    """``PRAGMA synchronous=NORMAL`` for a transaction that applies log entries, the
    connection's own level (FULL by default) for any other.

    In WAL mode FULL syncs the WAL at every commit; NORMAL syncs it only at checkpoints,
    so a power loss or an OS crash (not a process crash: the WAL is written before the
    commit returns) may undo the last transactions, never corrupt the file. Undoing a
    transaction that applies log entries loses nothing: each entry
    (expdna.store.objects.log) is synced, with the objects it names, before the
    transaction begins, and only that transaction marks it applied (``store_log_entries``).
    An entry left unapplied is named by ``fsck`` (expdna.store.drift) once it is older than
    STALE_S, ``gc`` keeps its objects and refuses to run, and ``expdna reindex`` replays it
    from the log; an unapplied entry with a marker (written by the training hook, whose
    marker removal the same loss may keep) is the same. Other writes (gc deleting a blob row
    before it purges the object, the store id, migrations) stay FULL: the log does not
    hold them. One batch of runs saves one WAL sync.

    Statement only outside a transaction (SQLite refuses to change the level inside one),
    which is why it is set here, before BEGIN.
    """
    info = connection.connection.info
    lowered = info.get(_OWN_SYNC)  # the level a logged write lowered, else None
    if logged and lowered is None:
        level = int(connection.exec_driver_sql("PRAGMA synchronous").scalar_one())
        if level > _SYNC_NORMAL:  # FULL or EXTRA; OFF (reindex's new file) stays off
            connection.exec_driver_sql(f"PRAGMA synchronous={_SYNC_NORMAL}")
            info[_OWN_SYNC] = level
    elif not logged and lowered is not None:
        connection.exec_driver_sql(f"PRAGMA synchronous={int(lowered)}")
        del info[_OWN_SYNC]


@dataclass
class Index:
    """An open index database; use :meth:`read` and :meth:`write` for every statement."""

    engine: Engine
    url: URL

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction (deferred on SQLite: never blocks the writer)."""
        with self._mapped(), self.engine.connect() as conn, conn.begin():
            yield conn

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` on SQLite, committed on success."""
        with self._mapped(), self.engine.connect() as conn:
            conn.execution_options(**{_WRITER: True})
            with conn.begin():
                yield conn

    def write_retrying(self, body: Callable[[Connection], T], *, logged: bool = False) -> T:
        """Run ``body`` in a write transaction, again after a deadlock or busy timeout.
        ``logged``: the transaction applies log entries that are durable already, and marks
        them applied; on SQLite it commits without syncing (see _sqlite_durability)."""
        for attempt in range(_RETRIES):
            try:
                with self.engine.connect() as conn:
                    conn.execution_options(**{_WRITER: True, _LOGGED: logged})
                    with conn.begin():
                        return body(conn)
            except DBAPIError as exc:
                if attempt + 1 < _RETRIES and _transient(exc):
                    log.info("index busy (%s); retrying", _first_line(exc))
                    time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
                    continue
                raise self._error(exc) from None
            except SQLAlchemyError as exc:
                raise self._error(exc) from None
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _mapped(self) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as exc:
            raise self._error(exc) from None

    def _error(self, exc: SQLAlchemyError) -> IndexUnavailableError:
        return IndexUnavailableError(f"index {shown(self.url)}: {_first_line(exc)}")

    def dispose(self) -> None:
        self.engine.dispose()


def _first_line(exc: BaseException) -> str:
    inner = getattr(exc, "orig", None) or exc
    text = str(inner).strip().splitlines()
    return text[0] if text else type(inner).__name__


def _transient(exc: DBAPIError) -> bool:
    """A deadlock or serialization failure (PostgreSQL) or a lock wait that ran out (SQLite)."""
    code = getattr(exc.orig, "sqlstate", None)
    if code in ("40001", "40P01"):
        return True
    return "database is locked" in str(exc.orig)


#: psycopg prepares a statement server-side after its fifth run, and PostgreSQL then
#: plans it once for any parameters. For the batch lookups (``value IN`` 500 values of
#: one path) that generic plan scanned every value of the path: 88 ms a lookup at 30,000
#: runs, growing with the history, against 4 ms planned per call. Planning each
#: statement costs well under a millisecond.
_PG_CONNECT_ARGS = {"prepare_threshold": None}


def open_index(
    store_dir: Path,
    url: str | None,
    *,
    mounts_file: Path = DEFAULT_MOUNTS,
    read_only: bool = False,
) -> Index:
    """An engine for the store's index; refuses an SQLite index on a network filesystem.

    ``read_only``: an SQLite index is opened read-only (see
    :mod:`expdna.store.index.readonly`) and nothing is created; the caller checks the file
    exists. PostgreSQL is opened as usual: the server enforces what a user may change.
    """
    resolved = index_url(store_dir, url)
    if resolved.drivername == "sqlite":
        database = Path(str(resolved.database))
        local_sqlite(database, mounts_file)
        if read_only:
            uri = read_only_uri(database)
            engine = create_engine(
                resolved,
                creator=lambda: sqlite3.connect(
                    uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False
                ),
            )
            event.listen(engine, "connect", _on_sqlite_connect_read_only)
        else:
            database.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(resolved, connect_args={"timeout": BUSY_TIMEOUT_S})
            event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _on_sqlite_begin)
    else:
        try:
            engine = create_engine(resolved, pool_pre_ping=True, connect_args=_PG_CONNECT_ARGS)
        except NoSuchModuleError:
            raise InvalidInputError(
                "PostgreSQL needs psycopg 3: pip install 'expdna[postgres]'"
            ) from None
        except ModuleNotFoundError:
            raise InvalidInputError(
                "PostgreSQL needs psycopg 3: pip install 'expdna[postgres]'"
            ) from None
    return Index(engine=engine, url=resolved)
