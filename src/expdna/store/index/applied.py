"""Which entries of the object directory's log (expdna.store.objects.log) the index holds."""

from __future__ import annotations

from sqlalchemy import Connection

from expdna.store.index.bulk import insert_ignore
from expdna.store.index.models import StoreLogEntry
from expdna.store.index.read import EngineReader
from expdna.store.index.schema import applied_in


def log_applied(conn: Connection, name: str, kind: str) -> None:
    """Mark a log entry applied, inside the transaction that applies it."""
    conn.execute(insert_ignore(conn, StoreLogEntry, ["name"]).values(name=name, kind=kind))


def applied_names(conn: Connection) -> set[str]:
    return applied_in(EngineReader(conn))
