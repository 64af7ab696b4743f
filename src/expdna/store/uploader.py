"""The training process's uploads to a store in a bucket, off the training's path.

:class:`expdna.store.deferred.SpoolWriter` commits each record, pin, metrics and status
entry to this machine's spool (:mod:`expdna.store.objects.spool`) and wakes the one daemon
thread here, which drains the spool into the bucket while training goes on: the client
library is imported and every request made in that thread. ``finish()`` (the store's
``close``) and the end of the process wait for it, each for at most :data:`WAIT_S`; what is
not up by then stays in the spool, and the next process on this machine that opens the
store uploads it. A bucket that holds no store yet is made one through the index, once, as
a new store directory is (in the thread, so SQLAlchemy too stays off the training's path).
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import TYPE_CHECKING

from expdna.store.config import StoreConfig
from expdna.store.objects.spool import Spool, drain

if TYPE_CHECKING:
    from expdna.store.objects.s3 import S3Objects

log = logging.getLogger(__name__)

#: Seconds ``finish()``, and the end of the process, wait for the uploads.
WAIT_S = 10.0


class Uploader:
    """One daemon thread draining ``spool`` into the bucket ``config`` names."""

    def __init__(self, config: StoreConfig, spool: Spool) -> None:
        self.config = config
        self.spool = spool
        self._changed = threading.Condition()
        self._asked = 0  # wakes so far
        self._done = 0  # the wakes the last finished drain answered
        self._thread: threading.Thread | None = None
        self._bucket: S3Objects | None = None
        #: Why the last drain failed; None when it did not.
        self.failure: str | None = None

    def wake(self) -> None:
        """Something was committed to the spool: upload it (the thread starts on first use)."""
        with self._changed:
            self._asked += 1
            self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="expdna-upload", daemon=True)
                self._thread.start()
                atexit.register(self.wait, WAIT_S)

    def wait(self, timeout_s: float = WAIT_S) -> bool:
        """Wait until everything committed before this call was tried; False when the
        thread was still at it after ``timeout_s``."""
        with self._changed:
            target = self._asked
            return self._changed.wait_for(lambda: self._done >= target, timeout_s)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._done < self._asked)
                target = self._asked
            try:
                self._drain()
                self.failure = None
            except Exception as exc:  # the training goes on; the spool keeps the run
                said, self.failure = self.failure, str(exc)
                (log.debug if said == self.failure else log.warning)(
                    "expdna: not uploaded yet, kept in %s for the next process here: %s",
                    self.spool.root,
                    self.failure,
                )
            with self._changed:
                self._done = target
                self._changed.notify_all()

    def _drain(self) -> None:
        if self._bucket is None:
            from expdna.store.objects.s3 import S3Objects

            bucket = S3Objects(str(self.config.remote), spool=self.spool)
            if bucket.read_id() is None:  # no store there yet: made once, as a directory's
                from expdna.store.facade import Store

                Store.from_config(self.config).close()  # uploads the spool as it opens
            self._bucket = bucket
        drain(self.spool, self._bucket)
