"""Which entries of the object directory's log (expdna.store.objects.log) the index holds."""

from __future__ import annotations

from sqlalchemy import Connection, select

from expdna.store.index.bulk import insert_ignore
from expdna.store.index.models import StoreLogEntry


def log_applied(conn: Connection, name: str, kind: str) -> None:
    """Mark a log entry applied, inside the transaction that applies it."""
    conn.execute(insert_ignore(conn, StoreLogEntry, ["name"]).values(name=name, kind=kind))


def applied_names(conn: Connection) -> set[str]:
    return {str(name) for name in conn.execute(select(StoreLogEntry.name)).scalars()}
