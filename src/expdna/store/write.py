"""Index rows for prepared runs: one transaction per batch, bulk inserts, insert-if-absent.

Called inside a write transaction after the batch's blobs are durable in the object
directory. Rows are inserted in a fixed order (blobs, paths, runs, then the rows that hang
off runs), each set sorted, so concurrent PostgreSQL writers take locks in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from itertools import repeat
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, Table, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert

from expdna.digest import ALGORITHM
from expdna.store.bulk import insert_absent
from expdna.store.entities import RecordStatus
from expdna.store.intern import InternCache, Interned, intern_pairs
from expdna.store.models import (
    LINEAGE_KEY,
    Base,
    Blob,
    Fact,
    Lineage,
    Metric,
    Run,
    RunBlob,
)
from expdna.store.prepare import Prepared

T = TypeVar("T")
#: Parameters per IN list: under SQLite's limit, small enough for PostgreSQL plans.
CHUNK = 500

_INSERTS: dict[str, Callable[[Table], Any]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def insert_ignore(conn: Connection, entity: type[Base], keys: list[str]) -> Insert:
    """``INSERT ... ON CONFLICT (keys) DO NOTHING`` for this connection's dialect."""
    make = _INSERTS[conn.dialect.name]
    stmt: Insert = make(table_of(entity)).on_conflict_do_nothing(index_elements=keys)
    return stmt


def table_of(entity: type[Base]) -> Table:
    """The Core table of a model: statements run on connections, never ORM sessions."""
    return cast(Table, entity.__table__)


def recorded_digests(conn: Connection, run_ids: Iterable[str]) -> dict[str, str]:
    """run id -> manifest digest, for the given run ids that are recorded already."""
    found: dict[str, str] = {}
    for part in chunks(sorted(set(run_ids))):
        rows = conn.execute(
            select(Run.run_id, Blob.digest)
            .join(Blob, Blob.id == Run.manifest_blob_id)
            .where(Run.run_id.in_(part))
        )
        found.update({run_id: digest for run_id, digest in rows})
    return found


def blob_ids(conn: Connection, digests: Iterable[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for part in chunks(sorted(set(digests))):
        rows = conn.execute(
            select(Blob.digest, Blob.id).where(Blob.digest.in_(part), Blob.algorithm == ALGORITHM)
        )
        found.update({digest: blob_id for digest, blob_id in rows})
    return found


def write_batch(
    conn: Connection, batch: Sequence[Prepared], cache: InternCache
) -> tuple[list[RecordStatus], Interned | None]:
    """Insert the index rows of ``batch``; returns each entry's status, in order, and the
    interned ids (for ``cache``, once the transaction has committed).

    ``skipped``: the run is recorded already (or earlier in the batch) with the same
    manifest; ``conflict``: with another manifest (a recorded run is never changed).
    """
    status: list[RecordStatus] = ["recorded"] * len(batch)
    existing = recorded_digests(conn, (p.run_id for p in batch))
    fresh: dict[str, int] = {}  # run id -> its first position in the batch
    for position, prepared in enumerate(batch):
        first = fresh.get(prepared.run_id)
        earlier = existing.get(prepared.run_id) or (
            batch[first].manifest_digest if first is not None else None
        )
        if earlier is None:
            fresh[prepared.run_id] = position
        else:
            status[position] = "skipped" if earlier == prepared.manifest_digest else "conflict"
    if not fresh:
        return status, None
    new = [batch[fresh[run_id]] for run_id in sorted(fresh)]

    blobs: dict[str, dict[str, Any]] = {}
    for prepared in new:
        for blob in prepared.blobs:
            blobs.setdefault(blob.digest, {
                "digest": blob.digest, "algorithm": ALGORITHM, "size": len(blob.data),
                "kind": blob.kind,
            })
    insert_absent(conn, Blob, [blobs[d] for d in sorted(blobs)], ["digest", "algorithm"])
    ids = blob_ids(conn, blobs)

    # Runs share fact sets (one per repeated section): each distinct set is interned and
    # turned into value ids once per batch.
    groups = {id(group): group for p in new for group in p.fact_groups}
    interned = intern_pairs(conn, set().union(*groups.values()), cache)
    value_ids = interned.values
    group_ids = {key: [value_ids[pair] for pair in group] for key, group in groups.items()}

    now = datetime.now(timezone.utc).replace(tzinfo=None)
    run_rows = [
        {**p.row, "manifest_blob_id": ids[p.manifest_digest], "recorded_at": now} for p in new
    ]
    inserted: dict[str, int] = {
        run_id: run_pk
        for run_id, run_pk in insert_absent(conn, Run, run_rows, ["run_id"], ("run_id", "id"))
    }
    # Rows another writer committed between our check and our insert (PostgreSQL).
    racing = [run_id for run_id in fresh if run_id not in inserted]
    if racing:
        theirs = recorded_digests(conn, racing)
        for run_id in racing:
            position = fresh[run_id]
            same = theirs.get(run_id) == batch[position].manifest_digest
            status[position] = "skipped" if same else "conflict"

    facts: list[tuple[int, int]] = []
    links: list[tuple[int, int]] = []
    metrics: list[tuple[int, str, float]] = []
    for prepared in new:
        run_pk = inserted.get(prepared.run_id)
        if run_pk is None:
            continue
        for group in prepared.fact_groups:
            facts += zip(group_ids[id(group)], repeat(run_pk))
        links += [(run_pk, blob_id) for blob_id in sorted({ids[b.digest] for b in prepared.blobs})]
        metrics += [(run_pk, name, value) for name, value in prepared.metrics.items()]
    facts.sort()
    bulk_insert(conn, Fact, ("value_id", "run_pk"), facts)
    bulk_insert(conn, RunBlob, ("run_pk", "blob_id"), links)
    bulk_insert(conn, Metric, ("run_pk", "name", "value"), metrics)
    edges = sorted(
        (parent, p.run_id, relation)
        for p in new if p.lineage and p.run_id in inserted for relation, parent in p.lineage
    )
    if edges:  # an edge made earlier with `expdna link` is kept as it is
        conn.execute(insert_ignore(conn, Lineage, list(LINEAGE_KEY)), [
            {**dict(zip(LINEAGE_KEY, edge, strict=True)), "source": "manifest",
             "recorded_at": now}
            for edge in edges
        ])
    return status, interned


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
