"""Pinned checkpoint paths beside the log, for readers that have no index at hand.

The code collector runs in the training process and must tell a pinned checkpoint in the
checkout from code in a few milliseconds, importing neither SQLAlchemy nor a database driver
(the standard library has none for PostgreSQL). The log's ``pin`` entries hold every pin, but
among thousands of ``record`` and ``metrics`` entries; so each pin also leaves one marker,
``objects/log/pinned/p-<the path, base64url>`` (a path too long for a file name:
``h-<BLAKE3 of the path>`` holding the path), and one directory listing answers for any
index. Markers are written after the pin is durable (its entry, and its index row where this
process writes one), linked into place like log entries (never rewritten: many writers on
many machines need no lock), and rebuilt by ``expdna reindex`` from the log. The path is the
one the pin entry holds: resolved, redacted, this user's home as ``~``.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import time
from pathlib import Path

from expdna.regular import NotRegularFileError, open_regular
from expdna.store.objects.log import StoreLog

log = logging.getLogger(__name__)

PINNED_DIR = "pinned"
#: Longer names are kept as a digest with the path inside (a file name has 255 bytes).
_NAME_MAX = 200
_INLINE = "p-"
_HASHED = "h-"
#: A path is a few hundred bytes; a marker far larger is not read.
_MAX_BYTES = 64 * 1024


def _name(path: str) -> str:
    encoded = base64.urlsafe_b64encode(os.fsencode(path)).rstrip(b"=").decode("ascii")
    if len(encoded) + len(_INLINE) <= _NAME_MAX:
        return _INLINE + encoded
    from expdna.digest import hex_of

    return _HASHED + hex_of(os.fsencode(path))


def remember(log_root: Path, path: str) -> None:
    """Leave the marker of a pinned ``path`` under ``log_root`` (``objects/log``). Never
    raises: a store that cannot take it keeps the pin, and the file counts as code."""
    folder = log_root / PINNED_DIR
    final = folder / _name(path)
    if final.exists():
        return
    temp = folder / f".tmp-pinned-{os.getpid()}-{time.monotonic_ns()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            os.write(fd, os.fsencode(path))
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):
            os.link(temp, final)  # never replaces: the same name is the same path
    except OSError as exc:
        log.warning("pinned path %s not marked in %s: %s", path, folder, exc)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def mark_path(store_log: object, path: object) -> None:
    """Mark a pinned ``path`` beside a store directory's log (:class:`StoreLog`); a log in
    a bucket has no reader of marks."""
    if isinstance(store_log, StoreLog) and isinstance(path, str) and path:
        remember(store_log.root, path)


def recorded(log_root: Path) -> list[str]:
    """Every pinned path marked under ``log_root``: one directory listing (a marker named by
    a digest is read too). Nothing raises: an unreadable folder marks nothing."""
    folder = log_root / PINNED_DIR
    try:
        with os.scandir(folder) as found:
            names = [e.name for e in found]
    except OSError:
        return []
    paths: list[str] = []
    for name in names:
        if name.startswith(_INLINE):
            encoded = name[len(_INLINE) :]
            try:
                raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            except ValueError:
                continue
            paths.append(os.fsdecode(raw))
        elif name.startswith(_HASHED):
            try:  # read as untrusted: a FIFO must not block
                with open(open_regular(str(folder / name)), "rb") as handle:
                    paths.append(os.fsdecode(handle.read(_MAX_BYTES)))
            except (OSError, NotRegularFileError):
                continue
    return paths
