"""Whether a store is there, and whether its SQLite index is, before anything opens it.

Opening an SQLite index creates the file; a store whose objects outlive their index (the
file deleted, a copy without it) must not get an empty one, after which every query would
answer "no runs match". So every open looks first, with the standard library alone: a
directory without objects is no store; objects without ``index.sqlite`` are a store whose
index is missing, and the one remedy is named (``expdna reindex``).
"""

from __future__ import annotations

from pathlib import Path

from expdna.store.config import StoreConfig
from expdna.store.errors import IndexMissingError
from expdna.store.objects.idfile import holds_objects

SQLITE_NAME = "index.sqlite"
OBJECTS = "objects"
INDEX_MISSING = "index missing: run expdna reindex"


def index_missing(config: StoreConfig) -> bool:
    """The store's own SQLite index is gone while its object directory holds objects.

    An empty file counts as gone: an index truncated to nothing (a full disk, ``>``) holds
    no schema, and opening it would make it a new, empty index.
    """
    if config.index_url is not None or _holds_bytes(config.root / SQLITE_NAME):
        return False
    return holds_objects(config.root / OBJECTS)


def _holds_bytes(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def require_index(config: StoreConfig) -> None:
    """:class:`IndexMissingError` (exit 2) when :func:`index_missing`."""
    if index_missing(config):
        raise IndexMissingError(
            f"{INDEX_MISSING} (index {config.root / SQLITE_NAME} is gone; object directory "
            f"{config.root / OBJECTS} holds the store)"
        )
