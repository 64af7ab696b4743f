"""The digest layer, below collectors and store: BLAKE3 hashing (``hashing``), the
stat-keyed digest cache (``cache``), and ``blake3:`` references (``refs``).

Importing this package loads ``hashing`` and ``refs`` (and blake3); the cache opens SQLite
and is imported where it is used.
"""

from expdna.digest.hashing import CHUNK_BYTES, SMALL_FILE_BYTES, hash_file, hex_of, ref_of
from expdna.digest.refs import ALGORITHM, parse_digest, ref, ref_hex

__all__ = [
    "ALGORITHM",
    "CHUNK_BYTES",
    "SMALL_FILE_BYTES",
    "hash_file",
    "hex_of",
    "parse_digest",
    "ref",
    "ref_hex",
    "ref_of",
]
