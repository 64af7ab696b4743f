"""The command being recorded: argv as given, the working directory, and the entry script
relative to its repository (``command.entry``), so the DNA's command names the script the
same way from any working directory (:mod:`expdna.manifest.command_identity`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from expdna.collectors.context import CollectContext
from expdna.manifest.command_line import parse_command

#: How many folders above the script are searched for the repository's ``.git``.
MAX_DEPTH = 64


def entry_in_repository(script: str, cwd: Path) -> str | None:
    """``script`` relative to the top of the git work tree holding it (``/``-separated);
    None when it is in none, or is not a file. Reads no more than ``stat`` calls."""
    if not script or "\0" in script or len(script) > 4096:
        return None
    path = Path(os.path.abspath(cwd / os.path.expanduser(script)))
    if not path.is_file():
        return None
    folder = path.parent
    for _ in range(MAX_DEPTH):
        if (folder / ".git").exists():
            return path.relative_to(folder).as_posix()
        if folder.parent == folder:
            return None
        folder = folder.parent
    return None


def collect_command(ctx: CollectContext) -> dict[str, Any]:
    section: dict[str, Any] = {"argv": list(ctx.argv), "cwd": str(ctx.cwd)}
    script = parse_command(ctx.argv).script
    entry = entry_in_repository(script, ctx.cwd) if script else None
    if entry is not None:
        section["entry"] = entry
    return section
