"""Recording batches: blobs first, then the batch's index rows in one transaction.

Sequential on purpose: overlapping the index transaction of one batch (in a thread) with
checking the next was measured slower, since SQLite releases and retakes the GIL for
every row it steps and the checking thread holds it.

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
from collections.abc import Iterable, Iterator, Sequence

from expdna.store.entities import RecordResult, RecordStatus, iso
from expdna.store.errors import StoreError
from expdna.store.index import Index
from expdna.store.intern import InternCache
from expdna.store.objects import ObjectDir
from expdna.store.prepare import Prepared
from expdna.store.write import recorded_digests, write_batch

log = logging.getLogger(__name__)

#: A batch entry: a manifest ready to write, or the result of one that failed to load.
BatchItem = Prepared | RecordResult



def _result(prepared: Prepared, status: RecordStatus) -> RecordResult:
    message = None
    if status == "conflict":
        message = (
            f"{prepared.source or prepared.run_id}: run {prepared.run_id} is recorded "
            "already with other content; a recorded run is never changed"
        )
    return RecordResult(
        run_id=prepared.run_id, dna=prepared.dna, generated_at=iso(prepared.generated_at),
        status=status, source=prepared.source, message=message,
    )


class Recorder:
    """Writes prepared batches into one store; holds the interned-path cache."""

    def __init__(self, objects: ObjectDir, index: Index) -> None:
        self.objects = objects
        self.index = index
        self._interned = InternCache()

    def put_blobs(self, batch: Sequence[Prepared]) -> None:
        """Write the blobs of the runs not recorded yet (one look at the index first)."""
        with self.index.read() as conn:
            known = recorded_digests(conn, (p.run_id for p in batch))
        todo = [p for p in batch if p.run_id not in known]
        try:
            self.objects.put_many(blob.data for p in todo for blob in p.blobs)
        except OSError as exc:
            raise StoreError(
                f"object directory {self.objects.root}: {exc.strerror or exc}"
            ) from None

    def index_rows(self, items: Sequence[BatchItem]) -> list[RecordResult]:
        """Commit the batch's index rows; results in the order of ``items``."""
        batch = [item for item in items if isinstance(item, Prepared)]
        status: list[RecordStatus] = []
        if batch:
            status, interned = self.index.write_retrying(
                lambda conn: write_batch(conn, batch, self._interned)
            )
            if interned is not None:  # only ids from a committed transaction may be reused
                self._interned.add(interned)
        states = iter(status)
        return [
            _result(item, next(states)) if isinstance(item, Prepared) else item
            for item in items
        ]

    def run(self, batches: Iterable[Sequence[BatchItem]]) -> Iterator[RecordResult]:
        """Record every batch in turn (making each, when ``batches`` is lazy, is part of
        its turn); yields results batch by batch."""
        pending = iter(batches)
        while True:
            with paused_gc():
                items = next(pending, None)
                if items is None:
                    return
                self.put_blobs([item for item in items if isinstance(item, Prepared)])
                results = self.index_rows(items)
            yield from results


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
