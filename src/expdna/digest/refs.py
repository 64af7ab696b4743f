"""References that carry their algorithm: ``blake3:<64 hex>``.

Stored references are tagged so that a future algorithm is a migration, not a rewrite;
the store's tables and object names keep the bare hex. Every conversion between the two
forms goes through this module: :func:`ref` builds one, :func:`ref_hex` splits a stored one,
and :func:`parse_digest` validates what a user typed before it reaches the filesystem.
"""

from __future__ import annotations

import re

from expdna.errors import InvalidDigestError

ALGORITHM = "blake3"
#: The tag in front of the hex of a stored reference.
PREFIX = f"{ALGORITHM}:"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_REF = re.compile(rf"{ALGORITHM}:([0-9a-f]{{64}})")


def ref(hex_digest: str) -> str:
    """The stored reference form of a digest: ``blake3:<hex>``."""
    return PREFIX + hex_digest


def ref_hex(value: str) -> str | None:
    """The 64 hex of a stored reference ``blake3:<64 lowercase hex>``; None for anything
    else (another algorithm, bare hex, a truncated or upper-case digest)."""
    match = _REF.fullmatch(value)
    return None if match is None else match.group(1)


def is_tagged(value: str) -> bool:
    """Whether ``value`` claims to be a reference (starts ``blake3:``), valid or not: what
    a user meant as a digest rather than a name."""
    return value.startswith(PREFIX)


def parse_digest(value: str) -> str:
    """The 64 hex of ``[blake3:]<64 lowercase hex>``; anything else is :class:`InvalidDigestError`.

    A digest names a file path inside the object directory, so nothing but hex gets through.
    """
    hex_part = value[len(PREFIX) :] if value.startswith(PREFIX) else value
    if _HEX64.fullmatch(hex_part) is None:
        raise InvalidDigestError(value)
    return hex_part
