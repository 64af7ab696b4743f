"""BLAKE3 digests that carry their algorithm.

Stored references look like ``blake3:<64 hex>`` so that a future algorithm is a migration,
not a rewrite. Raw hex is the BLAKE3 of the raw bytes, so ``b3sum FILE`` verifies it.
"""

from __future__ import annotations

import io
import mmap
import os
import re
from collections.abc import Callable
from pathlib import Path

from blake3 import blake3

ALGORITHM = "blake3"
_REF = re.compile(r"^blake3:[0-9a-f]{64}$")

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
    return f"{ALGORITHM}:{hex_of(data)}"


def hash_file(
    path: str | os.PathLike[str], on_bytes: Callable[[int], None] | None = None
) -> tuple[str, int]:
    """BLAKE3 hex of a file's bytes and how many bytes were hashed.

    ``on_bytes(n)`` is called after each large slice; it may raise to stop hashing.
    The byte count is what was read, which differs from an earlier ``stat`` when the
    file changed in between.
    """
    with open(path, "rb") as fh:
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


def file_hex(path: Path) -> str:
    """BLAKE3 of a file's bytes, read through mmap with threads for large files."""
    return hash_file(path)[0]


def is_ref(value: object) -> bool:
    return isinstance(value, str) and _REF.match(value) is not None
