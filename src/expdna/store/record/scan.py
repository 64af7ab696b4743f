"""Which files ``record --scan`` records, and why it passes over the others.

Every ``.json`` file below the directory is looked at once, in sorted order: a regular file
named ``manifest_*.json`` is recorded; any other ``.json`` file is passed over with a reason,
so a manifest saved under another name is not silently missed.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from expdna.regular import kind

PATTERN = "manifest_*.json"


def candidates(
    directory: Path, passed_over: Callable[[Path, str], None] | None = None
) -> Iterator[Path]:
    """The manifest files below ``directory``; ``passed_over`` hears of every other one."""
    for path in sorted(directory.rglob("*.json")):
        named = fnmatch.fnmatchcase(path.name, PATTERN)
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:  # a dangling symlink, a file removed meanwhile
            reason = f"cannot read: {exc.strerror}"
        else:
            if stat.S_ISREG(mode):
                if named:
                    yield path
                    continue
                reason = f"not named {PATTERN}"
            else:
                reason = f"not a regular file ({kind(mode)})"
        if passed_over is not None:
            passed_over(path, reason)
