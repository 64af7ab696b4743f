"""``expdna reindex``: rebuild the whole index from the object directory.

Replays the log (expdna.store.objects.log) oldest first through the functions that wrote
it: each ``record`` entry's runs are prepared again from their manifest objects and
written as one batch with the entry's time, each ``pin``, ``link`` and ``metrics`` entry is
applied as ``pin``, ``link`` and a metrics update apply it; a ``pin`` entry logged before its
run's ``record`` entry (an older training hook wrote them so) is applied right after it.
Manifests no entry names (recorded before the log existed) are adopted first, oldest first,
their object's mtime as their record time. The rebuilt index answers ``show``, ``which``,
``lineage`` and ``stability`` as the old one did.

SQLite: the new index is built in a file beside the old one (unsynced: it is thrown away
if this stops) and renamed over it at the end, so a lost, empty or corrupt index is
replaced whole and a reader sees the old index or the new one. PostgreSQL: every table is
emptied and refilled, batch by batch; the server's index belongs to one store, so an index
with another store's id is refused (exit 2).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, event, text

from expdna.digest import hex_of
from expdna.errors import ExpdnaError
from expdna.filesystems import DEFAULT_MOUNTS
from expdna.manifest.io import MAX_READ_BYTES
from expdna.regular import open_regular
from expdna.store import identity
from expdna.store.config import StoreConfig
from expdna.store.entities import ReindexReport
from expdna.store.errors import (
    IndexRevisionError,
    IndexUnavailableError,
    MissingObjectError,
    StoreError,
    StoreIdentityError,
    UnreadableObjectError,
    unwritable,
)
from expdna.store.index.applied import log_applied
from expdna.store.index.engine import Index, open_index, shown
from expdna.store.index.intern import InternCache
from expdna.store.index.migrate import HEAD, current_revision, known, upgrade
from expdna.store.index.models import Base
from expdna.store.index.read import SqliteFile
from expdna.store.index.schema import stored_revision
from expdna.store.logged import appliers
from expdna.store.maintenance import irregular_objects
from expdna.store.objects.directory import ObjectDir
from expdna.store.objects.interface import LogStore, ObjectStore
from expdna.store.objects.log import LogEntry
from expdna.store.objects.pinned import mark_path
from expdna.store.objects.place import open_objects
from expdna.store.record.prepare import BlobData, Prepared, prepare_doc, references
from expdna.store.record.sections import SectionMemo
from expdna.store.record.write import write_batch

log = logging.getLogger(__name__)

#: Progress callback: (runs rebuilt so far, runs in all).
Progress = Callable[[int, int], None]
#: Non-record entries applied in one transaction.
GROUP = 1000
#: Runs from which a rebuild prepares manifests in worker processes, and how many at most.
PARALLEL_RUNS = 5000
MAX_WORKERS = 8
ADOPT_BATCH = 500


def _fast_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # The file is renamed into place only once complete: a crash loses nothing to redo.
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA synchronous=OFF")
    finally:
        cursor.close()


def _manifest_refs(doc: dict[str, Any]) -> dict[str, str]:
    """Digests a stored manifest references (its patches, listings, package list) -> kind."""
    return references(doc, patches=True)


def _prepare_one(
    objects: ObjectStore,
    memo: SectionMemo,
    manifest: str,
    extra: Sequence[Sequence[Any]],
    source: str,
    problems: list[str],
) -> Prepared | None:
    """A run prepared from its stored manifest, its blobs as the entry lists them."""
    try:
        data = objects.read_verified(manifest, max_bytes=MAX_READ_BYTES)
        prepared = prepare_doc(json.loads(data), source=source, memo=memo)
    except (ExpdnaError, ValueError) as exc:
        problems.append(f"{source}: not reindexed: {exc}")
        return None
    blobs = [BlobData(manifest, b"", "manifest", stored_size=len(data))]
    blobs += [
        BlobData(str(digest), b"", str(kind), stored_size=int(size)) for digest, kind, size in extra
    ]
    return replace(prepared, manifest_digest=manifest, blobs=tuple(blobs))


#: A worker's object directory and section memo, made on its first entry.
_WORKER: dict[str, tuple[ObjectDir, SectionMemo]] = {}


def prepare_entry(
    objects_root: str, name: str, runs: list[list[Any]]
) -> tuple[list[Prepared], list[str]]:
    """A record entry's runs, prepared in a worker process over the directory
    ``objects_root``."""
    if objects_root not in _WORKER:
        _WORKER[objects_root] = (ObjectDir(Path(objects_root)), SectionMemo())
    objects, memo = _WORKER[objects_root]
    return _prepare_runs(objects, memo, name, runs)


def prepare_runs_of(
    objects: ObjectStore, name: str, runs: list[list[Any]]
) -> tuple[list[Prepared], list[str]]:
    """A record entry's runs, prepared from ``objects`` (a directory or a bucket)."""
    if isinstance(objects, ObjectDir):
        return prepare_entry(objects.location, name, runs)
    return _prepare_runs(objects, SectionMemo(), name, runs)


