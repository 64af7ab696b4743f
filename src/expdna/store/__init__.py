"""The store: a content-addressed object directory and a SQL index over every run.

Importing this package stays light (no SQLAlchemy): :class:`Store` is loaded on first use.
Modules, in the order data flows through them:

- ``config``: where a store is (``StoreConfig``: its directory and index URL, resolved once).
- ``objects/``: ``interface`` (``ObjectStore``: what everything above calls), its two
  places, ``directory`` (immutable blobs by BLAKE3, the source of truth) and ``s3`` (the
  same layout in ``s3://BUCKET/PREFIX``, with ``awsconfig``: the standard AWS settings),
  ``place`` (which one a config names), ``idfile`` (the store id file), ``blobwriter``
  (the process that writes a batch's blobs while the next is checked) and ``log`` (every
  index-only fact as an immutable entry, written before its rows).
- ``index/``: ``read`` (the one read layer: every query as SQL text, run on the standard
  library's sqlite3 for SQLite and through SQLAlchemy for PostgreSQL), ``schema`` (the
  revision, store id and applied log entries the index holds, read through it),
  ``readonly`` (opening SQLite for reading only), ``engine`` (SQLite and PostgreSQL
  engines, managed transactions, for writes), ``models`` (the index tables), ``selects``
  (the read layer's conditions in SQLAlchemy selects), ``revision`` (the schema revision,
  light), ``migrate`` (alembic, shipped in ``expdna/migrations``), ``chunks`` (the one way
  IN lists and batches are split), ``bulk`` (``insert_ignore`` and fast insert-if-absent,
  bulk inserts) and ``intern`` (path, value and fact-set ids).
- ``record/``: ``prepare`` (a manifest checked into blobs, a row and facts), ``storeform``
  (the store form of a manifest), ``sections`` (work per distinct section), ``factsets``
  (shared facts of a repeated section), ``flatten`` (a manifest as facts), ``samerun``
  (a hook's later file of a recorded run is that run), ``recorder``
  (blobs then rows, batch by batch) and ``write`` (a batch's rows).
- Queries, all on the read layer: ``queries`` (resolve, list, twins, find), ``lineage``,
  ``pins`` and ``checkpoints`` (checkpoints bound to runs), ``metrics`` (metrics added
  later), ``stability`` (metric spread across repeats), ``export`` (Parquet), ``fsck``;
  ``maintenance`` (gc).
- The object directory as the source of truth: ``identity`` (the store id in the directory
  and the index), ``presence`` (a store and its SQLite index there, before any open),
  ``logged`` (index-only facts written through the log), ``logbodies`` (their checked
  bodies, light), ``interrupts`` (Ctrl-C held over a write), ``deferred`` (the training
  process's writes: objects and pending log entries, no index), ``catchup`` (pending
  entries applied by the next open), ``drift`` (an index lost or behind the log) and
  ``reindex`` (the index rebuilt from the objects).
- ``facade`` (the ``Store`` API on top), ``entities`` and ``errors`` (what callers get
  back).

The rules a manifest must follow (run ids, lineage relations, times) live in
:mod:`expdna.manifest`; nothing outside the store (but its alembic ``migrations``) imports
``objects``, ``index`` or ``record``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from expdna.store.entities import (
    FsckReport,
    GcReport,
    RecordResult,
    RunRecord,
    RunSummary,
)

if TYPE_CHECKING:
    from expdna.store.facade import Store
    from expdna.store.objects.directory import ObjectDir
    from expdna.store.queries import Filter

#: The embedded SQLite index, inside the store directory.
SQLITE_NAME = "index.sqlite"

__all__ = [
    "SQLITE_NAME",
    "Filter",
    "FsckReport",
    "GcReport",
    "ObjectDir",
    "RecordResult",
    "RunRecord",
    "RunSummary",
    "Store",
]


def __getattr__(name: str) -> Any:
    if name == "Store":
        from expdna.store.facade import Store

        return Store
    if name == "Filter":
        from expdna.store.queries import Filter

        return Filter
    if name == "ObjectDir":
        from expdna.store.objects.directory import ObjectDir

        return ObjectDir
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
