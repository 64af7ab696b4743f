"""The store: a content-addressed object directory and a SQL index over every run.

Importing this package stays light (no SQLAlchemy): :class:`Store` is loaded on first use.
Modules: ``objects`` (blobs by BLAKE3), ``models`` (index tables), ``index`` (engines,
transactions), ``migrate`` (alembic), ``prepare``/``storeform``/``flatten`` (a manifest
into blobs, a row and facts), ``intern`` (path and value ids), ``write`` (a batch's rows),
``recorder`` (blobs then rows, batch by batch), ``blobwriter`` (the process that writes a
batch's blobs while the next is checked), ``queries``, ``maintenance`` (fsck, gc),
``facade`` (the ``Store`` API), ``entities`` and ``errors`` (what callers get back).
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
