"""This machine's spool for a store in a bucket: what the training hook committed, not
uploaded yet.

A training start may not wait for the network (:mod:`expdna.store.deferred`). Into a store
in a bucket the hook writes what it writes into a store directory (the run's blobs, then its
log entry, then a pending marker) but into a local directory,
``<cache>/spool`` beside the remote store's local index, and a background thread uploads it
(:func:`drain`). What the process committed there outlives the process (it is written without
disk syncs: a process's death loses none of it, a machine's crash in the moments before
the upload may): the next one on this machine that opens the store (any ``expdna``
command, ``Store.open``, the next training start) uploads it first
(:meth:`expdna.store.objects.s3log.S3Log.pending`).

Each entry goes up in the store's own order: its blobs (create-only, in parallel), the
entry, its marker in the bucket; then one HEAD per blob, as the recorder checks after its
commit (a gc that ran meanwhile may have removed an old object the entry names: it is
written again); then the spool forgets the entry. A process that stops part way leaves at
worst blobs that no entry in the bucket names, which are no run (gc removes them), or an
entry without its marker (``reindex`` applies it, ``fsck`` names it), and the spool still
holds the entry: the next drain repeats the steps, each of which may be repeated.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from expdna.store.errors import MissingObjectError
from expdna.store.objects.directory import ObjectDir
from expdna.store.objects.log import LogEntry, StoreLog, decode_entry

if TYPE_CHECKING:
    from expdna.store.objects.s3 import S3Objects

log = logging.getLogger(__name__)

#: The spool's directory under a remote store's local cache directory.
SPOOL = "spool"


class Spool:
    """Blobs and log entries under ``root``, laid out as a store directory's objects."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Not synced to disk: what a training process commits here survives its death
        # (the kernel has it), and the upload follows within moments; a sync per file cost
        # a loaded machine's training start 25 ms each (four per run).
        self.objects = ObjectDir(root / "objects", durable=False)
        self.log = StoreLog(self.objects.root, durable=False)

    def waiting(self) -> list[str]:
        """Entries not uploaded yet, oldest first (one directory listing)."""
        return self.log.pending()

    def entry(self, name: str) -> tuple[LogEntry, bytes]:
        data = (self.log.root / name).read_bytes()
        return decode_entry(name, data), data

    def forget(self, name: str, named: set[str]) -> None:
        """Drop an uploaded entry, and those of its blobs no waiting entry names."""
        self.log.withdraw(name)
        for other in self.waiting():
            try:
                named -= blobs_of(self.entry(other)[0])
            except (OSError, ValueError):
                continue
        for digest in named:
            self.objects.remove(digest)


def blobs_of(entry: LogEntry) -> set[str]:
    """The objects a log entry names (a ``record`` entry's manifests and their blobs)."""
    if entry.kind != "record":
        return set()
    found: set[str] = set()
    for _run_id, manifest, extra in entry.body.get("runs", []):
        found.add(str(manifest))
        found.update(str(blob[0]) for blob in extra)
    return found


def drain(spool: Spool, bucket: S3Objects) -> int:
    """Upload every waiting entry (see the module doc); returns how many went up."""
    done = 0
    for name in spool.waiting():
        try:
            entry, data = spool.entry(name)
        except FileNotFoundError:  # another process uploaded it meanwhile
            spool.log.clear_pending(name)
            continue
        except ValueError as exc:  # damaged here: uploading it would spread the damage
            log.warning("spooled log entry %s in %s not uploaded: %s", name, spool.root, exc)
            continue
        named = blobs_of(entry)
        blobs: dict[str, bytes] = {}
        for digest in named:
            try:
                blobs[digest] = spool.objects.read_verified(digest)
            except MissingObjectError:  # uploaded by another drain before it forgot it
                continue
        bucket.put_many(list(blobs.values()))
        bucket.open_log().add(name, data, pending=True)
        there = bucket.present_many({d: len(b) for d, b in blobs.items()})
        gone = [blobs[d] for d in blobs if d not in there]
        if gone:
            log.info("rewriting %d objects removed while they were uploaded", len(gone))
            bucket.rewrite(gone)
        for digest in named - blobs.keys():
            if not bucket.has(digest):
                log.warning("log entry %s: object %s in neither spool nor bucket", name, digest)
        spool.forget(name, named)
        done += 1
    if done:
        log.info("uploaded %d spooled log entries to %s", done, bucket.url)
    return done
