"""The files a patch touches, with their added and removed line counts.

A changed ``patch.digest`` says only that the uncommitted work differs; the files whose part
of the patch differs, with ``+``/``-`` counts per side, say where.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from blake3 import blake3

_HEADER = re.compile(r"^diff --git a/(?P<a>.*) b/(?P<b>.*)$")
#: How ``git diff`` marks a binary file's part, without and with ``--binary``.
_BINARY = ("Binary files ", "GIT binary patch")


@dataclass(frozen=True)
class FileStat:
    added: int
    removed: int
    #: blake3 hex of this file's part of the patch: equal counts can hide different lines.
    digest: str
    #: A binary file (a checkpoint left in the checkout): it has no lines to count.
    binary: bool = False

    def to_dict(self) -> dict[str, int]:
        counts = {"added": self.added, "removed": self.removed}
        return counts | {"binary": True} if self.binary else counts


def file_stats(text: str) -> dict[str, FileStat]:
    """``{path: FileStat}`` for each file of a ``git diff`` text, in patch order."""
    parts: dict[str, list[str]] = {}
    lines: list[str] | None = None
    for line in text.split("\n"):
        header = _HEADER.match(line)
        if header:
            lines = parts.setdefault(header["b"], [])
        if lines is not None:
            lines.append(line)
    stats = {}
    for path, part in parts.items():
        body = [ln for ln in part if not ln.startswith(("+++ ", "--- "))]
        stats[path] = FileStat(
            added=sum(ln.startswith("+") for ln in body),
            removed=sum(ln.startswith("-") for ln in body),
            digest=blake3("\n".join(part).encode("utf-8", "surrogatepass")).hexdigest(),
            binary=any(ln.startswith(_BINARY) for ln in body),
        )
    return stats


def changed_files(old: str | None, new: str | None) -> list[dict[str, Any]]:
    """``[{"path", "a", "b"}]``: the files whose part differs between two patch texts,
    ``a``/``b`` being ``{"added", "removed"}`` or ``None`` where a side does not touch it."""
    stats_a = file_stats(old) if old else {}
    stats_b = file_stats(new) if new else {}
    out = []
    for path in dict.fromkeys([*stats_a, *stats_b]):
        a, b = stats_a.get(path), stats_b.get(path)
        if a is not None and b is not None and a.digest == b.digest:
            continue
        out.append(
            {
                "path": path,
                "a": a.to_dict() if a else None,
                "b": b.to_dict() if b else None,
            }
        )
    return out
