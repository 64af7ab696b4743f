"""A local copy of objects read from a bucket, so the next read of one is not a request.

Objects are named by the BLAKE3 of their bytes, so a cached copy needs no invalidation: it
is right exactly when it still hashes to its name, which every read from here checks (a
copy that does not is removed and the object read from the bucket again). Only bytes that
were verified are cached, only objects up to :data:`MAX_BYTES`, and nothing here is ever
the source of truth: ``fsck``, the recorder's checks and gc ask the bucket itself. The
copies live under the remote store's local cache directory (``<cache>/blobs``, beside its
SQLite index); deleting that directory at any time loses nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from expdna.digest import hex_of

log = logging.getLogger(__name__)

#: The cache's directory under a remote store's local cache directory.
BLOBS = "blobs"
#: Larger objects (a big listing) are not kept: a manifest is a few KB.
MAX_BYTES = 4 << 20


class ReadCache:
    """Verified copies of objects under ``root/<2 hex>/<62 hex>``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def get(self, digest: str, max_bytes: int | None = None) -> bytes | None:
        """The object's bytes when a copy is here and still hashes to ``digest``."""
        path = self._path(digest)
        try:
            if max_bytes is not None and path.stat().st_size > max_bytes:
                return None  # the bucket's read says why it is not loaded
            data = path.read_bytes()
        except OSError:
            return None
        if hex_of(data) == digest:
            return data
        log.info("cached copy of object %s is damaged; removed", digest)
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def put(self, digest: str, data: bytes) -> None:
        """Keep a copy of verified bytes (best effort: a cache that cannot be written is
        only slower)."""
        if len(data) > MAX_BYTES:
            return
        path = self._path(digest)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_bytes(data)
            os.replace(temp, path)  # a reader sees a whole copy or none
        except OSError as exc:
            log.debug("object %s not cached: %s", digest, exc)
            with contextlib.suppress(OSError):
                temp.unlink()