def _prepare_runs(
    objects: ObjectStore, memo: SectionMemo, name: str, runs: list[list[Any]]
) -> tuple[list[Prepared], list[str]]:
    """A record entry's runs, prepared. Returned in one piece, so fact sets shared by its
    runs stay shared objects."""
    problems: list[str] = []
    batch = []
    for run_id, manifest, extra in runs:
        source = f"run {run_id} (log entry {name})"
        found = _prepare_one(objects, memo, str(manifest), extra, source, problems)
        if found is not None:
            batch.append(found)
    return batch, problems


def _prepared_entries(
    objects: ObjectStore, entries: list[LogEntry], runs: int
) -> Iterator[tuple[list[Prepared], list[str]]]:
    """Each record entry's prepared runs, in order. Preparing (reading, checking and
    flattening each manifest) is most of a rebuild's work: with many runs in a directory
    it is spread over worker processes, a few entries ahead of the writer (a bucket's
    client is not carried across a fork)."""
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    local = isinstance(objects, ObjectDir)
    if not local or runs < PARALLEL_RUNS or workers < 2 or os.name != "posix":
        memo = SectionMemo()
        for entry in entries:
            yield _prepare_runs(objects, memo, entry.name, entry.body.get("runs", []))
        return
    assert isinstance(objects, ObjectDir)
    root = str(objects.root)
    context = multiprocessing.get_context("fork")  # the workers read files, never the index
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        ahead: collections.deque[Future[tuple[list[Prepared], list[str]]]] = collections.deque()
        pending = iter(entries)
        for entry in itertools.islice(pending, 2 * workers):
            ahead.append(pool.submit(prepare_entry, root, entry.name, entry.body.get("runs", [])))
        while ahead:
            done = ahead.popleft().result()
            following = next(pending, None)
            if following is not None:
                ahead.append(
                    pool.submit(prepare_entry, root, following.name, following.body.get("runs", []))
                )
            yield done


