"""Where the store is: its directory (or bucket) and its index, resolved in one place.

The facade (``Store.open``), the CLI (``--store`` / ``--index-url``) and the training hook
(``expdna.start(store=, index_url=)``) all resolve through :meth:`StoreConfig.resolve`: a
value given wins, else the environment variable when it is set and not empty, else the
default (the user data directory; the SQLite index inside the store). A store named
``s3://BUCKET/PREFIX`` lives on S3-compatible storage (expdna.store.objects.s3); its SQLite
index, when no ``--index-url`` names a shared one, lives in a local cache directory for
that bucket and prefix. Importing this module stays light (no SQLAlchemy), so the CLI can
resolve it before it knows the command.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from expdna.errors import InvalidInputError

STORE_ENV = "EXPDNA_STORE"
INDEX_URL_ENV = "EXPDNA_INDEX_URL"
#: The URL scheme of a store on S3-compatible storage.
S3_SCHEME = "s3://"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def default_root() -> Path:
    """The user data directory, ``~/.local/share/expdna`` on Linux."""
    import platformdirs  # only when no directory was named

    return Path(platformdirs.user_data_dir("expdna"))


def cache_root(remote: str) -> Path:
    """The local directory for a remote store's SQLite index (``~/.cache/expdna/s3/...``)."""
    import platformdirs

    rest = remote[len(S3_SCHEME) :].strip("/")
    parts = [_UNSAFE.sub("_", part) for part in rest.split("/") if part not in ("", ".", "..")]
    return Path(platformdirs.user_cache_dir("expdna")).joinpath("s3", *parts)


def _set(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name, "")
    return value if value.strip() else None


@dataclass(frozen=True)
class StoreConfig:
    """A store directory and index URL; ``path`` is ``None`` when none was named."""

    path: Path | None = None
    #: A database URL for a shared index; ``None``: SQLite inside the store directory.
    index_url: str | None = None
    #: ``s3://BUCKET/PREFIX`` for a store on S3-compatible storage, else ``None``.
    remote: str | None = None

    @classmethod
    def resolve(
        cls,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> StoreConfig:
        """``path`` / ``url`` when given, else ``$EXPDNA_STORE`` / ``$EXPDNA_INDEX_URL``."""
        # An empty (or blank) variable is unset, as a shell's `EXPDNA_STORE=` means.
        if path is None:
            path = _set(environ, STORE_ENV)
        if url is None:
            url = _set(environ, INDEX_URL_ENV)
        # An empty name given on purpose (``--store ""``, ``store=""``) is a mistake, not the
        # current directory: a store would be made in the checkout.
        if path is not None and not str(path).strip():
            raise InvalidInputError(f"store: {path!r} is an empty path; name a directory")
        if url is not None and not url.strip():
            raise InvalidInputError(f"index URL: {url!r} is empty; name a database URL")
        if isinstance(path, str) and path.startswith(S3_SCHEME):
            return cls(path=None, index_url=url, remote=path)
        return cls(path=Path(path) if path is not None else None, index_url=url)

    @property
    def named(self) -> bool:
        """Whether a directory was named (argument or environment), not the default."""
        return self.path is not None or self.remote is not None

    @property
    def root(self) -> Path:
        """The store directory: the one named, else the user data directory; for a remote
        store, its local cache directory."""
        if self.remote is not None:
            return cache_root(self.remote)
        return self.path if self.path is not None else default_root()

    @property
    def shown(self) -> str:
        """The store for messages: its directory, or its ``s3://`` URL."""
        return self.remote if self.remote is not None else str(self.root)
