"""Validating digests that users pass in, before any of them reaches the filesystem."""

from __future__ import annotations

import re

from expdna.digest import ALGORITHM
from expdna.store.errors import InvalidDigestError

_HEX64 = re.compile(r"[0-9a-f]{64}")
_PREFIX = f"{ALGORITHM}:"


def parse_digest(value: str) -> str:
    """The 64 hex of ``[blake3:]<64 lowercase hex>``; anything else is :class:`InvalidDigestError`.

    A digest names a file path inside the object directory, so nothing but hex gets through.
    """
    hex_part = value[len(_PREFIX) :] if value.startswith(_PREFIX) else value
    if _HEX64.fullmatch(hex_part) is None:
        raise InvalidDigestError(value)
    return hex_part


def ref(hex_digest: str) -> str:
    """The stored reference form of a digest: ``blake3:<hex>``."""
    return f"{_PREFIX}{hex_digest}"
