"""A store's identity: one id, written in its object directory and in its index.

A team shares one PostgreSQL index and one object directory, which each machine may mount
at another path; a path cannot say whether an index and a directory belong together, an
id can. ``objects/store-id`` holds it (created once, linked into place, so two processes
creating a store at once agree on one id), and the index's ``store_meta`` row repeats it.
Every write checks the two agree before it writes anything: an index with another store's
directory, or with an empty one, is refused (exit 2) naming both.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, func, select

from expdna.store.errors import IndexLostError, StoreIdentityError
from expdna.store.index.bulk import insert_ignore
from expdna.store.index.engine import Index, shown
from expdna.store.index.models import Run, StoreMeta
from expdna.store.index.read import EngineReader
from expdna.store.index.schema import STORE_ID_KEY, stored_id
from expdna.store.objects.directory import ObjectDir
from expdna.store.objects.idfile import (
    ID_FILE as ID_FILE,
)
from expdna.store.objects.idfile import (
    create_directory_id as create_directory_id,
)
from expdna.store.objects.idfile import (
    holds_objects as holds_objects,
)
from expdna.store.objects.idfile import (
    read_directory_id as read_directory_id,
)
from expdna.store.objects.interface import ObjectStore

KEY = STORE_ID_KEY


def index_id(conn: Connection) -> str | None:
    return stored_id(EngineReader(conn))


def set_index_id(conn: Connection, store_id: str) -> None:
    conn.execute(insert_ignore(conn, StoreMeta, ["key"]).values(key=KEY, value=store_id))


def bind(objects: ObjectStore | Path, index: Index) -> str:
    """Check that ``index`` and the object directory (or bucket) are one store's, giving a
    new store its id; returns the id. :class:`StoreIdentityError` (exit 2) naming both
    otherwise: an index shared by two buckets, or a bucket holding another store's id."""
    if isinstance(objects, Path):
        objects = ObjectDir(objects)
    where = shown(index.url)
    objects_root = objects.location
    directory = objects.read_id()
    with index.read() as conn:
        recorded = index_id(conn)
        runs = 0 if recorded is not None else conn.execute(select(func.count(Run.id))).scalar()
    if recorded is not None and directory == recorded:
        return recorded
    if recorded is not None:
        held = f"store {directory}" if directory else "no store (it is empty or not a store)"
        raise StoreIdentityError(
            f"index {where} belongs to store {recorded}, but object directory {objects_root} "
            f"holds {held}: point --store at the directory holding store {recorded}'s objects"
        )
    full = objects.holds_objects()
    if not runs and full:
        named = f"store {directory}'s" if directory else "a store's"
        raise IndexLostError(
            f"index {where} is empty or new, but object directory {objects_root} holds "
            f"{named} objects: `expdna reindex` rebuilds the index from them (or point "
            "--index-url at that store's index)"
        )
    if runs and not full:
        raise StoreIdentityError(
            f"index {where} holds {runs} runs, but object directory {objects_root} is empty: "
            "point --store at the directory holding their objects"
        )
    store_id = directory or objects.create_id()
    with index.write() as conn:
        set_index_id(conn, store_id)
        stored = index_id(conn)
    if stored != store_id:  # another writer bound it to another directory meanwhile
        raise StoreIdentityError(
            f"index {where} belongs to store {stored}, but object directory {objects_root} "
            f"holds store {store_id}"
        )
    return store_id
