"""BLAKE3 of bytes and of files.

Raw hex is the BLAKE3 of the raw bytes, so ``b3sum FILE`` verifies it; the stored,
algorithm-tagged form is :mod:`expdna.digest.refs`. Every file expdna hashes goes through
:func:`hash_file`, which takes the stat-keyed cache as an argument (as dvc-data's
``hash_file(path, fs, name, state=None)`` takes its state).
"""

from __future__ import annotations

import io
import mmap
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from blake3 import blake3

from expdna.digest.refs import ref
from expdna.regular import open_regular

if TYPE_CHECKING:  # the cache loads sqlite3; only its callers need it
    from expdna.digest.cache import DigestCache

#: Files below this are read into memory in one call; a thread pool and mmap cost more
#: than they save there (benchmarks/data_bench.py).
SMALL_FILE_BYTES = 1 << 20
#: Large files are hashed through mmap in slices of this size, each with BLAKE3's own
#: threads: as fast as ``update_mmap`` (within noise on 2 cores, 8.3-8.5 GiB/s for 16 to
#: 256 MiB slices), and it gives the caller a point between slices to report progress or
#: stop.
CHUNK_BYTES = 64 << 20


def hex_of(data: bytes) -> str:
    """BLAKE3 of ``data`` as 64 lowercase hex characters."""
    return blake3(data).hexdigest()


def ref_of(data: bytes) -> str:
    """A stored reference to ``data``: ``blake3:<64 hex>``."""
    return ref(hex_of(data))


def hash_file(
    path: str | os.PathLike[str],
    cache: DigestCache | None = None,
    *,
    on_bytes: Callable[[int], None] | None = None,
) -> tuple[str, int]:
    """BLAKE3 hex of a file's bytes and its size.

    With a ``cache``, an unchanged file (same device, inode, size, mtime and ctime) costs
    a stat and one lookup, and a newly hashed one is kept there. ``on_bytes(n)`` is called
    after each large slice that is read; it may raise to stop hashing. The size is what
    was read, which differs from an earlier ``stat`` when the file changed in between.
    """
    if cache is None:
        return _hash_path(path, on_bytes)
    from expdna.digest.cache import stat_key  # loaded already: the cache is open

    now_ns = time.time_ns()  # before the stat: the racy-file rule compares with it
    st = os.stat(path)
    key = stat_key(st)
    hit = cache.lookup([key])[0]
    if hit is not None:
        return hit, st.st_size
    hex_digest, size = _hash_path(path, on_bytes)
    if size == st.st_size:  # it did not change while read: safe to vouch for
        cache.store([(key, hex_digest)], now_ns)
    return hex_digest, size


def _hash_path(
    path: str | os.PathLike[str], on_bytes: Callable[[int], None] | None
) -> tuple[str, int]:
    # a FIFO or a device is refused before reading: a read there can block or never end
    with open(open_regular(os.fspath(path)), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < SMALL_FILE_BYTES:
            data = fh.read()
            return blake3(data).hexdigest(), len(data)
        hasher = blake3(max_threads=blake3.AUTO)
        try:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError:  # a file system without mmap (some FUSE mounts): read it
            return _hash_reading(fh, hasher, on_bytes)
        with mapped, memoryview(mapped) as view:
            length = len(view)
            for start in range(0, length, CHUNK_BYTES):
                with view[start : start + CHUNK_BYTES] as chunk:
                    hasher.update(chunk)
                if on_bytes is not None:
                    on_bytes(min(CHUNK_BYTES, length - start))
        return hasher.hexdigest(), length


def _hash_reading(
    fh: io.BufferedReader, hasher: blake3, on_bytes: Callable[[int], None] | None
) -> tuple[str, int]:
    buffer = bytearray(CHUNK_BYTES)
    length = 0
    with memoryview(buffer) as view:
        while n := fh.readinto(view):
            with view[:n] as chunk:
                hasher.update(chunk)
            length += n
            if on_bytes is not None:
                on_bytes(n)
    return hasher.hexdigest(), length
