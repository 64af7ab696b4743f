"""Index rows for prepared runs: one transaction per batch, bulk inserts, insert-if-absent.

Called inside a write transaction after the batch's blobs are durable in the object
directory. Rows are inserted in a fixed order (blobs, paths, runs, then the rows that hang
off runs), each set sorted, so concurrent PostgreSQL writers take locks in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Connection, select

from expdna.digest import ALGORITHM
from expdna.store.entities import RecordStatus
from expdna.store.index.bulk import bulk_insert, chunks, insert_absent, insert_ignore
from expdna.store.index.intern import InternCache, Interned, intern_sets
from expdna.store.index.models import (
    LINEAGE_KEY,
    Blob,
    Fact,
    Lineage,
    Metric,
    Run,
    RunBlob,
    RunFactSet,
)
from expdna.store.record.cycles import cyclic
from expdna.store.record.prepare import Prepared
from expdna.store.record.samerun import SameRun


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
    conn: Connection,
    batch: Sequence[Prepared],
    cache: InternCache,
    refused: dict[str, str] | None = None,
    *,
    recorded_at: datetime | None = None,
    same: SameRun | None = None,
) -> tuple[list[RecordStatus], Interned | None]:
    """Insert the index rows of ``batch``; returns each entry's status, in order, and the
    interned ids (for ``cache``, once the transaction has committed).

    ``skipped``: the run is recorded already (or earlier in the batch) with the same
    manifest; ``conflict``: with another manifest (a recorded run is never changed);
    ``failed``: its lineage would close a cycle (the reason goes into ``refused``).
    ``same``: whether another manifest of a recorded run id is that run all the same
    (:mod:`expdna.store.record.samerun`): then ``skipped`` too.
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
        elif earlier == prepared.manifest_digest:
            status[position] = "skipped"
        elif first is None and same is not None and same(earlier, prepared):
            status[position] = "skipped"  # the hook's file of a run it recorded itself
        else:
            status[position] = "conflict"
    if not fresh:
        return status, None
    new = [batch[fresh[run_id]] for run_id in sorted(fresh)]
    if any(p.lineage for p in new):
        for run_id, reason in cyclic(conn, new).items():
            status[fresh.pop(run_id)] = "failed"
            if refused is not None:
                refused[run_id] = reason
        new = [p for p in new if p.run_id in fresh]
        if not new:
            return status, None

    blobs: dict[str, dict[str, Any]] = {}
    for prepared in new:
        for blob in prepared.blobs:
            blobs.setdefault(
                blob.digest,
                {
                    "digest": blob.digest,
                    "algorithm": ALGORITHM,
                    "size": blob.size,
                    "kind": blob.kind,
                },
            )
    insert_absent(conn, Blob, [blobs[d] for d in sorted(blobs)], ["digest", "algorithm"])
    ids = blob_ids(conn, blobs)

    # Runs share fact sets (one per section, expdna.store.record.factsets): each distinct set is
    # interned once per batch, and a run adds one row per set.
    sets = list({id(fact_set): fact_set for p in new for fact_set in p.fact_sets}.values())
    set_ids, interned = intern_sets(conn, sets, set().union(*(p.own_facts for p in new)), cache)
    value_ids = interned.values

    now = recorded_at or datetime.now(timezone.utc).replace(tzinfo=None)
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
            equal = theirs.get(run_id) == batch[position].manifest_digest
            status[position] = "skipped" if equal else "conflict"

    facts: list[tuple[int, int]] = []
    run_sets: list[tuple[int, int]] = []
    links: list[tuple[int, int]] = []
    metrics: list[tuple[int, str, float]] = []
    for prepared in new:
        run_pk = inserted.get(prepared.run_id)
        if run_pk is None:
            continue
        run_sets += [(set_ids[fact_set], run_pk) for fact_set in set(prepared.fact_sets)]
        facts += [(value_ids[pair], run_pk) for pair in prepared.own_facts]
        links += [(run_pk, blob_id) for blob_id in sorted({ids[b.digest] for b in prepared.blobs})]
        metrics += [(run_pk, name, value) for name, value in prepared.metrics.items()]
    facts.sort()
    run_sets.sort()
    bulk_insert(conn, Fact, ("value_id", "run_pk"), facts)
    bulk_insert(conn, RunFactSet, ("set_id", "run_pk"), run_sets)
    bulk_insert(conn, RunBlob, ("run_pk", "blob_id"), links)
    bulk_insert(conn, Metric, ("run_pk", "name", "value"), metrics)
    edges = sorted(
        (parent, p.run_id, relation)
        for p in new
        if p.lineage and p.run_id in inserted
        for relation, parent in p.lineage
    )
    if edges:  # an edge made earlier with `expdna link` is kept as it is
        conn.execute(
            insert_ignore(conn, Lineage, LINEAGE_KEY),
            [
                {
                    **dict(zip(LINEAGE_KEY, edge, strict=True)),
                    "source": "manifest",
                    "recorded_at": now,
                }
                for edge in edges
            ],
        )
    return status, interned
