"""Recording batches: blobs first, then the batch's index rows in one transaction.

Batches overlap in one place only. From the second batch of a call on, a batch's log entry
and blobs go to a helper process (:mod:`expdna.store.objects.blobwriter`), and the recorder
checks the next batch while the helper writes and syncs them; the batch's index rows are
written once the helper says they are durable, so the order "log entry, then blobs, index
row last" holds for every run. The
first batch is written in this process: a call that records one batch (``Store.record``,
the training hook) never starts a helper, and a call's helper ends with the call. Into a
bucket the helper is a thread (:class:`_UploadThread`): its requests run in the client
library without the GIL, so a batch uploads while the previous one's rows are written. The
index transaction itself is not overlapped: doing it in a thread while checking the next
batch was measured slower, since SQLite releases and retakes the GIL for every row it
steps and the checking thread holds it.

The cyclic garbage collector is paused while one batch is checked and written (as
Mercurial's ``util.nogc`` does for bulk parsing): a batch builds tens of thousands of
short-lived containers that hold no cycles, and the collections they trigger walk every
object in the process, the caller's manifests included. That was 15-25 % of recording
time. It is resumed between batches, so garbage never waits longer than one batch.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from sqlalchemy import Connection

from expdna.store.entities import RecordResult, RecordStatus, iso
from expdna.store.errors import StoreError
from expdna.store.index.applied import log_applied
from expdna.store.index.engine import Index
from expdna.store.index.intern import InternCache, Interned
from expdna.store.interrupts import interrupt_deferred
from expdna.store.objects.blobwriter import BlobWriter
from expdna.store.objects.directory import ObjectDir
from expdna.store.objects.interface import ObjectStore
from expdna.store.objects.log import LogEntry, encode_entry
from expdna.store.record.cycles import cyclic
from expdna.store.record.prepare import Prepared
from expdna.store.record.samerun import same_run
from expdna.store.record.write import recorded_digests, write_batch

log = logging.getLogger(__name__)

#: A batch entry: a manifest ready to write, or the result of one that failed to load.
BatchItem = Prepared | RecordResult
#: Fewer blobs than this in a batch are written here: handing them over saves nothing.
MIN_HELPER_BLOBS = 64
#: Whether batches use a helper at all (its pipe protocol and syncs are written for POSIX).
HELPER = os.name == "posix"


def _result(prepared: Prepared, status: RecordStatus, refused: dict[str, str]) -> RecordResult:
    message = refused.get(prepared.run_id) if status == "failed" else None
    if status == "conflict":
        message = (
            f"{prepared.source or prepared.run_id}: run {prepared.run_id} is recorded "
            "already with other content; a recorded run is never changed"
        )
    return RecordResult(
        run_id=prepared.run_id,
        dna=prepared.dna,
        generated_at=iso(prepared.generated_at),
        status=status,
        source=prepared.source,
        message=message,
    )


class Recorder:
    """Writes prepared batches into one store; holds the interned-path cache."""

    def __init__(self, objects: ObjectStore, index: Index) -> None:
        self.objects = objects
        self.index = index
        self.log = objects.open_log()
        self._interned = InternCache()
        #: the log entry of the batch whose blobs were written last, until its rows are
        self._entry: LogEntry | None = None
        #: its bytes, until it is written (here, or by the helper with the batch's blobs)
        self._entry_data: bytes | None = None
        #: run id -> recorded manifest digest, of that batch's runs recorded before it
        self._known: Mapping[str, str] = {}
        self._same = same_run(objects)

    def _todo(self, batch: Sequence[Prepared]) -> list[bytes]:
        """The blobs of the runs not recorded yet (one look at the index). The objects of
        runs recorded already with this manifest are verified, and rewritten here when
        missing or corrupt (a skipped run repairs its store)."""
        with self.index.read() as conn:
            known = recorded_digests(conn, (p.run_id for p in batch))
            # a run the index will refuse for a lineage cycle leaves no blobs behind
            if any(p.lineage for p in batch):
                known.update(cyclic(conn, [p for p in batch if p.run_id not in known]))
        repair: dict[str, bytes] = {}
        for prepared in batch:
            if known.get(prepared.run_id) == prepared.manifest_digest:
                for blob in prepared.blobs:
                    if blob.digest not in repair and not self.objects.holds(blob.digest, blob.data):
                        log.warning(
                            "run %s: object %s was missing or corrupt in %s; rewriting it",
                            prepared.run_id,
                            blob.digest,
                            self.objects.location,
                        )
                        repair[blob.digest] = blob.data
        if repair:
            self._guarded(lambda: self.objects.rewrite(repair.values()))
        self._entry = self._log_entry(batch, known)
        self._known = known
        return [blob.data for p in batch if p.run_id not in known for blob in p.blobs]

    def _guarded(self, write: Callable[[], object]) -> None:
        try:
            write()
        except OSError as exc:
            raise StoreError(
                f"object directory {self.objects.location}: {exc.strerror or exc}"
            ) from None

    def _write_here(self, blobs: Sequence[bytes]) -> None:
        """The batch's log entry, when not written yet, then its blobs, in this process."""
        self._write_entry_here()
        self._guarded(lambda: self.objects.put_many(blobs))

    def _write_entry_here(self) -> None:
        entry, data = self._entry, self._entry_data
        if entry is not None and data is not None:
            try:
                self.log.add(entry.name, data)
            except OSError as exc:
                raise StoreError(
                    f"object directory {self.objects.location}: {exc.strerror}"
                ) from None
            self._entry_data = None

    def put_blobs(self, batch: Sequence[Prepared]) -> None:
        """Write the blobs of the runs not recorded yet, in this process."""
        self._write_here(self._todo(batch))

    def send_blobs(self, batch: Sequence[Prepared], helper: _Helper) -> bool:
        """Hand the batch's blobs, and its log entry where the helper writes entries, to
        the call's helper process; False when they were written here instead (too few to
        be worth it, or no helper)."""
        blobs = self._todo(batch)
        writer = helper.get() if len(blobs) >= MIN_HELPER_BLOBS else None
        if writer is not None:
            entry = None
            if self._entry is not None and self._entry_data is not None:
                if writer.takes_entries:
                    entry = (self._entry.name, self._entry_data)
                else:
                    self._write_entry_here()
            if writer.send(blobs, entry):
                return True  # the entry's bytes are kept until the helper says it wrote them
            helper.give_up()
        self._write_here(blobs)
        return False

    def blobs_written(self, helper: _Helper) -> None:
        """Wait until the helper has made the entry and blobs sent last durable (writing
        here what it could not)."""
        if helper.writer is not None:
            unwritten = helper.writer.wait()
            if unwritten:
                helper.give_up()
                self._write_here(unwritten)  # the entry again, should it be missing
        self._entry_data = None

    def index_rows(self, items: Sequence[BatchItem]) -> list[RecordResult]:
        """Commit the batch's index rows; results in the order of ``items``."""
        batch = [item for item in items if isinstance(item, Prepared)]
        status: list[RecordStatus] = []
        refused: dict[str, str] = {}
        if batch:
            entry, self._entry = self._entry, None  # the entry _todo wrote for this batch

            def body(conn: Connection) -> tuple[list[RecordStatus], Interned | None]:
                if entry is None:
                    return write_batch(conn, batch, self._interned, refused, same=self._same)
                log_applied(conn, entry.name, entry.kind)
                return write_batch(
                    conn, batch, self._interned, refused, recorded_at=entry.at, same=self._same
                )

            try:
                status, interned = self.index.write_retrying(body, logged=entry is not None)
            except BaseException:
                if entry is not None:  # never applied: not a fact the index is behind on
                    self.log.withdraw(entry.name)
                raise
            if interned is not None:  # only ids from a committed transaction may be reused
                self._interned.add(interned)
            self._ensure_objects(batch, status)
        states = iter(status)
        return [
            _result(item, next(states), refused) if isinstance(item, Prepared) else item
            for item in items
        ]

    def _log_entry(self, batch: Sequence[Prepared], known: Mapping[str, str]) -> LogEntry | None:
        """The log entry for the batch's runs not recorded yet (expdna.store.objects.log):
        what ``reindex`` needs beyond the objects. Written before their objects (here, or
        by the helper that writes them: its bytes wait in ``_entry_data``), it is also the
        write-ahead reference gc honours: gc keeps what an unapplied entry names."""
        self._entry_data = None
        fresh: dict[str, Prepared] = {}
        for prepared in batch:  # the first of a run id repeated in the batch is recorded
            if prepared.run_id not in known:
                fresh.setdefault(prepared.run_id, prepared)
        if not fresh:
            return None
        runs = [
            [p.run_id, p.manifest_digest, [[b.digest, b.kind, len(b.data)] for b in p.blobs[1:]]]
            for p in fresh.values()
        ]
        entry, self._entry_data = encode_entry("record", {"runs": runs})
        return entry

    def _ensure_objects(self, batch: Sequence[Prepared], status: Sequence[RecordStatus]) -> None:
        """After the commit: every object the batch's runs reference is present, else it is
        written again. gc checks references before it deletes, but a run committed just
        after that check would lose an object gc removes; one stat an object closes that
        window without any lock (expdna.store.maintenance)."""
        wanted: dict[str, bytes] = {}
        for prepared, state in zip(batch, status, strict=True):
            if state in ("conflict", "failed"):  # a refused run leaves no objects
                continue
            if self._known.get(prepared.run_id, prepared.manifest_digest) != (
                prepared.manifest_digest
            ):  # skipped as the run it is (samerun): the store keeps its own manifest
                continue
            for blob in prepared.blobs:
                wanted.setdefault(blob.digest, blob.data)
        there = self.objects.present_many({d: len(data) for d, data in wanted.items()})
        missing = {d: data for d, data in wanted.items() if d not in there}
        if missing:
            log.info("rewriting %d objects removed while their runs were recorded", len(missing))
            self._guarded(lambda: self.objects.rewrite(missing.values()))

    def run(self, batches: Iterable[Sequence[BatchItem]]) -> Iterator[RecordResult]:
        """Record every batch in turn (making each, when ``batches`` is lazy, overlaps
        the helper writing the previous one's blobs); yields results batch by batch.

        A batch that fails to be made raises after the batches before it are recorded.
        """
        pending = iter(batches)
        helper = _Helper(self._helper_start())
        written: Sequence[BatchItem] | None = None  # blobs written or sent, no index rows yet
        sent = False
        try:
            while True:
                failure: Exception | None = None
                results: list[RecordResult] = []
                with paused_gc(), interrupt_deferred():
                    try:
                        items = next(pending, None)
                    except Exception as exc:  # re-raised below, after the rows before it
                        failure, items = exc, None
                    if written is not None:
                        if sent:
                            sent = False
                            self.blobs_written(helper)
                        results = self.index_rows(written)
                    if items is not None:
                        batch = [item for item in items if isinstance(item, Prepared)]
                        if written is None:  # the first batch of this call
                            self.put_blobs(batch)
                        else:
                            sent = self.send_blobs(batch, helper)
                    written = items
                yield from results
                if failure is not None:
                    raise failure
                if items is None:
                    return
        finally:
            # abandoned with a batch at the helper: it finishes it (the blobs stay,
            # unreferenced, for gc) and ends
            helper.close()
            if self._entry is not None:  # its batch never reached the index
                self.log.withdraw(self._entry.name)
                self._entry = self._entry_data = None

    def _helper_start(self) -> Callable[[], _Writer | None] | None:
        """How this call's helper starts: a process for a directory, a thread for a bucket."""
        objects = self.objects
        if not isinstance(objects, ObjectDir):
            return lambda: _UploadThread(objects)
        root = objects.root
        return (lambda: BlobWriter.start(root)) if HELPER else None