class _Rebuild:
    """One rebuild: the object directory, the index being filled, and what went wrong."""

    def __init__(
        self,
        objects: ObjectStore,
        index: Index,
        progress: Progress | None,
        store_log: LogStore | None = None,
    ) -> None:
        self.objects = objects
        self.log = store_log
        self.index = index
        self.memo = SectionMemo()
        self.cache = InternCache()
        self.problems: list[str] = []
        self.runs = 0
        self.total = 0
        self.progress = progress
        #: run id -> pin entries replayed before that run's record entry: applied after it
        self.waiting: dict[str, list[LogEntry]] = {}

    def prepared(
        self, manifest: str, extra: Sequence[Sequence[Any]], source: str
    ) -> Prepared | None:
        return _prepare_one(self.objects, self.memo, manifest, extra, source, self.problems)

    def write_runs(
        self, batch: list[Prepared], at: datetime, entry: LogEntry | None = None
    ) -> None:
        def body(conn: Connection) -> None:
            statuses, interned = write_batch(conn, batch, self.cache, recorded_at=at)
            if entry is not None:
                log_applied(conn, entry.name, entry.kind)
            if interned is not None:
                self.cache.add(interned)
            for prepared, status in zip(batch, statuses, strict=True):
                if status == "conflict":
                    self.problems.append(
                        f"run {prepared.run_id}: recorded earlier with other content; "
                        f"manifest {prepared.manifest_digest} left out, as record left it out"
                    )

        self.index.write_retrying(body)
        self.runs += len(batch)
        if self.progress is not None:
            self.progress(self.runs, self.total)
        held = [e for p in batch for e in self.waiting.pop(p.run_id, [])]
        if held:
            self.other_entries(held, wait=False)

    def record_entry(self, entry: LogEntry, batch: list[Prepared], problems: list[str]) -> None:
        self.problems += problems
        if batch:
            self.write_runs(batch, entry.at, entry)
        else:
            with self.index.write() as conn:
                log_applied(conn, entry.name, entry.kind)

    def other_entries(self, entries: list[LogEntry], *, wait: bool = True) -> None:
        """Apply entries other than ``record`` in one transaction; with ``wait``, a pin
        whose run is not recorded yet waits for that run's record entry."""
        from expdna.store.pins import waits_for_run

        apply = appliers()
        with self.index.write() as conn:
            for entry in entries:
                run_id = waits_for_run(conn, entry) if wait else None
                if run_id is not None:
                    self.waiting.setdefault(run_id, []).append(entry)
                    continue
                try:
                    with conn.begin_nested():
                        apply[entry.kind](conn, entry)
                except ExpdnaError as exc:
                    self.problems.append(f"log entry {entry.name} ({entry.kind}): {exc}")
                else:
                    if entry.kind == "pin" and self.log is not None:
                        mark_path(self.log, entry.body.get("path"))  # stores pinned before
                log_applied(conn, entry.name, entry.kind)

    def unmatched_pins(self) -> None:
        """Pins no later record entry recorded the run of: refused (a problem), as a pin of
        an unknown run is, except one still pending and young (its run's record may be on
        its way: catch-up applies it then)."""
        held = [entry for entries in self.waiting.values() for entry in entries]
        self.waiting = {}
        if not held:
            return
        young: set[str] = set()
        if self.log is not None:
            from expdna.store.drift import STALE_S

            now = time.time()
            pending = set(self.log.pending())
            young = {
                e.name for e in held if e.name in pending and self.log.age_s(e.name, now) <= STALE_S
            }
        refused = [entry for entry in held if entry.name not in young]
        if refused:
            self.other_entries(refused, wait=False)

    def adopt(self, digests: list[str]) -> int:
        """Record manifests no log entry names (recorded before the log), oldest first."""
        found: list[tuple[datetime, Prepared, datetime]] = []
        for digest in digests:
            info = self.objects.stat(digest)
            if info is None:
                continue
            try:
                data = self.objects.read(digest, max_bytes=MAX_READ_BYTES)
            except (FileNotFoundError, MissingObjectError):
                continue
            except UnreadableObjectError as exc:
                if isinstance(self.objects, ObjectDir) and _starts_as_json(
                    self.objects.path(digest)
                ):
                    self.problems.append(f"manifest object {digest}: not adopted: {exc}")
                continue
            mtime = info.mtime
            if not data.startswith(b"{") or hex_of(data) != digest:
                continue
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if not (isinstance(doc, dict) and {"run_id", "dna", "schema_version"} <= doc.keys()):
                continue
            refs = _manifest_refs(doc)
            sizes = {d: self.objects.stat(d) for d in refs}
            extra = [
                [d, kind, info_d.size]
                for d, kind in sorted(refs.items())
                if (info_d := sizes[d]) is not None
            ]
            prepared = self.prepared(digest, extra, f"manifest object {digest}")
            if prepared is not None:
                at = datetime.fromtimestamp(mtime, timezone.utc).replace(tzinfo=None)
                found.append((prepared.generated_at, prepared, at))
        found.sort(key=lambda item: (item[0], item[1].run_id))
        for start in range(0, len(found), ADOPT_BATCH):
            part = found[start : start + ADOPT_BATCH]
            at = max(when for _, _, when in part)
            batch = [p for _, p, _ in part]
            # logged now, so the log names every run (fsck checks it) and the next
            # rebuild replays them with this time
            runs = [
                [p.run_id, p.manifest_digest, [[b.digest, b.kind, b.size] for b in p.blobs[1:]]]
                for p in batch
            ]
            entry = None
            if self.log is not None:
                entry = self.log.append("record", {"runs": runs}, at=at)
            self.write_runs(batch, at, entry)
        return len(found)


