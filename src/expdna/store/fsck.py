"""fsck: the object directory and the index checked against each other, read only.

The walk goes one fan-out directory at a time (``objects/ab/`` against the blob rows whose
digest starts with ``ab``), so memory stays flat however many runs are recorded. Every
index read goes through the read layer (expdna.store.index.read): on a local SQLite index
fsck loads no SQLAlchemy. An unreferenced object (written by a recorder that stopped before
its index transaction committed) is not a problem: it is what the write order promises at
worst, and ``gc`` (expdna.store.maintenance) removes it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from expdna.digest import ALGORITHM
from expdna.digest.refs import ref
from expdna.store import drift
from expdna.store.config import StoreConfig
from expdna.store.entities import FsckReport
from expdna.store.errors import (
    CorruptObjectError,
    MissingObjectError,
    StoreError,
    UnreadableObjectError,
)
from expdna.store.index.read import IndexReads, Reader
from expdna.store.index.schema import applied_in
from expdna.store.objects.interface import LogStore, ObjectStore
from expdna.store.objects.log import LogEntry

FANS = [f"{i:02x}" for i in range(256)]
#: How many run ids a log-gap problem names before "and N more".
NAMED = 5


def fan_range(fan: str) -> tuple[str, str]:
    """The digests of one fan-out directory, as a range: ``[fan, next fan)``."""
    return fan, "g" if fan == "ff" else f"{int(fan, 16) + 1:02x}"


def blob_rows(conn: Reader, fan: str) -> dict[str, tuple[int, str]]:
    """Digest -> (blob id, kind) of the index's blobs in one fan-out directory."""
    low, high = fan_range(fan)
    rows = conn.rows(
        "SELECT digest, id, kind FROM blobs "
        "WHERE algorithm = :algorithm AND digest >= :low AND digest < :high",
        {"algorithm": ALGORITHM, "low": low, "high": high},
    )
    return {str(digest): (int(blob_id), str(kind)) for digest, blob_id, kind in rows}


def irregular_objects(objects: ObjectStore) -> list[str]:
    """One line per entry at an object path that is not a regular file."""
    return [
        f"object {ref(digest)} in {objects.location} is {what}, not a file: not read "
        "(remove it; `expdna fsck` checks the store again)"
        for digest, what in objects.irregular()
    ]


def _first_referrer(conn: Reader, blob_id: int) -> str | None:
    found = conn.scalar(
        "SELECT run_id FROM runs WHERE manifest_blob_id = :blob LIMIT 1", {"blob": blob_id}
    ) or conn.scalar(
        "SELECT runs.run_id FROM runs JOIN run_blobs ON run_blobs.run_pk = runs.id "
        "WHERE run_blobs.blob_id = :blob LIMIT 1",
        {"blob": blob_id},
    )
    return None if found is None else str(found)


def fsck(objects: ObjectStore, reads: IndexReads, log: LogStore | None = None) -> FsckReport:
    """Re-hash every object and log entry, check every blob the index references is
    present, and that the index is neither lost nor behind the log."""
    log = log or objects.open_log()
    standing = drift.check(objects, reads, log)
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
        problems += log_gaps(reads, entries)
    problems += irregular_objects(objects)
    count = unreferenced = 0
    for fan in FANS:
        on_disk = set(objects.listing(fan))
        count += len(on_disk)
        with reads.read() as conn:
            rows = blob_rows(conn, fan)
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
    with reads.read() as conn:
        runs = conn.scalar("SELECT count(*) FROM runs")
        orphans = conn.column(
            "SELECT run_id FROM runs WHERE NOT EXISTS "
            "(SELECT 1 FROM blobs WHERE blobs.id = runs.manifest_blob_id)"
        )
        problems += [f"run {run_id}: its manifest blob row is missing" for run_id in orphans]
        dangling = conn.column(
            "SELECT runs.run_id FROM runs JOIN run_blobs ON run_blobs.run_pk = runs.id "
            "WHERE NOT EXISTS (SELECT 1 FROM blobs WHERE blobs.id = run_blobs.blob_id)"
        )
        problems += [f"run {run_id}: references a blob row that is missing" for run_id in dangling]
    temp_files = sum(1 for _ in objects.temp_files())
    with reads.read() as conn:
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


def unfinished_runs(conn: Reader, now: datetime | None = None) -> list[str]:
    """Run ids still ``running`` past the age limit of :mod:`expdna.manifest.status`
    (``generated_at`` is when the run started), oldest first."""
    from expdna.manifest.status import unfinished_after_s

    moment = now or datetime.now(timezone.utc).replace(tzinfo=None)
    cutoff = moment - timedelta(seconds=unfinished_after_s())
    found = conn.column(
        "SELECT run_id FROM runs WHERE state = 'running' AND generated_at < :cutoff "
        "ORDER BY generated_at",
        {"cutoff": cutoff},
    )
    return [str(run_id) for run_id in found]


def _named(run_ids: list[str]) -> str:
    more = f" and {len(run_ids) - NAMED} more" if len(run_ids) > NAMED else ""
    return ", ".join(run_ids[:NAMED]) + more


def log_gaps(reads: IndexReads, entries: list[LogEntry]) -> list[str]:
    """The log invariant (expdna.store.objects.log): every run in the index is named by a
    ``record`` entry, and every run an applied ``record`` entry names is in the index.
    Entries not applied yet are a recorder at work (or :mod:`expdna.store.drift`'s)."""
    with reads.read() as conn:
        indexed = {str(r) for r in conn.column("SELECT run_id FROM runs")}
        applied = applied_in(conn) if entries else set()
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


def unreadable_index(config: StoreConfig, error: StoreError) -> str | None:
    """Why fsck cannot open a store's SQLite index that its objects outlive (missing,
    unreadable), naming ``reindex``; None when that is not the case."""
    from expdna.store import SQLITE_NAME
    from expdna.store.errors import IndexMissingError
    from expdna.store.objects.idfile import holds_objects

    if config.index_url is not None or config.remote is not None:
        return None
    if not holds_objects(config.root / "objects"):
        return None
    database = config.root / SQLITE_NAME
    if not database.exists() or isinstance(error, IndexMissingError):
        return str(error)  # the one line every command gives (expdna.store.presence)
    return (
        f"index {database} cannot be read ({error}), but object directory "
        f"{config.root / 'objects'} holds objects; {drift.REINDEX}"
    )
