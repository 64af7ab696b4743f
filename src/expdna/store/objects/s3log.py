"""The store's log in a bucket: entries as keys ``objects/log/<entry>``
(:mod:`expdna.store.objects.log`), pending markers as empty keys ``objects/log/pending/<entry>``.

A marker says what it says in a directory: the entry was written by a process that does not
touch the index (the training hook, :mod:`expdna.store.deferred`), and whoever opens the
index next applies it (:mod:`expdna.store.catchup`). It is written after its entry, so a
marker never names an entry that is not there; an entry whose marker was never written (the
writer died between the two) is applied by ``reindex``, and ``fsck`` names it. Markers are
listed in the bucket, not on one machine: a run recorded on a training node reaches a shared
index from any machine that opens it.

Before the markers are listed, runs the training hook committed to this machine's local spool
but had not uploaded yet (a process killed first, a network that was down) are uploaded
(:mod:`expdna.store.spool`), so they reach the index the same way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from expdna.store.objects.log import (
    LOG_DIR,
    PENDING_DIR,
    LogEntry,
    decode_entry,
    encode_entry,
    is_entry_name,
)

if TYPE_CHECKING:
    from expdna.store.objects.s3 import S3Objects

OBJECTS = "objects"


class S3Log:
    """The log entries and pending markers of one store in a bucket."""

    def __init__(self, objects: S3Objects) -> None:
        self.objects = objects
        self.root = f"{OBJECTS}/{LOG_DIR}"
        self.pending_root = f"{self.root}/{PENDING_DIR}"
        self._times: dict[str, float] = {}  # from the last listing

    def append(
        self, kind: str, body: dict[str, Any], *, at: datetime | None = None, pending: bool = False
    ) -> LogEntry:
        entry, data = encode_entry(kind, body, at)
        self.add(entry.name, data, pending=pending)
        return entry

    def add(self, name: str, data: bytes, *, pending: bool = False) -> None:
        """Write an entry encoded already (its name proves its bytes); ``pending``: then
        its marker, for the next process that opens the index."""
        self.objects._create(f"{self.root}/{name}", data)
        if pending:
            self.objects._create(f"{self.pending_root}/{name}", b"")

    def pending(self) -> list[str]:
        """Entries waiting for an index, oldest first: one listing of the markers (after
        this machine's spool, when it holds any, is uploaded)."""
        spool = self.objects.spool
        if spool is not None and spool.waiting():
            from expdna.store.objects.spool import drain

            drain(spool, self.objects)
        names = [key.rsplit("/", 1)[-1] for key, _ in self.objects._list(f"{self.pending_root}/")]
        return sorted(name for name in names if is_entry_name(name))

    def clear_pending(self, name: str) -> None:
        self.objects._delete(f"{self.pending_root}/{name}")

    def names(self) -> list[str]:
        found: dict[str, float] = {}
        for key, stat in self.objects._list(f"{self.root}/"):
            parent, _, name = key.rpartition("/")
            if parent == self.root and is_entry_name(name):  # not the markers below it
                found[name] = stat.mtime
        self._times = found
        return sorted(found)

    def read(self, name: str, *, verify: bool = True) -> LogEntry:
        if not is_entry_name(name):
            raise ValueError(f"{name}: not a log entry name")
        return decode_entry(name, self.objects._get(f"{self.root}/{name}"), verify=verify)

    def entries(self) -> Iterator[LogEntry]:
        for name in self.names():
            yield self.read(name)

    def age_s(self, name: str, now: float | None = None) -> float:
        mtime = self._times.get(name)
        if mtime is None:
            found = self.objects._head(f"{self.root}/{name}")
            if found is None:
                return 0.0
            mtime = found.mtime
        return (now if now is not None else time.time()) - mtime

    def withdraw(self, name: str) -> None:
        self.objects._delete(f"{self.root}/{name}")
        self.clear_pending(name)
