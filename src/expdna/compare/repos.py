"""Which repository of one run plays which repository's part in another.

Repository names in a manifest are checkout directory names, which differ between clones
(``~/src/model`` and ``/scratch/model-2``). ``check`` and ``diff`` pair them the same way:
by name first, then by a remote that only one repository on each side has, then the only
repository of each side. :func:`live_tops` finds where the live repositories are.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from expdna.collectors import process
from expdna.manifest.model import Repo


def match_repos(a: Mapping[str, Repo], b: Mapping[str, Repo]) -> dict[str, str]:
    """``{name in a: name in b}`` for every repository of ``a`` that ``b`` has a part for.

    One-to-one: a repository of ``b`` plays at most one part.
    """
    pairs: dict[str, str] = {name: name for name in a if name in b}
    left = [name for name in a if name not in pairs]
    free = [name for name in b if name not in pairs.values()]
    for name in left:
        remote = a[name].remote
        if not remote:
            continue
        same = [other for other in free if b[other].remote == remote]
        if len(same) == 1 and sum(a[n].remote == remote for n in left) == 1:
            pairs[name] = same[0]
            free.remove(same[0])
    if len(a) == 1 and len(b) == 1 and not pairs:
        pairs[next(iter(a))] = next(iter(b))
    return pairs


#: Each git call of the live lookup gets this long (a check is not on a run's critical path).
GIT_TIMEOUT_S = 10.0


def _git(where: Path, *args: str) -> process.Completed | None:
    """``git -C where ARGS`` as the collector runs it, or None where git cannot run."""
    from expdna.collectors.git import _GIT_ENV, REPOSITORY_ENV

    try:
        return process.run(
            ["git", "-C", str(where), *args],
            env=_GIT_ENV,
            timeout_s=GIT_TIMEOUT_S,
            unset=REPOSITORY_ENV,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def live_tops(cwd: Path, repos: Iterable[str | os.PathLike[str]] = ()) -> dict[str, Path]:
    """``{live name: top level}`` of the repositories a live check describes: the one
    holding ``cwd``, then ``repos``, named as the git collector names them."""
    from expdna.collectors.git import _names

    tops: list[Path] = []
    for start in [cwd, *(cwd / Path(r) for r in repos)]:
        done = _git(start, "rev-parse", "--show-toplevel")
        if done is None or done.returncode != 0:
            continue
        top = Path(os.fsdecode(done.stdout).strip())
        if top not in tops:
            tops.append(top)
    return dict(zip(_names(tops), tops, strict=True))


def is_ignored(top: Path, path: Path) -> bool:
    """Whether git ignores ``path`` in the work tree ``top`` (so no patch records it)."""
    done = _git(top, "check-ignore", "-q", "--", str(path))
    return done is not None and done.returncode == 0
