"""Checkpoint files on disk: their digests (through the stat-keyed cache) and where pins say
they were.

A checkpoint is gigabytes; asking ``which`` about the same unchanged file again costs one
``stat`` through the digest cache the data collector keeps
(:func:`expdna.digest.hash_file` with its :mod:`expdna.digest.cache`): a digest is trusted
while the file's device, inode, size, mtime and ctime all match. Small files are hashed
directly (faster than the cache round trip).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from expdna.digest import SMALL_FILE_BYTES, hash_file, parse_digest
from expdna.digest.refs import is_tagged
from expdna.errors import InvalidInputError
from expdna.regular import NotRegularFileError, kind
from expdna.store import pins
from expdna.store.entities import PinRecord
from expdna.store.index.read import IndexReads

if TYPE_CHECKING:
    from expdna.digest.cache import DigestCache, StatKey
    from expdna.store.index.engine import Index
    from expdna.store.objects.interface import LogStore

HOME_MARK = "<HOME>/"


@dataclass
class FileDigests:
    """Digests of files for one command: the persistent cache plus a per-call memo."""

    use_cache: bool = True
    _cache: DigestCache | None = field(default=None, init=False, repr=False)
    _opened: bool = field(default=False, init=False, repr=False)
    _memo: dict[StatKey, str] = field(default_factory=dict, init=False, repr=False)

    def _open(self) -> DigestCache | None:
        if not self._opened:
            from expdna.digest.cache import open_cache

            self._cache = open_cache(self.use_cache)
        self._opened = True
        return self._cache

    def digest(self, path: str | os.PathLike[str]) -> tuple[str, int]:
        """BLAKE3 hex and size of the file at ``path`` (OSError when unreadable)."""
        from expdna.digest.cache import stat_key

        st = os.stat(path)
        key = stat_key(st)
        if key in self._memo:
            return self._memo[key], st.st_size
        cache = self._open() if st.st_size >= SMALL_FILE_BYTES else None
        hex_digest, size = hash_file(path, cache)
        if size == st.st_size:  # it did not change while read: safe to remember
            self._memo[key] = hex_digest
        return hex_digest, size

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def __enter__(self) -> FileDigests:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def local_path(stored: str) -> Path:
    """A pinned path as this machine reads it: a recorded home (``~/``, or ``<HOME>/`` as
    older versions wrote it) is ours."""
    if stored.startswith(HOME_MARK):
        return Path.home() / stored[len(HOME_MARK) :]
    if stored.startswith("~/"):
        return Path.home() / stored[2:]
    return Path(stored)


def with_matches(pins: Iterable[PinRecord], digests: FileDigests) -> list[PinRecord]:
    """Each pin with ``matches``: does the file at its pinned path still hold its digest?

    None when the pin has no path, or nothing readable is there any more.
    """
    result = []
    for pin in pins:
        matches: bool | None = None
        if pin.path:
            where = local_path(pin.path)
            try:
                if where.is_file():
                    matches = digests.digest(where)[0] == pin.digest
            except (OSError, NotRegularFileError):  # swapped for a FIFO since the is_file
                matches = None
        result.append(replace(pin, matches=matches))
    return result


def _digest_of(digests: FileDigests, target: str | os.PathLike[str]) -> tuple[str, int]:
    try:
        return digests.digest(target)
    except OSError as exc:
        raise InvalidInputError(f"{target}: cannot read: {exc.strerror}") from None


def pin_file(
    index: Index,
    log: LogStore,
    path: str | os.PathLike[str],
    *,
    run: str,
    name: str | None = None,
    use_cache: bool = True,
) -> PinRecord:
    """:meth:`expdna.store.Store.pin_file`: hash the file (outside any transaction), pin it."""
    from expdna.manifest.redact import redact_text  # only a pin writes a path

    target = Path(path)
    with FileDigests(use_cache) as digests:
        hex_digest, size = _digest_of(digests, target)
    record = pins.pin(
        index,
        log,
        run_id=run,
        digest=hex_digest,
        name=target.name if name is None else name,
        path=redact_text(str(target.resolve())),
        size=size,
    )
    return replace(record, matches=True)


def which(reads: IndexReads, target: str, *, use_cache: bool = True) -> list[PinRecord]:
    """:meth:`expdna.store.Store.which`: a file by content, ``blake3:<hex>``, else a name."""
    with FileDigests(use_cache) as digests:
        if os.path.isfile(target):
            hex_digest = _digest_of(digests, target)[0]
            with reads.read() as conn:
                return [replace(p, matches=True) for p in pins.by_digest(conn, hex_digest)]
        if os.path.exists(target):
            raise InvalidInputError(
                f"{target}: not a regular file ({kind(os.stat(target).st_mode)}), "
                "not a checkpoint file"
            )
        with reads.read() as conn:
            if is_tagged(target):
                found = pins.by_digest(conn, parse_digest(target))
            else:
                found = pins.by_name(conn, target)
        return with_matches(found, digests)
