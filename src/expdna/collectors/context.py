"""What every collector is handed: the request, never global state."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CollectContext:
    """The inputs of one collection.

    Collectors read only from here (and from the live system they describe), so tests can
    hand them a temp repo, a fake environment or a recorded ``nvidia-smi`` output.
    """

    argv: tuple[str, ...] = ()
    cwd: Path = field(default_factory=Path.cwd)
    repos: tuple[Path, ...] = ()
    #: The ``--data`` paths as the user wrote them, not as ``Path`` objects: a warning
    #: names them, and redaction must see ``s3://key:secret@b`` before a ``Path`` folds
    #: its ``//`` (``s3:/key:secret@b`` no longer reads as a URL).
    data: tuple[str | Path, ...] = ()
    caller_file: Path | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    timeout_s: float = 4.0
    #: Arguments the caller already parsed (argparse defaults included); beats parsing argv.
    resolved_args: Mapping[str, Any] | None = None
    #: Where ``resolved_args`` came from when not from argv (``"code"``): recorded as
    #: ``config.settings_source``, which puts them in the version-3 DNA.
    settings_source: str | None = None
    #: Trust the persistent digest cache for data files (False: hash every file again).
    use_cache: bool = True
    #: Called with a ``data.Progress`` while data files are hashed (a CLI renders it).
    progress: Callable[[Any], None] | None = None
    #: Where this run writes (``output_dir=``, the store): files there are not code.
    output_roots: tuple[Path, ...] = ()
    #: ``argv`` runs in another process (``generate``, ``expdna run``): an interpreter it
    #: names that is not this one is probed for the environment. False in the hook, whose
    #: process *is* the command's interpreter.
    probe_interpreter: bool = False
    #: The absolute paths of checkpoints pinned in the store (asked only when an untracked
    #: file could be one): they are some run's outputs, not code.
    pinned: Callable[[], frozenset[str]] | None = None


class NotAvailable(Exception):
    """Raised by a collector to say "this source does not exist here" (status: skipped)."""


class Partial(Exception):
    """Raised by a collector that got part of its section: the partial section is kept."""

    def __init__(self, section: dict[str, object], reason: str) -> None:
        super().__init__(reason)
        self.section = section
        self.reason = reason


class Unknown(Partial):
    """Raised by a collector that got part of its section and knows the rest would change
    its identity (a config file it could not read): the partial section is kept, and the
    DNA section is marked unknown with ``reason`` (the honest-identity rule)."""


class Noted(dict[str, Any]):
    """A collector's section with notes for the manifest's ``collection``: what it left out
    and why, said once (``left out as outputs: wandb/ (412 files)``). Not warnings: nothing
    went wrong."""

    def __init__(self, section: Mapping[str, Any], notes: list[str]) -> None:
        super().__init__(section)
        self.notes = list(notes)
