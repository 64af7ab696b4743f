"""Which repository of one run plays which repository's part in another.

Repository names in a manifest are checkout directory names, which differ between clones
(``~/src/model`` and ``/scratch/model-2``). ``check`` and ``diff`` pair them the same way:
by name first, then by a remote that only one repository on each side has, then the only
repository of each side.
"""

from __future__ import annotations

from collections.abc import Mapping

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
