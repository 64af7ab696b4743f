"""The training process's store: objects and log entries only, never the index.

A training start must not pay for SQLAlchemy, alembic or a database round trip
(``benchmarks/hook_bench.py``). The log is already the source of truth (``reindex``
rebuilds any index from it), so the hook writes what a record, a pin or a metrics update
leaves in the object directory (the run's blobs, then its log entry, each durable) and
marks the entry pending (:meth:`StoreLog.append`). The next process that opens the index,
any ``expdna`` command or ``Store.open``, applies pending entries first
(:mod:`expdna.store.catchup`), so ``expdna which NAME`` right after a pin answers.

Only a store that exists is written this way: one whose object directory has its store id
(it was opened through the index once, which bound the two) and, for the embedded index,
whose ``index.sqlite`` is there. A new store is created through :class:`Store` once, as
before.

A store in a bucket is written the same way without waiting for the network
(:class:`SpoolWriter`): into this machine's spool for it, which a daemon thread uploads
(:mod:`expdna.store.uploader`). It is written so whenever an index can take the entries: a
shared one (``--index-url``), or the local one beside the spool; the bucket's store id is
the thread's to check.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from expdna.store import SQLITE_NAME
from expdna.store.config import StoreConfig
from expdna.store.errors import unwritable
from expdna.store.logbodies import pin_body, plain_metrics
from expdna.store.objects.directory import ObjectDir
from expdna.store.objects.log import StoreLog
from expdna.store.objects.pinned import mark_path

if TYPE_CHECKING:
    from expdna.manifest.model import Manifest

log = logging.getLogger(__name__)

#: ``expdna.store.identity.ID_FILE`` (that module brings SQLAlchemy).
ID_FILE = "store-id"


def writer(config: StoreConfig) -> LogWriter:
    """The training process's writer for a :func:`usable` store."""
    return SpoolWriter(config) if config.remote is not None else LogWriter(config)


def usable(config: StoreConfig) -> bool:
    """Whether ``config`` names an existing store this writer may write to."""
    root = config.root
    if config.remote is not None:  # a bucket: no network here (SpoolWriter)
        return config.index_url is not None or (root / SQLITE_NAME).is_file()
    if not (root / "objects" / ID_FILE).is_file():
        return False
    return config.index_url is not None or (root / SQLITE_NAME).is_file()


class LogWriter:
    """``record``, ``record_metrics`` and ``pin`` as log entries for the index to apply."""

    #: Whether gc works where this writes (a store directory; not a spool, whose upload
    #: makes the same check in the bucket).
    gc_reaches = True
    #: Whether a pin's path is marked beside the log (a store directory's, which the next
    #: training start reads: expdna.store.pinned_paths; not a spool's, which nothing reads).
    marks_pins = True

    def __init__(self, config: StoreConfig) -> None:
        self.root = config.root
        self.objects = ObjectDir(self.root / "objects")
        self.log = StoreLog(self.objects.root)

    def record(self, manifest: Manifest) -> str:
        """Write the run's blobs, then its ``record`` entry; returns the entry's name."""
        from expdna.store.record.prepare import prepare

        prepared = prepare(manifest)
        extra = [[b.digest, b.kind, len(b.data)] for b in prepared.blobs[1:]]
        runs = [[prepared.run_id, prepared.manifest_digest, extra]]
        blobs = {blob.digest: blob.data for blob in prepared.blobs}
        try:  # blobs first: the entry is what makes them a run
            self.objects.put_many(list(blobs.values()))
        except OSError as exc:
            raise unwritable(self.root, exc) from None
        name = self._append("record", {"runs": runs})
        if not self.gc_reaches:
            return name
        # Marked pending, the entry keeps its objects from gc; one that was present already
        # may have gone just before: write it again (expdna.store.maintenance._settle).
        there = self.objects.present_many({d: len(data) for d, data in blobs.items()})
        missing = [data for d, data in blobs.items() if d not in there]
        if missing:
            try:
                self.objects.rewrite(missing)
            except OSError as exc:
                raise unwritable(self.root, exc) from None
        return name

    def _append(self, kind: str, body: dict[str, Any]) -> str:
        try:
            name = self.log.append(kind, body, pending=True).name
        except OSError as exc:
            raise unwritable(self.root, exc) from None
        self.committed()
        return name

    def committed(self) -> None:
        """An entry is durable: nothing more to do for a store directory."""

    def record_metrics(self, run_id: str, metrics: Mapping[str, Any]) -> str:
        return self._append("metrics", {"run_id": run_id, "metrics": plain_metrics(metrics)})

    def pin(
        self,
        *,
        run_id: str,
        digest: str,
        name: str | None = None,
        path: str | None = None,
        size: int | None = None,
    ) -> str:
        name_ = self._append("pin", pin_body(run_id, digest, name, path, size))
        if self.marks_pins:
            mark_path(self.log, path)
        return name_

    def record_status(self, run_id: str, status: Mapping[str, Any]) -> str | None:
        """How the run ended, as a ``status`` entry (expdna.store.status applies it)."""
        from expdna.manifest.status import checked_status

        checked = checked_status(status)
        self._append("status", {"run_id": run_id, "status": checked})
        state = checked.get("state")
        return None if state is None else str(state)

    def close(self) -> None:
        """Nothing held open: every entry is durable when its call returns."""


class SpoolWriter(LogWriter):
    """:class:`LogWriter` into this machine's spool for a store in a bucket; a daemon
    thread uploads each entry as it is committed, and :meth:`close` waits for it (at most
    :data:`expdna.store.uploader.WAIT_S`)."""

    gc_reaches = False
    marks_pins = False

    def __init__(self, config: StoreConfig) -> None:
        from expdna.store.objects.spool import SPOOL, Spool
        from expdna.store.uploader import Uploader

        spool = Spool(config.root / SPOOL)
        self.root = spool.root
        self.objects = spool.objects
        self.log = spool.log
        self.uploader = Uploader(config, spool)

    def committed(self) -> None:
        self.uploader.wake()

    def close(self) -> None:
        from expdna.store.uploader import WAIT_S

        if not self.uploader.wait(WAIT_S):
            log.warning(
                "expdna: still uploading to %s after %g s; the rest stays in %s and goes up "
                "with the next process that opens the store here",
                self.uploader.config.shown,
                WAIT_S,
                self.root,
            )
