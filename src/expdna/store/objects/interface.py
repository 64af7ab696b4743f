"""What the store needs of the place its objects live: one interface, two kinds of place.

:class:`ObjectStore` is what everything above the object layer (record, show, pin, link,
gc, fsck, reindex, the web view) calls; :class:`expdna.store.objects.directory.ObjectDir`
(a directory, local or on NFS) and :class:`expdna.store.objects.s3.S3Objects` (a bucket on
S3-compatible storage) implement it. Both hold the same layout: ``objects/<2 hex>/<62 hex>``
named by the BLAKE3 of the raw bytes, the store id at ``objects/store-id``, the log entries
under ``objects/log/`` (:class:`LogStore`), and gc's trash under ``objects/trash/``. No
object is ever rewritten with other bytes, and every read that matters is verified.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from expdna.store.objects.log import LogEntry


@dataclass(frozen=True)
class Stat:
    """An object's size and modification time (seconds since the epoch)."""

    size: int
    mtime: float


class LogStore(Protocol):
    """The store's log entries (:mod:`expdna.store.objects.log`), wherever they live."""

    #: Where the entries are: a directory, or a key prefix in a bucket.
    root: Any

    def append(
        self, kind: str, body: dict[str, Any], *, at: datetime | None = None, pending: bool = False
    ) -> LogEntry: ...

    def add(self, name: str, data: bytes, *, pending: bool = False) -> None:
        """Write an entry :func:`expdna.store.objects.log.encode_entry` encoded already."""
        ...

    def pending(self) -> list[str]:
        """Entries written for the index to apply later (the training hook's), oldest first."""
        ...

    def clear_pending(self, name: str) -> None: ...

    def names(self) -> list[str]: ...

    def read(self, name: str, *, verify: bool = True) -> LogEntry: ...

    def entries(self) -> Iterator[LogEntry]: ...

    def age_s(self, name: str, now: float | None = None) -> float: ...

    def withdraw(self, name: str) -> None: ...


@runtime_checkable
class ObjectStore(Protocol):
    """Content-addressed, create-only blobs, plus the store id, log and gc's trash."""

    #: Where the objects are, for messages: a directory or ``s3://bucket/prefix/objects``.
    @property
    def location(self) -> str: ...

    # -- objects ---------------------------------------------------------------------
    def has(self, digest: str) -> bool: ...

    def put(self, data: bytes) -> str: ...

    def put_many(self, blobs: Iterable[bytes]) -> list[str]:
        """Store every blob durably (in parallel where the place allows); their digests."""
        ...

    def rewrite(self, blobs: Iterable[bytes]) -> None:
        """Write ``blobs`` again where an object is missing or damaged (same bytes)."""
        ...

    def read(self, digest: str, *, max_bytes: int | None = None) -> bytes:
        """``max_bytes``: a larger object is UnreadableObjectError, not loaded."""
        ...

    def read_verified(self, digest: str, *, max_bytes: int | None = None) -> bytes: ...

    def verify(self, digest: str) -> None: ...

    def holds(self, digest: str, data: bytes) -> bool: ...

    def present(self, digest: str, size: int) -> bool:
        """Whether the object is there with ``size`` bytes, asked of the place itself (no
        cache): the recorder's check after its commit, which gc's safety rests on."""
        ...

    def present_many(self, wanted: Mapping[str, int]) -> set[str]:
        """Those of ``wanted`` (digest -> size) that are :meth:`present`."""
        ...

    def stat(self, digest: str) -> Stat | None: ...

    def irregular(self) -> Iterator[tuple[str, str]]:
        """(digest, what it is) of each entry at an object path that is not a regular file
        (a directory's FIFOs, folders, links; a bucket holds none)."""
        ...

    def listing(self, fan: str) -> dict[str, Stat]:
        """The objects whose digest starts with ``fan`` (2 hex), a page at a time."""
        ...

    def __iter__(self) -> Iterator[str]: ...

    def remove(self, digest: str) -> None: ...

    def temp_files(self) -> Iterator[Any]:
        """Temporary files left by stopped writers (a bucket has none)."""
        ...

    # -- gc's trash --------------------------------------------------------------------
    def trash(self, digest: str) -> str | None:
        """Move the object out of its place; where it went, None when it was gone."""
        ...

    def untrash(self, digest: str, where: str) -> None: ...

    def purge(self, where: str) -> None: ...

    def trashed(self) -> dict[str, str]:
        """What a stopped gc left in the trash: digest -> where."""
        ...

    # -- the store's id and log -----------------------------------------------------------
    def read_id(self) -> str | None: ...

    def create_id(self) -> str: ...

    def holds_objects(self) -> bool: ...

    def exists(self) -> bool:
        """Whether the place is there (a directory; a bucket holding a store)."""
        ...

    def ensure(self) -> None:
        """Make the place ready for writing (a directory made; a bucket reached)."""
        ...

    def open_log(self) -> LogStore: ...
