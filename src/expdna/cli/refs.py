"""Manifests named by a file or by the store: what ``diff`` and ``check`` compare.

A path that exists is a file. Anything else that reads as a run id or a DNA prefix (>= 6
hex) is looked up in the store (``show``'s resolver: an ambiguous prefix lists its
candidates, exit 2; an unknown run is exit 1; no store to look in, exit 2). Text that can
only be a file name (it holds a path separator or ends in ``.json``) stays a missing file
(exit 2), and no store is
created just to find out that a name is not in it. Importing this module stays light: the
store (SQLAlchemy) is opened only when a name needs it, and once for all names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from expdna.manifest.io import load_manifest
from expdna.manifest.model import Manifest
from expdna.store.config import StoreConfig
from expdna.store.errors import RunNotFoundError, StoreError

if TYPE_CHECKING:
    from expdna.store.facade import Store


def _is_file_name(text: str) -> bool:
    from expdna.manifest.runid import RUN_ID

    return (
        os.path.exists(text)
        or os.sep in text
        or "/" in text
        or text.endswith(".json")
        or RUN_ID.fullmatch(text) is None
    )


def _open(config: StoreConfig, missing: str) -> Store:
    from expdna.store import SQLITE_NAME
    from expdna.store.facade import Store
    from expdna.store.presence import require_index

    root = config.root
    require_index(config)
    if config.index_url is None and not (root / SQLITE_NAME).is_file():
        raise StoreError(  # exit 2, as every query on a missing store
            f"{missing}: no such file, and no store at {root} to look it up in "
            "(--store DIR or EXPDNA_STORE)"
        )
    return Store.from_config(config, read_only=True)


def load_manifests(refs: Sequence[str], config: StoreConfig) -> list[Manifest]:
    """Each of ``refs`` as a manifest: a file, or a run id / DNA prefix from the store."""
    loaded: dict[int, Manifest] = {
        i: load_manifest(ref) for i, ref in enumerate(refs) if _is_file_name(ref)
    }
    wanted = [i for i in range(len(refs)) if i not in loaded]
    if wanted:
        with _open(config, refs[wanted[0]]) as store:
            for i in wanted:
                try:
                    loaded[i] = store.load(refs[i])
                except RunNotFoundError as exc:
                    raise RunNotFoundError(f"{refs[i]}: no such file; {exc}") from None
    return [loaded[i] for i in range(len(refs))]