def _starts_as_json(path: Path) -> bool:
    """Whether an object too large to load begins as a manifest would (one byte read)."""
    try:
        with open(open_regular(str(path)), "rb") as handle:
            return handle.read(1) == b"{"
    except (OSError, ExpdnaError):
        return False


def _entries(store_log: LogStore, problems: list[str]) -> list[LogEntry]:
    entries = []
    for name in store_log.names():
        try:
            entries.append(store_log.read(name))
        except (OSError, ValueError) as exc:
            problems.append(f"log entry {name}: not replayed: {exc}")
    return entries


def _fill(
    objects: ObjectStore, index: Index, store_log: LogStore, progress: Progress | None
) -> tuple[_Rebuild, int, int]:
    rebuild = _Rebuild(objects, index, progress, store_log)
    rebuild.problems += irregular_objects(objects)
    entries = _entries(store_log, rebuild.problems)
    named: set[str] = set()
    for entry in entries:
        if entry.kind == "record":
            for _run_id, manifest, extra in entry.body.get("runs", []):
                named.add(str(manifest))
                named.update(str(blob[0]) for blob in extra)
                rebuild.total += 1
    orphans = [digest for digest in objects if digest not in named]
    adopted = rebuild.adopt(orphans)
    rebuild.total += adopted
    group: list[LogEntry] = []
    records = [entry for entry in entries if entry.kind == "record"]
    prepared = _prepared_entries(objects, records, rebuild.total)
    for entry in entries:
        if entry.kind == "record":
            if group:
                rebuild.other_entries(group)
                group = []
            batch, problems = next(prepared)
            rebuild.record_entry(entry, batch, problems)
        else:
            group.append(entry)
            if len(group) >= GROUP:
                rebuild.other_entries(group)
                group = []
    if group:
        rebuild.other_entries(group)
    rebuild.unmatched_pins()
    return rebuild, len(entries), adopted


def _remove_sqlite(database: Path) -> None:
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{database}{suffix}")


def _sqlite_target(config: StoreConfig) -> Path | None:
    from expdna.store.index.engine import index_url

    url = index_url(config.root, config.index_url)
    return Path(str(url.database)) if url.drivername == "sqlite" else None


def _sqlite_revision(database: Path) -> str | None:
    """The revision of the SQLite index being replaced; None when it has none or cannot
    be read (a lost or corrupt index is what reindex is for)."""
    if not database.is_file():
        return None
    reads = SqliteFile(database)
    try:
        return stored_revision(reads)
    except IndexUnavailableError:
        return None
    finally:
        reads.close()


def newer_revision(config: StoreConfig, index: Index | None = None) -> str | None:
    """The index's revision when this expdna does not know it (a newer expdna wrote it)."""
    database = _sqlite_target(config)
    if database is not None:
        found = _sqlite_revision(database)
    else:
        assert index is not None
        with index.read() as conn:
            found = current_revision(conn)
    return found if found is not None and found != HEAD and not known(found) else None


