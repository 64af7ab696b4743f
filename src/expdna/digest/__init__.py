"""The digest layer, below collectors and store: BLAKE3 hashing (``hashing``), the
stat-keyed digest cache (``cache``), and ``blake3:`` references (``refs``).

Importing this package loads only ``hashing`` (and blake3); the cache opens SQLite and is
imported where it is used.
"""

from expdna.digest.hashing import (
    ALGORITHM,
    CHUNK_BYTES,
    SMALL_FILE_BYTES,
    file_hex,
    hash_file,
    hex_of,
    is_ref,
    ref_of,
)

__all__ = [
    "ALGORITHM",
    "CHUNK_BYTES",
    "SMALL_FILE_BYTES",
    "file_hex",
    "hash_file",
    "hex_of",
    "is_ref",
    "ref_of",
]
