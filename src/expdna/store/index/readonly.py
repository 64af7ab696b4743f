"""Opening an SQLite index for reading only, with the standard library alone.

A query must answer from a store the user cannot write (a shared archive, a read-only
mount) and must never create or change one. ``mode=ro`` keeps SQLite from writing the
database; where the directory cannot be written either, SQLite cannot make the WAL's
shared-memory file a reader needs, so the file is opened ``immutable=1`` (no locks, no
``-shm``), which is only safe because nobody can be writing it there either. A leftover
``-wal`` with content is still read the ordinary way, so its rows are not skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["read_only_uri", "writable"]


def writable(database: Path) -> bool:
    """Whether this process may change ``database`` (the file, and its directory for the
    journal and WAL files)."""
    return os.access(database.parent, os.W_OK) and (
        not database.exists() or os.access(database, os.W_OK)
    )


def read_only_uri(database: Path) -> str:
    """The ``sqlite3.connect(..., uri=True)`` URI that opens ``database`` read-only."""
    uri = f"{database.resolve().as_uri()}?mode=ro"
    wal = database.with_name(database.name + "-wal")
    if not os.access(database.parent, os.W_OK) and not (wal.exists() and wal.stat().st_size):
        uri += "&immutable=1"
    return uri
