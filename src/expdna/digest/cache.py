"""A persistent digest cache, so re-digesting an unchanged dataset costs a stat per file.

One SQLite file, ``<cache dir>/digests.sqlite`` (``$EXPDNA_CACHE_DIR``, else the
platform's user cache directory), opened with the stdlib ``sqlite3``:

- ``digests``: (device, inode) -> BLAKE3 hex, trusted only while size, mtime_ns *and*
  ctime_ns still match. ctime cannot be set by a user, so an edit that keeps the size and
  restores the mtime (``touch -d``) is still caught; a rename or chmod costs a re-hash.
- ``trees``: per dataset root, a digest of every file's (relpath, stat key) and the
  listing digest it had, so an unchanged dataset is answered by one row after the walk.
- ``listings``: recent dataset listings by their digest, so ``expdna data verify`` can name
  the files that changed in datasets too large to embed in a manifest. Content-addressed:
  a reader re-hashes the body before trusting it.
- ``footers``: Parquet/Arrow footer facts by file digest, so an unchanged dataset does not
  import pyarrow.

Racy files (git's "racy clean" problem): a file whose mtime or ctime lies within
:data:`RACY_WINDOW_NS` of the moment its stat was taken may be written again within the
same timestamp granule without its stat changing. Such digests are never stored, so the
next run hashes the file again; once it is older than the window its digest is kept.

The cache never fails a caller: any SQLite error is one warning, after which the cache is
off for the rest of this object's life. A file SQLite calls corrupt is removed, to be
rebuilt on the next run. Writes use ``BEGIN IMMEDIATE`` and a short busy timeout: under
contention from other processes a write is skipped (costing a re-hash later), not awaited.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from expdna.filesystems import DEFAULT_MOUNTS, network_fstype
from expdna.sqlite_journal import set_journal_mode

log = logging.getLogger(__name__)

FILE_NAME = "digests.sqlite"
SCHEMA_VERSION = 2  # 2: the trees table (whole-dataset stat digests)
RACY_WINDOW_NS = 2_000_000_000
#: Dataset listings kept (the most recently stored); a listing of 10,000 files is ~500 KB.
LISTINGS_KEPT = 64
#: Dataset roots whose whole-tree stat digest is kept (the most recently stored).
TREES_KEPT = 1024
BUSY_TIMEOUT_S = 2.0
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26  # primary result codes (sqlite3.h)

#: (device, inode, size, mtime_ns, ctime_ns) of one file.
StatKey = tuple[int, int, int, int, int]
_I64 = 1 << 63

_SCHEMA = """
CREATE TABLE IF NOT EXISTS digests (
    dev INTEGER NOT NULL, ino INTEGER NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, hex TEXT NOT NULL,
    CONSTRAINT pk_digests PRIMARY KEY (dev, ino)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS listings (
    digest TEXT NOT NULL CONSTRAINT pk_listings PRIMARY KEY,
    stored_ns INTEGER NOT NULL, body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS trees (
    root TEXT NOT NULL CONSTRAINT pk_trees PRIMARY KEY,
    stat_hex TEXT NOT NULL, digest TEXT NOT NULL, stored_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS footers (
    hex TEXT NOT NULL, version INTEGER NOT NULL, facts TEXT NOT NULL,
    CONSTRAINT pk_footers PRIMARY KEY (hex, version)
) WITHOUT ROWID;
"""


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$EXPDNA_CACHE_DIR``, else ``platformdirs.user_cache_dir("expdna")``."""
    value = (os.environ if environ is None else environ).get("EXPDNA_CACHE_DIR")
    if value:
        return Path(value)
    import platformdirs  # only when the cache is actually used

    return Path(platformdirs.user_cache_dir("expdna"))


def stat_key(st: os.stat_result) -> StatKey:
    """The key a file's digest is kept under; any change to the file changes it."""
    # SQLite integers are signed 64-bit: an inode at or above 2**63 wraps around
    ino = st.st_ino - (1 << 64) if st.st_ino >= _I64 else st.st_ino
    return (st.st_dev, ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def open_cache(
    use_cache: bool = True, environ: Mapping[str, str] | None = None
) -> DigestCache | None:
    """The cache in :func:`cache_dir`; None when ``use_cache`` is off or it cannot be used
    (hashing then goes on without it)."""
    if not use_cache:
        return None
    return DigestCache.open(cache_dir(environ))


class DigestCache:
    """The open cache. Every method degrades to "nothing cached" after an error."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn: sqlite3.Connection | None = conn
        self.path = path

    @classmethod
    def open(
        cls, directory: Path | None = None, *, mounts_file: Path = DEFAULT_MOUNTS
    ) -> DigestCache | None:
        """The cache in ``directory`` (default :func:`cache_dir`); None, with a warning,
        when it cannot be used. ``mounts_file`` says which file systems are remote."""
        directory = cache_dir() if directory is None else directory
        path = directory / FILE_NAME
        for attempt in (1, 2):
            try:
                directory.mkdir(parents=True, exist_ok=True)
                return cls(_connect(path, mounts_file), path)
            except sqlite3.DatabaseError as exc:
                if attempt == 1 and _is_corruption(exc):
                    log.warning("digest cache %s is corrupt (%s); rebuilding it", path, exc)
                    _remove(path)
                    continue
                log.warning("digest cache %s unusable (%s); hashing every file", path, exc)
            except OSError as exc:
                log.warning(
                    "digest cache %s unusable (%s); hashing every file", path, exc.strerror or exc
                )
        return None

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def __enter__(self) -> DigestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _failed(self, exc: sqlite3.Error, doing: str) -> None:
        if _is_corruption(exc):
            log.warning(
                "digest cache %s is corrupt (%s); removed, it is rebuilt on the next run",
                self.path,
                exc,
            )
            self.close()
            _remove(self.path)
        else:
            log.warning(
                "digest cache %s: %s failed (%s); continuing without it", self.path, doing, exc
            )
            self.close()

    # -- file digests ------------------------------------------------------------------

    def lookup(self, keys: Sequence[StatKey]) -> list[str | None]:
        """The cached hex for each key (None where unknown or stale), in one query per
        device."""
        found: list[str | None] = [None] * len(keys)
        if self._conn is None or not keys:
            return found
        by_dev: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            by_dev.setdefault(key[0], []).append(i)
        try:
            for dev, indexes in by_dev.items():
                inos = json.dumps([keys[i][1] for i in indexes])
                # CROSS JOIN keeps SQLite driving from the inode list (the other order
                # scans the JSON once per cached row).
                rows = self._conn.execute(
                    "SELECT d.ino, d.size, d.mtime_ns, d.ctime_ns, d.hex"
                    " FROM json_each(?) AS j CROSS JOIN digests AS d"
                    " ON d.dev = ? AND d.ino = j.value",
                    (inos, dev),
                ).fetchall()
                cached = {row[0]: row for row in rows}
                for i in indexes:
                    _, ino, size, mtime_ns, ctime_ns = keys[i]
                    row = cached.get(ino)
                    if row is not None and row[1:4] == (size, mtime_ns, ctime_ns):
                        found[i] = row[4]
        except sqlite3.Error as exc:
            self._failed(exc, "lookup")
            return [None] * len(keys)
        return found

    def store(self, rows: Iterable[tuple[StatKey, str]], now_ns: int) -> int:
        """Keep digests, except racy ones (see the module doc); returns how many were kept.

        ``now_ns`` is the wall-clock time taken *before* the files were stat'ed.
        """
        if self._conn is None:
            return 0
        horizon = now_ns - RACY_WINDOW_NS
        keep = [(*key, hexd) for key, hexd in rows if max(key[3], key[4]) < horizon]
        if not keep:
            return 0
        try:
            with _immediate(self._conn):
                self._conn.executemany(
                    "INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?, ?)", keep
                )
        except sqlite3.Error as exc:
            self._failed(exc, "write")
            return 0
        return len(keep)

    # -- whole trees ---------------------------------------------------------------------

    def tree(self, root: str, stat_hex: str) -> str | None:
        """The listing digest of ``root`` when its files' stat digest is ``stat_hex`` (and
        the listing itself is still kept)."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute(
                "SELECT t.digest FROM trees AS t JOIN listings AS l"
                " ON l.digest = t.digest WHERE t.root = ? AND t.stat_hex = ?",
                (root, stat_hex),
            ).fetchone()
            return None if row is None else str(row[0])
        except sqlite3.Error as exc:
            self._failed(exc, "read")
            return None

    def keep_tree(self, root: str, stat_hex: str, digest: str) -> None:
        """Remember that ``root`` with these stats lists as ``digest`` (racy-free trees
        only: the caller checks, as for :meth:`store`)."""
        if self._conn is None:
            return
        try:
            with _immediate(self._conn):
                self._conn.execute(
                    "INSERT OR REPLACE INTO trees VALUES (?, ?, ?, ?)",
                    (root, stat_hex, digest, time.time_ns()),
                )
                self._conn.execute(
                    "DELETE FROM trees WHERE root NOT IN (SELECT root FROM trees"
                    " ORDER BY stored_ns DESC LIMIT ?)",
                    (TREES_KEPT,),
                )
        except sqlite3.Error as exc:
            self._failed(exc, "write")

    # -- listings and footers (content-addressed) ---------------------------------------

    def listing(self, digest: str) -> bytes | None:
        """A stored listing body by its ``blake3:`` digest (unverified: the caller hashes)."""
        if self._conn is None:
            return None
        try:
            row = self._conn.execute(
                "SELECT body FROM listings WHERE digest = ?", (digest,)
            ).fetchone()
            return None if row is None else zlib.decompress(row[0])
        except zlib.error as exc:
            log.warning("digest cache %s: listing %s unreadable (%s)", self.path, digest, exc)
        except sqlite3.Error as exc:
            self._failed(exc, "read")
        return None

    def keep_listing(self, digest: str, body: bytes) -> None:
        if self._conn is None:
            return
        try:
            if self._conn.execute("SELECT 1 FROM listings WHERE digest = ?", (digest,)).fetchone():
                return
            packed = zlib.compress(body, 1)
            with _immediate(self._conn):
                self._conn.execute(
                    "INSERT OR REPLACE INTO listings VALUES (?, ?, ?)",
                    (digest, time.time_ns(), packed),
                )
                self._conn.execute(
                    "DELETE FROM listings WHERE digest NOT IN (SELECT digest FROM listings"
                    " ORDER BY stored_ns DESC LIMIT ?)",
                    (LISTINGS_KEPT,),
                )
        except sqlite3.Error as exc:
            self._failed(exc, "write")

    def footers(self, hexes: Sequence[str], version: int) -> dict[str, dict[str, Any]]:
        if self._conn is None or not hexes:
            return {}
        try:
            rows = self._conn.execute(
                "SELECT f.hex, f.facts FROM json_each(?) AS j CROSS JOIN footers AS f"
                " ON f.hex = j.value AND f.version = ?",
                (json.dumps(list(hexes)), version),
            ).fetchall()
            return {hexd: json.loads(facts) for hexd, facts in rows}
        except (sqlite3.Error, ValueError) as exc:
            if isinstance(exc, sqlite3.Error):
                self._failed(exc, "read")
            return {}

    def keep_footers(self, facts: Mapping[str, dict[str, Any]], version: int) -> None:
        if self._conn is None or not facts:
            return
        try:
            with _immediate(self._conn):
                self._conn.executemany(
                    "INSERT OR REPLACE INTO footers VALUES (?, ?, ?)",
                    [(h, version, json.dumps(f, sort_keys=True)) for h, f in facts.items()],
                )
        except sqlite3.Error as exc:
            self._failed(exc, "write")


def _connect(path: Path, mounts_file: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        # WAL's shared memory does not work across the hosts of a network file system
        remote = network_fstype(path.parent, mounts_file) is not None
        journal = "DELETE" if remote else "WAL"
        set_journal_mode(conn, journal, BUSY_TIMEOUT_S)
        conn.execute("PRAGMA synchronous=NORMAL")  # a lost cache write costs a re-hash
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            with _immediate(conn):
                if version not in (0, SCHEMA_VERSION):  # another layout: start over
                    for table in ("digests", "listings", "trees", "footers"):
                        conn.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taking the write lock up front (no mid-way SQLITE_BUSY)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc)
    return "not a database" in text or "malformed" in text


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(f"{path}{suffix}")