class _Writer(Protocol):
    """What the recorder needs of a helper (:class:`BlobWriter`, :class:`_UploadThread`)."""

    #: whether :meth:`send` takes the batch's log entry to write before its blobs
    takes_entries: bool

    def send(self, blobs: Sequence[bytes], entry: tuple[str, bytes] | None = None) -> bool: ...

    def wait(self) -> Sequence[bytes]: ...

    def close(self) -> None: ...


class _UploadThread:
    """A batch's uploads in one thread while the recorder goes on; :meth:`wait` returns
    the blobs it could not upload (written again by the recorder, which raises why)."""

    def __init__(self, objects: ObjectStore) -> None:
        self._objects = objects
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="expdna-upload")
        self._sent: Sequence[bytes] = ()
        self._future: Future[list[str]] | None = None

    takes_entries = False  # the recorder writes the entry into the bucket first

    def send(self, blobs: Sequence[bytes], entry: tuple[str, bytes] | None = None) -> bool:
        self._sent = blobs
        self._future = self._pool.submit(self._objects.put_many, blobs)
        return True

    def wait(self) -> Sequence[bytes]:
        future, self._future = self._future, None
        if future is None:
            return ()
        try:
            future.result()
        except Exception as exc:  # the recorder writes them itself and raises the real error
            log.debug("uploading a batch failed: %s", exc)
            return self._sent
        return ()

    def close(self) -> None:
        self._pool.shutdown(wait=True)  # a batch abandoned mid-way is finished (gc's then)


class _Helper:
    """One call's blob-writing helper, started on first use. Once it fails, the call
    writes the rest of its blobs itself."""

    def __init__(self, start: Callable[[], _Writer | None] | None) -> None:
        self._start = start  # None: start none (any more)
        self.writer: _Writer | None = None

    def get(self) -> _Writer | None:
        if self.writer is None and self._start is not None:
            self.writer = self._start()
            if self.writer is None:
                self._start = None
        return self.writer

    def give_up(self) -> None:
        self._start = None
        self.close()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside (see the module doc); a caller's own
    ``gc.disable()`` is left as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
