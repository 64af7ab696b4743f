"""Whether the index is lost, or behind the object directory it describes.

The object directory is the source of truth: its log (expdna.store.objects.log) names every
fact the index should hold, and the index marks each entry it applied. An index that holds
no runs and no store id while the directory holds objects was lost (deleted, truncated,
replaced); one that
lacks entries older than :data:`STALE_S` is behind (restored from a backup, or a recorder
stopped between its log entry and its transaction). Younger entries are a recorder at
work. ``fsck`` reports either as a problem, ``gc`` refuses to run, and both name
``expdna reindex``, which rebuilds the index from the directory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from expdna.store.index.read import IndexReads
from expdna.store.index.schema import applied_in, stored_id
from expdna.store.objects.interface import LogStore, ObjectStore
from expdna.store.queries import manifest_digests

#: A log entry not applied after this long is not a recorder at work any more.
STALE_S = 300.0
REINDEX = "`expdna reindex` rebuilds it from the object directory"


@dataclass(frozen=True)
class Drift:
    """Log entries the index lacks: ``stale`` ones are a problem, ``pending`` ones young."""

    problems: list[str] = field(default_factory=list)
    pending: int = 0
    entries: int = 0
    #: digests referenced by record entries not applied yet (gc keeps them)
    pending_digests: set[str] = field(default_factory=set)


def check(objects: ObjectStore, reads: IndexReads, log: LogStore) -> Drift:
    """How the index stands against the object directory (one look at each)."""
    names = log.names()
    with reads.read() as conn:
        runs = int(conn.scalar("SELECT count(*) FROM runs"))
        applied = applied_in(conn) if names else set()
        recorded = stored_id(conn)
    bound = recorded is not None
    where = reads.where
    problems: list[str] = []
    objects_root = objects.location
    directory = objects.read_id()
    if recorded is not None and directory != recorded:
        held = f"store {directory}" if directory else "no store"
        problems.append(
            f"index {where} belongs to store {recorded}, but object directory {objects_root} "
            f"holds {held}: --store names another store's directory"
        )
    # A store's index gets its id before its first object (expdna.store.identity): an
    # index without one, over a directory with objects, is not the one they were written for.
    if runs == 0 and not bound and objects.holds_objects():
        held = f"{len(names)} log entries and objects" if names else "objects"
        problems.append(
            f"index {where} holds no runs, but object directory {objects_root} holds {held}: "
            f"the index looks lost; {REINDEX}"
        )
    now = time.time()
    missing = [name for name in names if name not in applied]
    pending_digests: set[str] = set()
    superseded: set[str] = set()
    entries = {}
    for name in missing:
        try:
            entries[name] = log.read(name)
        except (OSError, ValueError):
            continue
    with reads.read() as conn:
        for name, entry in entries.items():
            if entry.kind != "record":
                continue
            listed = {str(run[0]): str(run[1]) for run in entry.body.get("runs", [])}
            if manifest_digests(conn, listed) == listed:
                superseded.add(name)  # a later batch recorded them: a stopped recorder's
                continue
            for _run_id, manifest, blobs in entry.body.get("runs", []):
                pending_digests.add(str(manifest))
                pending_digests.update(str(blob[0]) for blob in blobs)
    waiting = [name for name in missing if name not in superseded]
    stale = [name for name in waiting if log.age_s(name, now) > STALE_S]
    if stale and not problems:
        problems.append(
            f"index {where} is behind object directory {objects_root}: {len(stale)} log "
            f"entries older than {STALE_S:g} s are not in it (first {stale[0]}); {REINDEX}"
        )
    return Drift(
        problems=problems,
        pending=len(waiting) - len(stale),
        entries=len(names),
        pending_digests=pending_digests,
    )
