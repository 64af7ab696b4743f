"""Code outside any git repository: the entry script's folder, recorded by digest.

Where no repository holds the script (a copied folder, an unpacked archive), the source
files under the entry script's folder are the code: each is hashed (BLAKE3, through the
digest cache), bounded like untracked files (at most :data:`MAX_FILES` files, tools'
output folders, Hydra run folders, manifests and hidden folders left out), and the sorted
``[path, digest]`` listing is the tree's digest, which the DNA (version 3) uses as it uses a commit.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from expdna.collectors.outputs import HYDRA_DIRS, OUTPUT_DIRS, is_manifest_file
from expdna.collectors.worktree import FileHasher
from expdna.digest import ref, ref_of

#: Files beyond this many are not listed: the tree is then recorded as truncated.
MAX_FILES = 2000
#: Source and config suffixes that are code.
SOURCE_SUFFIXES = frozenset(
    {".py", ".pyx", ".pyi", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".sh", ".txt"}
)
_SKIPPED_DIRS = frozenset(OUTPUT_DIRS) | frozenset(HYDRA_DIRS)


def _files(top: Path) -> tuple[list[Path], bool]:
    found: list[Path] = []
    for folder, dirs, names in os.walk(top):
        if ".hydra" in dirs and Path(folder) != top:  # a Hydra run folder: a run's outputs
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(names):
            suffix = os.path.splitext(name)[1].lower()
            if suffix not in SOURCE_SUFFIXES:
                continue
            if suffix == ".json" and is_manifest_file(Path(folder, name)):
                continue  # another run's (or this run's) manifest, wherever it is
            found.append(Path(folder, name))
            if len(found) >= MAX_FILES:
                return found, True
    return found, False


def unversioned_tree(top: Path, hasher: FileHasher) -> dict[str, Any]:
    """The ``code`` entry of a folder outside git: its files by digest and the tree's digest."""
    files, truncated = _files(top)
    listing: list[list[str]] = []
    for path in files:
        if not path.is_file() or path.is_symlink():
            continue
        digest, _ = hasher(path)
        listing.append([path.relative_to(top).as_posix(), ref(digest)])
    listing.sort()
    text = "".join(f"{digest}  {name}\n" for name, digest in listing)
    tree: dict[str, Any] = {"digest": ref_of(text.encode("utf-8")), "files": listing}
    if truncated:
        tree["truncated"] = True
    return {"unversioned": True, "tree": tree}
