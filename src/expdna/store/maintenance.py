"""fsck and gc: the object directory and the index checked against each other.

Both walk the store one fan-out directory at a time (``objects/ab/`` against the blob rows
whose digest starts with ``ab``), so memory stays flat however many runs are recorded.

An unreferenced object (written by a recorder that stopped before its index transaction
committed) is not a problem: it is what the write order promises at worst, and ``gc``
removes it. gc leaves alone objects and temporary files younger than a grace period,
because a recorder running now may be about to reference them.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator

from sqlalchemy import Connection, delete, exists, func, select

from expdna.digest import ALGORITHM
from expdna.digest.refs import ref
from expdna.store.entities import FsckReport, GcReport
from expdna.store.errors import CorruptObjectError, MissingObjectError
from expdna.store.index.engine import Index
from expdna.store.index.models import Blob, Run, RunBlob
from expdna.store.objects.directory import ObjectDir

log = logging.getLogger(__name__)

DEFAULT_GRACE_S = 3600.0
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


def _objects_in(objects: ObjectDir, fan: str) -> set[str]:
    directory = objects.root / fan
    if not directory.is_dir():
        return set()
    return {fan + entry.name for entry in os.scandir(directory) if len(entry.name) == 62}


def _first_referrer(conn: Connection, blob_id: int) -> str | None:
    via_link = (
        select(Run.run_id).join(RunBlob, RunBlob.run_pk == Run.id).where(RunBlob.blob_id == blob_id)
    )
    direct = select(Run.run_id).where(Run.manifest_blob_id == blob_id)
    found = conn.execute(direct.limit(1)).scalar() or conn.execute(via_link.limit(1)).scalar()
    return None if found is None else str(found)


def fsck(objects: ObjectDir, index: Index) -> FsckReport:
    """Re-hash every object and check every blob the index references is present."""
    problems: list[str] = []
    count = unreferenced = 0
    for fan in FANS:
        on_disk = _objects_in(objects, fan)
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
            except CorruptObjectError as exc:
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
    return FsckReport(
        objects=count,
        runs=int(runs),
        problems=problems,
        unreferenced=unreferenced,
        temp_files=temp_files,
    )


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


def gc(
    objects: ObjectDir,
    index: Index,
    *,
    dry_run: bool = False,
    grace_s: float = DEFAULT_GRACE_S,
) -> GcReport:
    """Remove objects no run references, and stray temporary files, older than ``grace_s``."""
    cutoff = time.time() - grace_s
    removed: list[str] = []
    removed_bytes = kept_young = 0
    for fan in FANS:
        on_disk = _objects_in(objects, fan)
        if not on_disk:
            continue
        with index.read() as conn:
            known = _blob_rows(conn, fan).keys()
            stale_rows = dict(_unreferenced_rows(conn, fan))
        candidates = (on_disk - known) | (stale_rows.keys() & on_disk)
        for digest in sorted(candidates):
            path = objects.path(digest)
            if not _old(str(path), cutoff):
                kept_young += 1
                continue
            removed.append(digest)
            removed_bytes += path.stat().st_size
            if dry_run:
                continue
            if digest in stale_rows:
                with index.write() as conn:
                    conn.execute(
                        delete(Blob).where(
                            Blob.id == stale_rows[digest],
                            ~exists().where(RunBlob.blob_id == Blob.id),
                            ~exists().where(Run.manifest_blob_id == Blob.id),
                        )
                    )
            objects.remove(digest)
    temp_files = [str(p) for p in objects.temp_files() if _old(str(p), cutoff)]
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
    )
