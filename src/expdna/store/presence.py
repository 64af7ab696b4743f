"""Whether a store is there, and whether its SQLite index is, before anything opens it.

Opening an SQLite index creates the file; a store whose objects outlive their index (the
file deleted, a copy without it) must not get an empty one, after which every query would
answer "no runs match". So every open looks first, with the standard library alone: a
directory without objects is no store; objects without ``index.sqlite`` are a store whose
index is missing, and the one remedy is named (``expdna reindex``).
"""

from __future__ import annotations

from expdna.store.config import StoreConfig
from expdna.store.errors import IndexMissingError
from expdna.store.objects.idfile import holds_objects

SQLITE_NAME = "index.sqlite"
OBJECTS = "objects"
INDEX_MISSING = "index missing: run expdna reindex"


def index_missing(config: StoreConfig) -> bool:
    """The store's own SQLite index is gone while its object directory holds objects."""
    if config.index_url is not None or (config.root / SQLITE_NAME).is_file():
        return False
    return holds_objects(config.root / OBJECTS)


def require_index(config: StoreConfig) -> None:
    """:class:`IndexMissingError` (exit 2) when :func:`index_missing`."""
    if index_missing(config):
        raise IndexMissingError(
            f"{INDEX_MISSING} (index {config.root / SQLITE_NAME} is gone; object directory "
            f"{config.root / OBJECTS} holds the store)"
        )
