"""Version strings as the checks read them: leading numeric release parts, nothing more.

Versions come from many reporters (``platform``, ``importlib.metadata``, ``nvidia-smi``,
``torch.version``), so parsing is deliberately lenient: ``2.1.0+cu121``, ``v12.4``,
``8.9.2.26`` and ``2.23.4`` all yield their numbers; anything without a leading number
is "unparsed" and compared as text.
"""

from __future__ import annotations

import re
from typing import Literal

_RELEASE = re.compile(r"^\s*[vV]?(\d+(?:\.\d+)*)")

Change = Literal["same", "patch", "minor", "major", "unparsed"]


def release(version: str) -> tuple[int, ...] | None:
    """The leading numeric parts of ``version`` (``"2.1.0+cu121"`` -> ``(2, 1, 0)``)."""
    match = _RELEASE.match(version)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def major(version: str) -> int | None:
    parts = release(version)
    return parts[0] if parts else None


def change(old: str, new: str) -> Change:
    """How far apart two versions are: the most significant release part that differs.

    Equal strings are ``same``; strings whose numbers are equal but whose text differs
    (``2.1.0+cu118`` vs ``2.1.0+cu121``) are ``patch``, because the build differs.
    """
    if old == new:
        return "same"
    a, b = release(old), release(new)
    if a is None or b is None:
        return "unparsed"
    if a[0] != b[0]:
        return "major"
    # A missing part reads as 0, so "12" and "12.0" are the same minor release.
    if (a[1] if len(a) > 1 else 0) != (b[1] if len(b) > 1 else 0):
        return "minor"
    return "patch"
