"""Final metrics added to a run after it was recorded.

Metrics are outside the DNA and outside the run's identity: the stored manifest (an
immutable object) keeps what was recorded, and the index rows that answer questions about
metrics are brought up to date instead: numeric metrics in ``metrics``, other values as
facts under ``metrics.<name>`` (as recording flattens them). A name given again replaces
its old value, nested names included (``reward`` replaces ``reward.mean``); names not
given are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, delete, select

from expdna.store.index.bulk import bulk_insert, chunks
from expdna.store.index.engine import Index
from expdna.store.index.intern import InternCache, intern_pairs
from expdna.store.index.models import Fact, FactPath, FactValue, Metric
from expdna.store.index.read import IndexReads, Reader, reader_of
from expdna.store.logbodies import plain_metrics
from expdna.store.logged import write_logged
from expdna.store.objects.interface import LogStore
from expdna.store.objects.log import LogEntry
from expdna.store.queries import resolve, run_pk
from expdna.store.record.flatten import flatten

_PREFIX = "metrics."


def _owned(name: str, roots: set[str]) -> bool:
    """``name`` is one of ``roots`` or lies below one (``reward.mean`` below ``reward``)."""
    return name in roots or any(name.startswith(root + ".") for root in roots)


def upsert_metrics(conn: Connection, run: int, metrics: dict[str, Any]) -> None:
    """Replace the run's index rows for the names in ``metrics`` (inside a write transaction)."""
    roots = set(metrics)
    facts, numeric = flatten({"metrics": metrics})

    stored = conn.execute(select(Metric.name).where(Metric.run_pk == run)).scalars().all()
    stale = sorted(name for name in stored if _owned(name, roots))
    for part in chunks(stale):
        conn.execute(delete(Metric).where(Metric.run_pk == run, Metric.name.in_(part)))
    bulk_insert(
        conn,
        Metric,
        ("run_pk", "name", "value"),
        [(run, name, value) for name, value in sorted(numeric.items())],
    )

    # Facts of the replaced names: every value of those paths that this run holds. The
    # facts key (value id, run) makes each a point lookup; fact_paths is small.
    paths = conn.execute(
        select(FactPath.id, FactPath.path).where(
            FactPath.path >= _PREFIX, FactPath.path < "metrics/"
        )
    ).all()
    path_ids = [pid for pid, path in paths if _owned(path[len(_PREFIX) :], roots)]
    for ids in chunks(path_ids):
        conn.execute(
            delete(Fact).where(
                Fact.run_pk == run,
                Fact.value_id.in_(select(FactValue.id).where(FactValue.path_id.in_(ids))),
            )
        )
    if facts:
        interned = intern_pairs(conn, facts, InternCache())
        bulk_insert(
            conn,
            Fact,
            ("value_id", "run_pk"),
            sorted((interned.values[pair], run) for pair in facts),
        )


def read_metrics(conn: Reader | Connection, run: int) -> dict[str, float]:
    rows = reader_of(conn).rows(
        "SELECT name, value FROM metrics WHERE run_pk = :run ORDER BY name", {"run": run}
    )
    return {str(name): float(value) for name, value in rows}


def apply_entry(conn: Connection, entry: LogEntry) -> dict[str, float]:
    """A ``metrics`` log entry's rows (recording it, or ``reindex`` replaying it)."""
    key = run_pk(conn, str(entry.body["run_id"]))
    upsert_metrics(conn, key, dict(entry.body["metrics"]))
    return read_metrics(conn, key)


def _named_safely(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with each name redacted as manifest keys are: a name is text the index
    and the log keep (`acc/https://u:pw@h`, a token pasted as a name), and a caller of
    the store's API may not have come through a manifest."""
    from expdna.manifest.redact import redact_key

    return {redact_key(name): value for name, value in metrics.items()}


def record_metrics(
    index: Index, log: LogStore, run_id: str, metrics: Mapping[str, Any]
) -> dict[str, float]:
    """:meth:`expdna.store.Store.record_metrics`: checked, logged, one write transaction."""
    clean = _named_safely(plain_metrics(metrics))
    with index.read() as conn:
        run_pk(conn, run_id)  # an unknown run is refused before anything is written
    body = {"run_id": run_id, "metrics": clean}
    return write_logged(index, log, "metrics", body, apply_entry)


def metrics_of(reads: IndexReads, ref: str) -> dict[str, float]:
    with reads.read() as conn:
        return read_metrics(conn, run_pk(conn, resolve(conn, ref).run_id))