def _refuse_newer(found: str, where: str, *, force: bool, sqlite: bool) -> None:
    if force and sqlite:
        log.warning(
            "index %s is at revision %s, newer than this expdna knows (head %s): rebuilt at "
            "%s, dropping the tables and columns that revision added",
            where,
            found,
            HEAD,
            HEAD,
        )
        return
    remedy = (
        f"`expdna reindex --force` rebuilds it at {HEAD}, dropping the tables and columns "
        f"revision {found} added; or upgrade expdna"
        if sqlite
        else "upgrade expdna (a PostgreSQL index is never downgraded here)"
    )
    raise IndexRevisionError(
        f"index {where} is at revision {found}, newer than this expdna knows (head {HEAD}): "
        f"reindex refuses to replace it; {remedy}"
    )


def reindex(
    config: StoreConfig,
    *,
    progress: Progress | None = None,
    mounts_file: Path = DEFAULT_MOUNTS,
    force: bool = False,
) -> ReindexReport:
    """Rebuild the index ``config`` names from its object directory. An index at a
    revision this expdna does not know is refused (exit 2) unless ``force`` (SQLite
    only): it is then rebuilt at this expdna's head, losing what the newer one added."""
    try:
        return _reindex(config, progress=progress, mounts_file=mounts_file, force=force)
    except OSError as exc:
        raise unwritable(config.root, exc) from None


def _reindex(
    config: StoreConfig, *, progress: Progress | None, mounts_file: Path, force: bool
) -> ReindexReport:
    started = time.monotonic()
    root = config.root
    objects = open_objects(config)
    if not objects.exists():
        raise StoreError(f"no store at {config.shown}: no object directory {objects.location}")
    store_log = objects.open_log()
    store_id = objects.create_id()
    if config.remote is not None:
        root.mkdir(parents=True, exist_ok=True)  # the local cache the SQLite index lives in
    database = _sqlite_target(config)
    if database is not None:
        newer = newer_revision(config)
        if newer is not None:
            _refuse_newer(newer, str(database), force=force, sqlite=True)
        temp = database.with_name(f"{database.name}.reindex-{os.getpid()}")
        _remove_sqlite(temp)
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        index = open_index(root, f"sqlite:///{temp}", mounts_file=mounts_file)
        event.listen(index.engine, "connect", _fast_sqlite)
        try:
            upgrade(index)
            with index.write() as conn:
                identity.set_index_id(conn, store_id)
            rebuild, entries, adopted = _fill(objects, index, store_log, progress)
        except BaseException:
            index.dispose()
            _remove_sqlite(temp)
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
            raise
        index.dispose()  # the last connection closed checkpoints the WAL into the file
        _remove_sqlite(database)
        os.replace(temp, database)
        _remove_sqlite(temp)
    else:
        index = open_index(root, config.index_url, mounts_file=mounts_file)
        try:
            newer = newer_revision(config, index)
            if newer is not None:
                _refuse_newer(newer, shown(index.url), force=force, sqlite=False)
            upgrade(index)
            with index.write() as conn:
                found = identity.index_id(conn)
                if found is not None and found != store_id:
                    raise StoreIdentityError(
                        f"index {shown(index.url)} belongs to store {found}, but object "
                        f"directory {objects.location} holds store {store_id}: reindex refuses to "
                        "replace another store's index"
                    )
                _empty(conn)
                identity.set_index_id(conn, store_id)
            rebuild, entries, adopted = _fill(objects, index, store_log, progress)
        finally:
            index.dispose()
    return ReindexReport(
        runs=rebuild.runs,
        entries=entries,
        adopted=adopted,
        problems=rebuild.problems,
        seconds=time.monotonic() - started,
    )


def _empty(conn: Connection) -> None:
    """Every index table emptied (PostgreSQL, inside the rebuild's first transaction)."""
    names = ", ".join(f'"{table.name}"' for table in Base.metadata.sorted_tables)
    conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
