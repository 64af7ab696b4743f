"""Where the store's pinned checkpoints lie, read with the standard library alone.

A checkpoint a run pinned inside its checkout (``ckpt.pt`` next to ``train.py``) is that
run's output, not code: the next run of the same command must not get a new DNA from it.
The code collector asks this module at collection time, inside its deadline and in the
training process, so it must cost a few milliseconds and import no SQLAlchemy: one fixed
statement on the local SQLite index opened read-only
(:mod:`expdna.store.index.readonly`), the marks every pin leaves beside the log for any
index (:mod:`expdna.store.objects.pinned`: one directory listing; how a PostgreSQL index's
pins are known here), and the ``pin`` entries still pending in the log (written by an older
training process, not yet applied to the index).

Paths are compared as the store keeps them, which is how the hook and ``expdna pin``
write them: the resolved path, redacted, the user's own home as ``~``. A path redaction
rewrote otherwise (another user's home as ``<HOME>``) is not found again and stays code.
A PostgreSQL index is never asked (no driver in the standard library, and the training
process loads no SQLAlchemy): the marks stand for it; pins made before the marks existed are
marked by ``expdna reindex``. Nothing here raises: an unreadable store knows no pins.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from expdna.store import SQLITE_NAME
from expdna.store.index.readonly import read_only_uri
from expdna.store.objects.log import LOG_DIR, PENDING_DIR, is_entry_name
from expdna.store.objects.pinned import recorded

log = logging.getLogger(__name__)

__all__ = ["pinned_paths"]

_QUERY = "SELECT DISTINCT path FROM pins WHERE path IS NOT NULL"
#: A pending pin entry is a few hundred bytes; anything far larger is not read.
_MAX_PENDING_BYTES = 1 << 20


def _indexed(database: Path, timeout_s: float) -> list[str]:
    if not database.is_file():
        return []
    try:
        with contextlib.closing(
            sqlite3.connect(read_only_uri(database), uri=True, timeout=timeout_s)
        ) as conn:
            return [str(row[0]) for row in conn.execute(_QUERY)]
    except (sqlite3.Error, OSError) as exc:
        log.debug("pins not read from %s: %s", database, exc)
        return []


def _pending(root: Path) -> list[str]:
    log_dir = root / "objects" / LOG_DIR
    try:
        with os.scandir(log_dir / PENDING_DIR) as found:
            names = sorted(e.name for e in found if is_entry_name(e.name))
    except OSError:
        return []
    paths: list[str] = []
    for name in names:
        try:
            with open(log_dir / name, "rb") as handle:
                doc = json.loads(handle.read(_MAX_PENDING_BYTES))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == "pin" and isinstance(doc.get("path"), str):
            paths.append(doc["path"])
    return paths


def _as_local(recorded: str) -> str:
    """A recorded path as a path on this machine (``~/…`` is this user's home)."""
    return os.path.expanduser(recorded) if recorded.startswith("~") else recorded


def pinned_paths(roots: Iterable[Path], *, timeout_s: float = 0.5) -> frozenset[str]:
    """The absolute paths of every checkpoint pinned in the stores at ``roots``."""
    found: set[str] = set()
    for root in roots:
        marked = recorded(root / "objects" / LOG_DIR)
        for kept in [*_indexed(root / SQLITE_NAME, timeout_s), *marked, *_pending(root)]:
            local = _as_local(kept)
            if os.path.isabs(local):
                found.add(os.path.normpath(local))
    return frozenset(found)
