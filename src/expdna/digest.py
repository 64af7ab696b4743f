"""BLAKE3 digests that carry their algorithm.

Stored references look like ``blake3:<64 hex>`` so that a future algorithm is a migration,
not a rewrite. Raw hex is the BLAKE3 of the raw bytes, so ``b3sum FILE`` verifies it.
"""

from __future__ import annotations

import re
from pathlib import Path

from blake3 import blake3

ALGORITHM = "blake3"
_REF = re.compile(r"^blake3:[0-9a-f]{64}$")


def hex_of(data: bytes) -> str:
    """BLAKE3 of ``data`` as 64 lowercase hex characters."""
    return blake3(data).hexdigest()


def ref_of(data: bytes) -> str:
    """A stored reference to ``data``: ``blake3:<64 hex>``."""
    return f"{ALGORITHM}:{hex_of(data)}"


def file_hex(path: Path) -> str:
    """BLAKE3 of a file's bytes, read through mmap with threads for large files."""
    size = path.stat().st_size
    if size == 0:
        return hex_of(b"")
    if size < 1 << 20:
        return hex_of(path.read_bytes())
    return blake3(max_threads=blake3.AUTO).update_mmap(path).hexdigest()


def is_ref(value: object) -> bool:
    return isinstance(value, str) and _REF.match(value) is not None
