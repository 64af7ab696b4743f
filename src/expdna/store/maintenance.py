"""gc: objects no run references removed, checked against the index as fsck checks them
(expdna.store.fsck, whose fan-out walk it shares).

gc walks the store one fan-out directory at a time (``objects/ab/`` against the blob rows
whose digest starts with ``ab``), so memory stays flat however many runs are recorded. An
unreferenced object (written by a recorder that stopped before its index transaction
committed) is what the write order promises at worst; gc leaves alone objects and
temporary files younger than a grace period.

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

from sqlalchemy import Connection, delete, exists, select

from expdna.digest import ALGORITHM
from expdna.store import drift
from expdna.store.entities import GcReport
from expdna.store.errors import IndexLostError
from expdna.store.fsck import FANS, blob_rows, fan_range
from expdna.store.fsck import irregular_objects as irregular_objects
from expdna.store.index.bulk import chunks
from expdna.store.index.engine import Index
from expdna.store.index.models import Blob, Run, RunBlob
from expdna.store.index.read import EngineReader, EngineReads
from expdna.store.objects.directory import TRASH as TRASH
from expdna.store.objects.interface import LogStore, ObjectStore

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 3600.0
TEMP_MIN_AGE_S = 600.0


def _old(path: str, cutoff: float) -> bool:
    try:
        return os.stat(path).st_mtime < cutoff
    except FileNotFoundError:
        return False


def _unreferenced_rows(conn: Connection, fan: str) -> Iterator[tuple[str, int]]:
    low, high = fan_range(fan)
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
    standing = drift.check(objects, EngineReads(index), store_log)
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
            known = blob_rows(EngineReader(conn), fan).keys()
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
