"""Data files: a BLAKE3 digest per file and a digest of the sorted listing per dataset."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from expdna.collectors.context import CollectContext, Partial
from expdna.digest import file_hex, ref_of


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        found.extend(Path(dirpath, name) for name in sorted(filenames))
    return found


def listing(root: Path) -> tuple[bytes, int, int]:
    """The dataset listing (``relpath\\tsize\\tblake3:hex`` lines, sorted), file count, bytes."""
    lines = []
    total = 0
    base = root.parent if root.is_file() else root
    for path in _files(root):
        size = path.stat().st_size
        total += size
        rel = path.relative_to(base).as_posix()
        lines.append(f"{rel}\t{size}\tblake3:{file_hex(path)}\n")
    lines.sort()
    return "".join(lines).encode("utf-8"), len(lines), total


def describe_dataset(root: Path) -> dict[str, Any]:
    data, count, total = listing(root)
    return {"root": str(root), "digest": ref_of(data), "files": count, "bytes": total}


def collect_data(ctx: CollectContext) -> dict[str, Any]:
    datasets, problems = [], []
    for path in ctx.data:
        root = path if path.is_absolute() else ctx.cwd / path
        if not root.exists():
            problems.append(f"no such file or directory: {path}")
            continue
        datasets.append(describe_dataset(root))
    if problems:
        raise Partial({"datasets": datasets}, "; ".join(problems))
    return {"datasets": datasets}
