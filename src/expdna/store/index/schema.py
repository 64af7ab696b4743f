"""What the index says about itself, read through the read layer: its schema revision (one
row of ``alembic_version``, compared with :data:`~expdna.store.index.revision.HEAD` without
importing alembic), its store id (``store_meta``) and the log entries it applied
(``store_log``)."""

from __future__ import annotations

from expdna.store.index.read import IndexReads, Reader

#: Whether the table alembic keeps its revision in is there, per dialect.
_HAS_TABLE = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'",
    "postgresql": (
        "SELECT 1 FROM information_schema.tables "
        "WHERE table_name = 'alembic_version' AND table_schema = current_schema()"
    ),
}


def revision_in(reader: Reader) -> str | None:
    """The revision in one read transaction; None for a database without expdna tables."""
    if reader.first(_HAS_TABLE[reader.dialect]) is None:
        return None
    found = reader.scalar("SELECT version_num FROM alembic_version")
    return None if found is None else str(found)


def stored_revision(reads: IndexReads) -> str | None:
    """The index's revision (None: no expdna tables)."""
    with reads.read() as reader:
        return revision_in(reader)


#: The ``store_meta`` key of the store id (expdna.store.identity).
STORE_ID_KEY = "store_id"


def stored_id(reader: Reader) -> str | None:
    """The id of the store whose objects the index describes; None before it has one."""
    value = reader.scalar("SELECT value FROM store_meta WHERE key = :key", {"key": STORE_ID_KEY})
    return None if value is None else str(value)


def applied_in(reader: Reader) -> set[str]:
    """The names of the log entries the index holds (expdna.store.objects.log)."""
    return {str(name) for name in reader.column("SELECT name FROM store_log")}
