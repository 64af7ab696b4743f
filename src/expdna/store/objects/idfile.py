"""The store id file of an object directory (``objects/store-id``), read and created.

Standard library only: the object directory and its helper process load it without the
index (expdna.store.identity checks the id against the index).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from expdna.store.objects.directory import READ_ONLY, fsync_path
from expdna.store.objects.log import LOG_DIR

ID_FILE = "store-id"


def new_id() -> str:
    import uuid  # only a new store makes an id

    return uuid.uuid4().hex


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
    temp = objects_root / f".tmp-store-id-{os.getpid()}-{new_id()[:8]}"
    temp.write_text(new_id() + "\n", encoding="utf-8")
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


def holds_objects(objects_root: Path) -> bool:
    """Whether the directory holds any object or log entry (one look per fan-out dir)."""
    if not objects_root.is_dir():
        return False
    for entry in os.scandir(objects_root):
        if entry.is_dir() and (len(entry.name) == 2 or entry.name == LOG_DIR):
            with os.scandir(entry.path) as inner:
                if any(not e.name.startswith(".") for e in inner):
                    return True
    return False
