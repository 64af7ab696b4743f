"""What in a work tree is the user's work: a run's outputs are not code, and a large file is
recorded by its digest, never read by git.

Untracked files under the run's own output roots (``output_dir=``, ``$EXPDNA_STORE``,
per-run path arguments such as ``--output-dir``), tools' output folders and expdna
manifests (:mod:`expdna.collectors.outputs`) never make a checkout dirty. Untracked
files over :data:`INLINE_UNTRACKED_MAX` are hashed through the stat-keyed digest cache
instead of going through ``git diff``.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expdna.collectors.config import parse_args
from expdna.collectors.context import CollectContext
from expdna.collectors.outputs import LeftOut, named_places, split_outputs
from expdna.digest import hash_file

log = logging.getLogger(__name__)

#: Untracked files larger than this are recorded by path, size and digest, never given to
#: git's diff (which would read the whole file to decide it is binary, or inline it).
INLINE_UNTRACKED_MAX = 1 << 20


@dataclass
class FileHasher:
    """BLAKE3 of files through the stat-keyed digest cache, so an unchanged large file costs
    a ``stat`` and a lookup; the cache is opened on the first file and closed by the caller.
    ``deadline`` (monotonic) stops hashing that would run past the collector's deadline."""

    use_cache: bool
    environ: Mapping[str, str] | None = None
    deadline: float | None = None
    _cache: Any = field(default=None, init=False)
    _opened: bool = field(default=False, init=False)

    def __call__(self, path: Path) -> tuple[str, int]:
        if self.use_cache and not self._opened:
            from expdna.digest.cache import open_cache

            self._opened = True
            self._cache = open_cache(True, self.environ)
        return hash_file(path, self._cache, on_bytes=self._in_time)

    def _in_time(self, _n: int) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise subprocess.TimeoutExpired(["blake3"], 0)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None


# expdna's own default output (manifest_<run id>.json): writing a manifest into the checkout
# must not make the next run "dirty" and change its DNA.
OWN_OUTPUT = re.compile(rb"(^|/)manifest_\d{8}_\d{6}_[0-9a-z]+_[0-9a-z]{4,}\.json$")


def output_roots(ctx: CollectContext) -> list[Path]:
    """Where this run writes: ``ctx.output_roots``, ``$EXPDNA_STORE``, and the values of
    per-run path arguments (``--output-dir``, ``--save-dir``: the ones the DNA leaves out).
    """
    # Imported here to keep the collectors free of pydantic at import; api.collect has
    # loaded it already, so no collector thread compiles it (see runner on gh-106905).
    from expdna.manifest.dna import is_per_run_arg

    args = ctx.resolved_args if ctx.resolved_args is not None else parse_args(ctx.argv)
    named = [v for k, v in args.items() if is_per_run_arg(str(k)) and isinstance(v, str)]
    store = ctx.environ.get("EXPDNA_STORE")
    candidates = [*ctx.output_roots, *named, *([store] if store else [])]
    candidates += named_places(ctx.environ, ctx.cwd)
    roots = []
    for value in candidates:
        text = str(value)
        if text.strip():
            roots.append(Path(os.path.abspath(ctx.cwd / text)))
    return roots


def exclusions(top: Path, roots: list[Path]) -> list[str]:
    """Pathspecs that leave out the output roots inside ``top`` (never ``top`` itself)."""
    real_top = os.path.realpath(top)
    specs = []
    for root in roots:
        rel = os.path.relpath(os.path.realpath(root), real_top)
        if rel != "." and not rel.startswith(".." + os.sep) and rel != "..":
            specs.append(f":(exclude,literal){rel}")
    return specs


def users_work(listed: bytes, top: Path) -> tuple[list[bytes], LeftOut]:
    """Of ``git ls-files --others -z`` output, (the files that are the user's work, the
    groups left out as outputs: :func:`expdna.collectors.outputs.split_outputs`).

    Left out besides: files named as expdna names its manifests. This run's own output roots
    are left out before, by :func:`exclusions`. An embedded repository is listed as its
    directory with a trailing slash, and stays the user's.
    """
    paths = [path for path in listed.split(b"\0") if path]
    named = [path for path in paths if OWN_OUTPUT.search(path)]
    rest = [os.fsdecode(path) for path in paths if not OWN_OUTPUT.search(path)]
    work, left_out = split_outputs(top, rest)
    for _ in named:
        left_out.add("expdna manifests")
    return [os.fsencode(path) for path in work], left_out


def split_untracked(top: Path, paths: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """(left to git's diff, recorded by digest). A file over :data:`INLINE_UNTRACKED_MAX`
    is never read by git: it costs one hash, and with the digest cache warm one ``stat``.
    Smaller files go through git as before (a binary one is listed by digest there too).
    Other kinds of file (a FIFO, a socket) are left out: opening them could block."""
    inline: list[bytes] = []
    by_digest: list[bytes] = []
    for raw in paths:
        path = top / os.fsdecode(raw)
        try:
            st = os.lstat(path)
        except OSError:
            continue  # gone since git listed it
        if stat.S_ISLNK(st.st_mode):
            inline.append(raw)  # the patch carries the link's target
        elif not stat.S_ISREG(st.st_mode):
            log.info("untracked %s is not a regular file; left out", path)
        elif st.st_size > INLINE_UNTRACKED_MAX:
            by_digest.append(raw)
        else:
            inline.append(raw)
    return inline, by_digest
