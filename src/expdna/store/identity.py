"""A store's identity: one id, written in its object directory and in its index.

A team shares one PostgreSQL index and one object directory, which each machine may mount
at another path; a path cannot say whether an index and a directory belong together, an
id can. ``objects/store-id`` holds it (created once, linked into place, so two processes
creating a store at once agree on one id), and the index's ``store_meta`` row repeats it.
Every write checks the two agree before it writes anything: an index with another store's
directory, or with an empty one, is refused (exit 2) naming both.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from sqlalchemy import Connection, func, select

from expdna.store.errors import IndexLostError, StoreIdentityError
from expdna.store.index.bulk import insert_ignore
from expdna.store.index.engine import Index, shown
from expdna.store.index.models import Run, StoreMeta
from expdna.store.objects.directory import READ_ONLY, fsync_path
from expdna.store.presence import holds_objects

ID_FILE = "store-id"
KEY = "store_id"


def read_directory_id(objects_root: Path) -> str | None:
    try:
        text = (objects_root / ID_FILE).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return text or None


def create_directory_id(objects_root: Path) -> str:
    """The directory's id, made now when it has none (the first writer's id wins)."""
    found = read_directory_id(objects_root)
    if found is not None:
        return found
    objects_root.mkdir(parents=True, exist_ok=True)
    temp = objects_root / f".tmp-store-id-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    temp.write_text(uuid.uuid4().hex + "\n", encoding="utf-8")
    os.chmod(temp, READ_ONLY)
    try:
        os.link(temp, objects_root / ID_FILE)  # atomic, and never replaces (NFS too)
    except FileExistsError:
        pass
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    if os.name == "posix":
        fsync_path(objects_root)
    found = read_directory_id(objects_root)
    assert found is not None
    return found


def index_id(conn: Connection) -> str | None:
    value = conn.execute(select(StoreMeta.value).where(StoreMeta.key == KEY)).scalar()
    return None if value is None else str(value)


def set_index_id(conn: Connection, store_id: str) -> None:
    conn.execute(insert_ignore(conn, StoreMeta, ["key"]).values(key=KEY, value=store_id))


def bind(objects_root: Path, index: Index) -> str:
    """Check that ``index`` and the object directory are one store's, giving a new store
    its id; returns the id. :class:`StoreIdentityError` (exit 2) naming both otherwise."""
    where = shown(index.url)
    directory = read_directory_id(objects_root)
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
    full = holds_objects(objects_root)
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
    store_id = directory or create_directory_id(objects_root)
    with index.write() as conn:
        set_index_id(conn, store_id)
        stored = index_id(conn)
    if stored != store_id:  # another writer bound it to another directory meanwhile
        raise StoreIdentityError(
            f"index {where} belongs to store {stored}, but object directory {objects_root} "
            f"holds store {store_id}"
        )
    return store_id
