"""fsck and gc: the object directory and the index checked against each other.

Both walk the store one fan-out directory at a time (``objects/ab/`` against the blob rows
whose digest starts with ``ab``), so memory stays flat however many runs are recorded.

An unreferenced object (written by a recorder that stopped before its index transaction
committed) is not a problem: it is what the write order promises at worst, and ``gc``
removes it. gc leaves alone objects and temporary files younger than a grace period.

gc and recorders share no lock (flock is not dependable on NFS, and a bucket has none): gc
moves an object it found unreferenced into ``objects/trash/`` (one atomic rename; on a
bucket a copy, then a delete), asks the index again, and puts it back if a run references
it now; a recorder, once its transaction has committed, asks for every object its runs
reference (a stat, or a HEAD) and writes again any that is gone
(expdna.store.record.recorder). Whichever way the two interleave, a committed run ends with
its objects, at any grace. gc also keeps objects named by log entries the index has not
applied yet, and runs not at all while the index looks lost (expdna.store.drift). The
training hook's entries, which no index has yet, are kept the same way: the hook checks its
objects after it has marked its entry pending, and gc reads the markers before it asks the
index again.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

from sqlalchemy import Connection, delete, exists, func, select

from expdna.digest import ALGORITHM
from expdna.digest.refs import ref
from expdna.store import drift
from expdna.store.config import StoreConfig
from expdna.store.entities import FsckReport, GcReport
from expdna.store.errors import (
    CorruptObjectError,
    IndexLostError,
    MissingObjectError,
    StoreError,
    UnreadableObjectError,
)
from expdna.store.index.applied import applied_names
from expdna.store.index.bulk import chunks
from expdna.store.index.engine import Index
from expdna.store.index.models import Blob, Run, RunBlob
from expdna.store.objects.directory import TRASH as TRASH
from expdna.store.objects.interface import LogStore, ObjectStore
from expdna.store.objects.log import LogEntry

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 3600.0
TEMP_MIN_AGE_S = 600.0
FANS = [f"{i:02x}" for i in range(256)]


def _fan_range(fan: str) -> tuple[str, str]:
    return fan, "g" if fan == "ff" else f"{int(fan, 16) + 1:02x}"


def _blob_rows(conn: Connection, fan: str) -> dict[str, tuple[int, str]]:
    low, high = _fan_range(fan)
    rows = conn.execute(
        select(Blob.digest, Blob.id, Blob.kind).where(
            Blob.algorithm == ALGORITHM, Blob.digest >= low, Blob.digest < high
        )
    )
    return {digest: (blob_id, kind) for digest, blob_id, kind in rows}


def irregular_objects(objects: ObjectStore) -> list[str]:
    """One line per entry at an object path that is not a regular file."""
    return [
        f"object {ref(digest)} in {objects.location} is {what}, not a file: not read "
        "(remove it; `expdna fsck` checks the store again)"
        for digest, what in objects.irregular()
    ]


def _first_referrer(conn: Connection, blob_id: int) -> str | None:
    via_link = (
        select(Run.run_id).join(RunBlob, RunBlob.run_pk == Run.id).where(RunBlob.blob_id == blob_id)
    )
    direct = select(Run.run_id).where(Run.manifest_blob_id == blob_id)
    found = conn.execute(direct.limit(1)).scalar() or conn.execute(via_link.limit(1)).scalar()
    return None if found is None else str(found)


def fsck(objects: ObjectStore, index: Index, log: LogStore | None = None) -> FsckReport:
    """Re-hash every object and log entry, check every blob the index references is
    present, and that the index is neither lost nor behind the log."""
    log = log or objects.open_log()
    standing = drift.check(objects, index, log)
    problems: list[str] = list(standing.problems)
    entries: list[LogEntry] = []
    for name in log.names():
        try:
            entries.append(log.read(name))
        except ValueError as exc:
            problems.append(str(exc))
        except FileNotFoundError:
            continue
    if not standing.problems:  # a lost or foreign index: that one line says it all
        problems += log_gaps(index, entries)
    problems += irregular_objects(objects)
    count = unreferenced = 0
    for fan in FANS:
        on_disk = set(objects.listing(fan))
        count += len(on_disk)
        with index.read() as conn:
            rows = _blob_rows(conn, fan)
            for digest in sorted(rows.keys() - on_disk):
                blob_id, kind = rows[digest]
                run = _first_referrer(conn, blob_id)
                whose = f" of run {run}" if run else ""
                problems.append(f"missing object {ref(digest)} ({kind}{whose})")
        for digest in sorted(on_disk):
            try:
                objects.verify(digest)
            except (CorruptObjectError, UnreadableObjectError) as exc:
                problems.append(str(exc))
            except MissingObjectError:  # removed while we looked: gc ran meanwhile
                continue
        unreferenced += len(on_disk - rows.keys())
    with index.read() as conn:
        runs = conn.execute(select(func.count()).select_from(Run)).scalar_one()
        orphans = (
            conn.execute(select(Run.run_id).where(~exists().where(Blob.id == Run.manifest_blob_id)))
            .scalars()
            .all()
        )
        problems += [f"run {run_id}: its manifest blob row is missing" for run_id in orphans]
        dangling = (
            conn.execute(
                select(Run.run_id)
                .join(RunBlob, RunBlob.run_pk == Run.id)
                .where(~exists().where(Blob.id == RunBlob.blob_id))
            )
            .scalars()
            .all()
        )
        problems += [f"run {run_id}: references a blob row that is missing" for run_id in dangling]
    temp_files = sum(1 for _ in objects.temp_files())
    with index.read() as conn:
        unfinished = unfinished_runs(conn)
    return FsckReport(
        unfinished=unfinished,
        objects=count,
        runs=int(runs),
        problems=problems,
        unreferenced=unreferenced,
        temp_files=temp_files,
        pending=standing.pending,
    )


def unfinished_runs(conn: Connection, now: datetime | None = None) -> list[str]:
    """Run ids still ``running`` past the age limit of :mod:`expdna.manifest.status`
    (``generated_at`` is when the run started), oldest first."""
    from expdna.manifest.status import unfinished_after_s

    moment = now or datetime.now(timezone.utc).replace(tzinfo=None)
    cutoff = moment - timedelta(seconds=unfinished_after_s())
    rows = conn.execute(
        select(Run.run_id)
        .where(Run.state == "running", Run.generated_at < cutoff)
        .order_by(Run.generated_at)
    )
    return [str(run_id) for run_id in rows.scalars()]


#: How many run ids a log-gap problem names before "and N more".
NAMED = 5


def _named(run_ids: list[str]) -> str:
    more = f" and {len(run_ids) - NAMED} more" if len(run_ids) > NAMED else ""
    return ", ".join(run_ids[:NAMED]) + more


def log_gaps(index: Index, entries: list[LogEntry]) -> list[str]:
    """The log invariant (expdna.store.objects.log): every run in the index is named by a
    ``record`` entry, and every run an applied ``record`` entry names is in the index.
    Entries not applied yet are a recorder at work (or :mod:`expdna.store.drift`'s)."""
    with index.read() as conn:
        indexed = {str(r) for r in conn.execute(select(Run.run_id)).scalars()}
        applied = applied_names(conn) if entries else set()
    named: set[str] = set()
    lost: set[str] = set()
    for entry in entries:
        if entry.kind != "record":
            continue
        runs = {str(run[0]) for run in entry.body.get("runs", [])}
        named |= runs
        if entry.name in applied:
            lost |= runs - indexed
    problems = []
    unlogged = sorted(indexed - named)
    if unlogged:
        problems.append(
            f"{len(unlogged)} runs in the index have no log entry ({_named(unlogged)}): a "
            f"rebuild would lose their record times; {drift.REINDEX} and logs them"
        )
    if lost:
        problems.append(
            f"{len(lost)} runs named by applied log entries are not in the index "
            f"({_named(sorted(lost))}); {drift.REINDEX}"
        )
    return problems


def _old(path: str, cutoff: float) -> bool:
    try:
        return os.stat(path).st_mtime < cutoff
    except FileNotFoundError:
        return False


def _unreferenced_rows(conn: Connection, fan: str) -> Iterator[tuple[str, int]]:
    low, high = _fan_range(fan)
    referenced = exists().where(RunBlob.blob_id == Blob.id)
    direct = exists().where(Run.manifest_blob_id == Blob.id)
    rows = conn.execute(
        select(Blob.digest, Blob.id).where(
            Blob.algorithm == ALGORITHM,
            Blob.digest >= low,
            Blob.digest < high,
            ~referenced,
            ~direct,
        )
    )
    yield from ((str(digest), int(blob_id)) for digest, blob_id in rows)


def unreadable_index(config: StoreConfig, error: StoreError) -> str | None:
    """Why fsck cannot open a store's SQLite index that its objects outlive (missing,
    unreadable), naming ``reindex``; None when that is not the case."""
    from expdna.store import SQLITE_NAME
    from expdna.store.objects.idfile import holds_objects

    if config.index_url is not None or config.remote is not None:
        return None
    if not holds_objects(config.root / "objects"):
        return None
    database = config.root / SQLITE_NAME
    if not database.exists():
        return str(error)  # the one line every command gives (expdna.store.presence)
    return (
        f"index {database} cannot be read ({error}), but object directory "
        f"{config.root / 'objects'} holds objects; {drift.REINDEX}"
    )


def _referenced(conn: Connection, digests: list[str]) -> set[str]:
    """Those of ``digests`` a recorded run references now."""
    found: set[str] = set()
    for part in chunks(sorted(digests)):
        linked = exists().where(RunBlob.blob_id == Blob.id)
        direct = exists().where(Run.manifest_blob_id == Blob.id)
        rows = conn.execute(
            select(Blob.digest)
            .where(Blob.digest.in_(part), Blob.algorithm == ALGORITHM)
            .where(linked | direct)
        )
        found.update(str(d) for d in rows.scalars())
    return found


def _waiting(store_log: LogStore) -> set[str]:
    """The objects named by entries the training hook wrote for the index to apply."""
    from expdna.store.objects.spool import blobs_of

    named: set[str] = set()
    for name in store_log.pending():
        try:
            named |= blobs_of(store_log.read(name))
        except (OSError, ValueError):  # applied and gone meanwhile: the index has it
            continue
    return named


def _settle(
    objects: ObjectStore, index: Index, trashed: dict[str, str], store_log: LogStore
) -> list[str]:
    """Put back the trashed objects a run references now, delete the rest; returns the
    digests deleted. A hook's entry is marked pending before it checks its objects and
    is in the index before its marker goes, so reading the markers, then the index, sees
    every entry whose check could have missed the trashing."""
    if not trashed:
        return []
    waiting = _waiting(store_log)
    with index.read() as conn:
        keep = _referenced(conn, list(trashed)) | (waiting & trashed.keys())
    removed = []
    for digest, where in trashed.items():
        if digest in keep:
            log.info("gc: object %s was referenced meanwhile; put back", digest)
            objects.untrash(digest, where)
        else:
            objects.purge(where)
            removed.append(digest)
    return removed


def _recover_trash(objects: ObjectStore, index: Index, store_log: LogStore) -> None:
    """Settle what a gc that was stopped left in the trash."""
    _settle(objects, index, objects.trashed(), store_log)


def gc(
    objects: ObjectStore,
    index: Index,
    *,
    dry_run: bool = False,
    grace_s: float = DEFAULT_GRACE_S,
    log_dir: LogStore | None = None,
) -> GcReport:
    """Remove objects no run references, and stray temporary files, older than ``grace_s``.

    Refuses (:class:`IndexLostError`, exit 1) while the index looks lost or behind.
    """
    store_log = log_dir or objects.open_log()
    standing = drift.check(objects, index, store_log)
    if standing.problems:
        raise IndexLostError(f"gc removes nothing: {standing.problems[0]}")
    if not dry_run:
        _recover_trash(objects, index, store_log)
    cutoff = time.time() - grace_s
    removed: list[str] = []
    removed_bytes = kept_young = 0
    for fan in FANS:
        on_disk = objects.listing(fan)
        if not on_disk:
            continue
        with index.read() as conn:
            known = _blob_rows(conn, fan).keys()
            stale_rows = dict(_unreferenced_rows(conn, fan))
        candidates = (
            (on_disk.keys() - known) | (stale_rows.keys() & on_disk.keys())
        ) - standing.pending_digests
        trashed: dict[str, str] = {}
        sizes: dict[str, int] = {}
        for digest in sorted(candidates):
            if on_disk[digest].mtime >= cutoff:
                kept_young += 1
                continue
            sizes[digest] = on_disk[digest].size
            if dry_run:
                removed.append(digest)
                continue
            where = objects.trash(digest)
            if where is None:
                continue
            trashed[digest] = where
            if digest in stale_rows:
                with index.write() as conn:
                    conn.execute(
                        delete(Blob).where(
                            Blob.id == stale_rows[digest],
                            ~exists().where(RunBlob.blob_id == Blob.id),
                            ~exists().where(Run.manifest_blob_id == Blob.id),
                        )
                    )
        removed_here = [d for d in removed if d in sizes]
        gone = _settle(objects, index, trashed, store_log) if not dry_run else []
        removed += gone
        removed_bytes += sum(sizes[d] for d in (removed_here if dry_run else gone))
    # A temporary file is a writer's work in progress (renamed within its batch) until it is
    # TEMP_MIN_AGE_S old, whatever the grace: removing one under a recorder fails its rename.
    temp_cutoff = min(cutoff, time.time() - TEMP_MIN_AGE_S)
    temp_files = [str(p) for p in objects.temp_files() if _old(str(p), temp_cutoff)]
    if not dry_run:
        for name in temp_files:
            try:
                os.unlink(name)
            except FileNotFoundError:
                continue
    log.info(
        "gc: %d objects (%d bytes), %d temporary files",
        len(removed),
        removed_bytes,
        len(temp_files),
    )
    return GcReport(
        removed=removed,
        removed_bytes=removed_bytes,
        temp_files=temp_files,
        kept_young=kept_young,
        dry_run=dry_run,
        irregular=irregular_objects(objects),
    )
