"""Where the store is: its directory and its index, resolved in one place.

The facade (``Store.open``), the CLI (``--store`` / ``--index-url``) and the training hook
(``expdna.start(store=, index_url=)``) all resolve through :meth:`StoreConfig.resolve`: a
value given wins, else the environment variable when it is set and not empty, else the
default (the user data directory; the SQLite index inside the store). Importing this module
stays light (no SQLAlchemy), so the CLI can resolve it before it knows the command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

STORE_ENV = "EXPDNA_STORE"
INDEX_URL_ENV = "EXPDNA_INDEX_URL"


def default_root() -> Path:
    """The user data directory, ``~/.local/share/expdna`` on Linux."""
    import platformdirs  # only when no directory was named

    return Path(platformdirs.user_data_dir("expdna"))


@dataclass(frozen=True)
class StoreConfig:
    """A store directory and index URL; ``path`` is ``None`` when none was named."""

    path: Path | None = None
    #: A database URL for a shared index; ``None``: SQLite inside the store directory.
    index_url: str | None = None

    @classmethod
    def resolve(
        cls,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> StoreConfig:
        """``path`` / ``url`` when given, else ``$EXPDNA_STORE`` / ``$EXPDNA_INDEX_URL``."""
        if path is None:
            path = environ.get(STORE_ENV) or None
        if url is None:
            url = environ.get(INDEX_URL_ENV) or None
        return cls(path=Path(path) if path is not None else None, index_url=url)

    @property
    def named(self) -> bool:
        """Whether a directory was named (argument or environment), not the default."""
        return self.path is not None

    @property
    def root(self) -> Path:
        """The store directory: the one named, else the user data directory."""
        return self.path if self.path is not None else default_root()
