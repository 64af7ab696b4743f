"""The store's log: every fact only the index would hold, as a small immutable file.

Manifests, patches and listings are objects already; the log adds what ``record``, ``pin``,
``link`` and metrics updates tell the index beyond them (which runs a batch recorded and
when, a pin's name, path and time, an edge, a metrics update), so ``expdna reindex`` can
rebuild any index from the object directory alone, as git rebuilds refs from its reflog.

An entry is written before the index row that applies it: ``objects/log/<UTC time>-<BLAKE3
of its bytes>``, a compact JSON object. Its name sorts by time (the order entries are
replayed in) and proves its content (fsck re-hashes it). Like an object it is written to a
temporary file, synced, made read-only and linked into place: no entry is ever rewritten,
and nothing here needs a lock, so many writers on many machines may share one directory
over NFS (``link`` and ``rename`` are atomic there; ``flock`` is not dependable).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from expdna.digest import hex_of
from expdna.regular import NotRegularFileError, open_regular
from expdna.store.objects.directory import READ_ONLY, TEMP_PREFIX, fsync_path

LOG_DIR = "log"
#: Entries written by a process that does not touch the index (the training hook), each as
#: an empty file of the entry's name: whoever opens the index next applies them.
PENDING_DIR = "pending"
VERSION = 1
KINDS = ("record", "pin", "link", "metrics", "status")
_NAME = re.compile(r"(\d{8}T\d{12}Z)-([0-9a-f]{64})")
_COUNTER = itertools.count()
#: No entry expdna writes comes near this (a batch of 500 runs is ~200 KB).
MAX_ENTRY_BYTES = 64 << 20


@dataclass(frozen=True)
class LogEntry:
    """One entry: its file name, kind, UTC time (naive) and body."""

    name: str
    kind: str
    at: datetime
    body: dict[str, Any]


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%S%fZ")


def is_entry_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def encode_entry(
    kind: str, body: dict[str, Any], at: datetime | None = None
) -> tuple[LogEntry, bytes]:
    """An entry of ``kind`` and its bytes, named by its time and their BLAKE3."""
    if kind not in KINDS:
        raise ValueError(f"unknown log entry kind {kind!r}")
    moment = at or utc_now()
    doc = {"v": VERSION, "kind": kind, "at": moment.isoformat(), **body}
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    name = f"{_stamp(moment)}-{hex_of(data)}"
    return LogEntry(name=name, kind=kind, at=moment, body=doc), data


def decode_entry(name: str, data: bytes, *, verify: bool = True) -> LogEntry:
    """The entry ``name`` holding ``data``; ValueError when it is not a readable entry (or,
    ``verify``, its bytes no longer hash to its name)."""
    match = _NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"{name}: not a log entry name")
    if verify and hex_of(data) != match.group(2):
        raise ValueError(f"log entry {name} is corrupt: its bytes do not hash to its name")
    doc = json.loads(data)
    if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
        raise ValueError(f"log entry {name}: not an expdna log entry")
    return LogEntry(name=name, kind=doc["kind"], at=datetime.fromisoformat(doc["at"]), body=doc)


class StoreLog:
    """The entries under ``<objects>/log``."""

    def __init__(self, objects_root: Path, *, durable: bool = True) -> None:
        self.root = objects_root / LOG_DIR
        #: False: entries are not synced (expdna.store.objects.spool)
        self.durable = durable

    def append(
        self,
        kind: str,
        body: dict[str, Any],
        *,
        at: datetime | None = None,
        pending: bool = False,
    ) -> LogEntry:
        """Write one entry durably; returns it. ``at``: its time (default now, UTC).
        ``pending``: no index will be told by this process; a marker under
        ``log/pending`` asks the next process that opens the index to apply it."""
        entry, data = encode_entry(kind, body, at)
        self.add(entry.name, data, pending=pending)
        return entry

    def add(self, name: str, data: bytes, *, pending: bool = False) -> None:
        """Write an entry encoded already (:func:`encode_entry`; its name proves its
        bytes), durably; written already, it is left as it is. ``pending``: as for
        :meth:`append`."""
        if not is_entry_name(name):
            raise ValueError(f"{name}: not a log entry name")
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / name
        temp = self.root / f"{TEMP_PREFIX}log-{os.getpid()}-{next(_COUNTER)}-{time.monotonic_ns()}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, READ_ONLY)
        try:
            os.fchmod(fd, READ_ONLY)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        try:
            # link, not rename: it never replaces an entry (the same name is the same bytes)
            os.link(temp, final)
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        if os.name == "posix" and self.durable:
            fsync_path(self.root)
        if pending:
            self._mark_pending(name)

    @property
    def pending_root(self) -> Path:
        return self.root / PENDING_DIR

    def _mark_pending(self, name: str) -> None:
        # Not synced: the entry is durable already, and a marker a crash loses leaves an
        # entry the index lacks, which fsck names after drift.STALE_S and reindex applies.
        # The sync would cost a training start a filesystem round trip per entry.
        self.pending_root.mkdir(exist_ok=True)
        fd = os.open(self.pending_root / name, os.O_WRONLY | os.O_CREAT, READ_ONLY)
        os.close(fd)

    def pending(self) -> list[str]:
        """Entries written for the index to apply later, oldest first (one directory
        listing: cheap enough for every command that opens the index)."""
        try:
            with os.scandir(self.pending_root) as found:
                return sorted(e.name for e in found if is_entry_name(e.name))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def clear_pending(self, name: str) -> None:
        """The entry is in the index now (or never will be): forget its marker."""
        with contextlib.suppress(FileNotFoundError):
            (self.pending_root / name).unlink()

    def names(self) -> list[str]:
        """Every entry's name, oldest first."""
        if not self.root.is_dir():
            return []
        return sorted(e.name for e in os.scandir(self.root) if is_entry_name(e.name))

    def read(self, name: str, *, verify: bool = True) -> LogEntry:
        """One entry; ValueError when it is not a readable entry (or, ``verify``, its bytes
        no longer hash to its name)."""
        if _NAME.fullmatch(name) is None:
            raise ValueError(f"{name}: not a log entry name")
        try:  # read as untrusted: a FIFO must not block, a huge file not be loaded
            with open(open_regular(str(self.root / name)), "rb") as handle:
                data = handle.read(MAX_ENTRY_BYTES + 1)
        except NotRegularFileError as exc:
            raise ValueError(f"log entry {name} is {exc.kind}, not a file") from None
        if len(data) > MAX_ENTRY_BYTES:
            raise ValueError(f"log entry {name} is over {MAX_ENTRY_BYTES} bytes: not read")
        return decode_entry(name, data, verify=verify)

    def entries(self) -> Iterator[LogEntry]:
        for name in self.names():
            yield self.read(name)

    def age_s(self, name: str, now: float | None = None) -> float:
        """Seconds since the entry was written (its file's mtime); 0 when it is gone."""
        try:
            mtime = (self.root / name).stat().st_mtime
        except FileNotFoundError:
            return 0.0
        return (now if now is not None else time.time()) - mtime

    def withdraw(self, name: str) -> None:
        """Remove an entry whose index transaction failed, so it was never applied."""
        with contextlib.suppress(FileNotFoundError):
            (self.root / name).unlink()
        self.clear_pending(name)
