"""Where a training run's manifest goes: its output file and the store.

Every operation here runs under a deadline in a daemon thread and turns any failure into
a warning string: a full disk, an unwritable directory, a stalled NFS mount or a database
that is down must never stop or hang the training that called the hook. A call that misses
its deadline is abandoned; a daemon thread cannot keep the interpreter alive, and the
store writes blobs before its index row, so an abandoned record leaves at worst an
unreferenced blob.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from expdna.abandoned import abandon
from expdna.manifest.io import write_manifest
from expdna.manifest.model import Manifest
from expdna.store.config import StoreConfig

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Opening a store may run its migrations the first time: give it longer than a collector.
STORE_DEADLINE_S = 15.0


def guarded(what: str, fn: Callable[[], T], deadline_s: float) -> tuple[T | None, str | None]:
    """``(result, None)``, or ``(None, warning)`` when ``fn`` raised or missed the deadline."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = fn()
        except Exception as exc:  # any failure of the hook's own I/O becomes a warning
            box["error"] = exc

    thread = threading.Thread(target=work, name=f"expdna-{what}", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if thread.is_alive():
        abandon(thread)
        return None, f"{what}: no answer within {deadline_s:g} s; abandoned"
    if "error" in box:
        exc = box["error"]
        log.debug("%s failed", what, exc_info=exc)
        return None, f"{what}: {type(exc).__name__}: {exc}"
    return box["result"], None


def manifest_path(output_dir: Path, manifest: Manifest) -> Path:
    return output_dir / f"manifest_{manifest.run_id}.json"


def write_file(
    manifest: Manifest, output_dir: Path, deadline_s: float, path: Path | None = None
) -> tuple[Path | None, str | None]:
    """Write ``<output_dir>/manifest_<run_id>.json`` (or ``path``) atomically (the
    directory is created)."""
    target = path if path is not None else manifest_path(output_dir, manifest)

    def write() -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        return write_manifest(manifest, target)

    return guarded("writing the manifest", write, deadline_s)


class RunStore(Protocol):
    """What the hook needs of a store: :class:`expdna.store.Store` has it, and so may any
    object a caller passes as ``store=``."""

    def record(self, manifest: Manifest) -> object: ...

    def record_metrics(self, run_id: str, metrics: Mapping[str, Any]) -> object: ...

    def record_status(self, run_id: str, status: Mapping[str, Any]) -> object: ...

    def pin(self, *, run_id: str, digest: str, name: str, path: str, size: int) -> object: ...

    def close(self) -> None: ...


#: A store directory, a store the caller opened, or ``None`` (``$EXPDNA_STORE``).
StoreTarget = str | os.PathLike[str] | RunStore | None


def _open_store(config: StoreConfig) -> RunStore:
    # An existing store is written as objects and log entries alone, which the index
    # applies when it is next opened (expdna.store.deferred): no SQLAlchemy, no database
    # in the training process. Only a new store is created through the index, once.
    from expdna.store.deferred import usable, writer

    if usable(config):
        return writer(config)
    from expdna.store.facade import Store

    return Store.from_config(config)


@dataclass
class StoreLink:
    """The store a run is recorded in, opened on first use and kept for the run.

    ``target`` is a store directory, an object with the store's methods (``record``, and
    later ``record_metrics`` and ``pin``: :class:`RunStore`), or ``None`` for
    ``$EXPDNA_STORE``; without either, nothing is recorded and nothing is said.
    """

    target: StoreConfig | RunStore | None = None
    deadline_s: float = STORE_DEADLINE_S
    _store: RunStore | None = field(default=None, init=False, repr=False)
    _failed: bool = field(default=False, init=False, repr=False)

    @classmethod
    def resolve(
        cls, target: StoreTarget, index_url: str | None, environ: Mapping[str, str] | None = None
    ) -> StoreLink:
        """A store object as given; a directory (given or ``$EXPDNA_STORE``) and index
        URL (given or ``$EXPDNA_INDEX_URL``) resolved as the CLI and ``Store.open`` do."""
        if target is not None and not isinstance(target, (str, os.PathLike)):
            return cls(target=target)
        config = StoreConfig.resolve(target, index_url, os.environ if environ is None else environ)
        return cls(target=config if config.named else None)

    @property
    def configured(self) -> bool:
        return self.target is not None

    def _open(self) -> RunStore:
        if self._store is None:
            if isinstance(self.target, StoreConfig):
                self._store = _open_store(self.target)
            elif self.target is not None:
                self._store = self.target  # a store the caller opened
            else:
                raise RuntimeError("no store configured")
        return self._store

    def _call(self, what: str, call: Callable[[RunStore], object]) -> str | None:
        """``call(store)``; a warning when it failed (a store without the method too)."""
        if not self.configured:
            return None
        if self._failed:
            log.debug("%s: skipped, the store could not be opened (warned already)", what)
            return None
        _, warning = guarded(what, lambda: call(self._open()), self.deadline_s)
        if warning is not None and self._store is None:
            self._failed = True  # do not wait on a dead store once per phase
        return warning

    def record(self, manifest: Manifest) -> str | None:
        return self._call("recording the run in the store", lambda store: store.record(manifest))

    def record_metrics(self, run_id: str, metrics: Mapping[str, Any]) -> str | None:
        return self._call(
            "recording metrics in the store",
            lambda store: store.record_metrics(run_id, dict(metrics)),
        )

    def record_status(self, run_id: str, status: Mapping[str, Any]) -> str | None:
        return self._call(
            "recording the run's status in the store",
            lambda store: store.record_status(run_id, dict(status)),
        )

    def pin(self, run_id: str, digest: str, *, name: str, path: str, size: int) -> str | None:
        """``store.pin(run_id=, digest=, name=, path=, size=)``, the columns of its pins table."""
        if not self.configured:
            return "pin: no store configured (store= or $EXPDNA_STORE); the pin was not recorded"
        return self._call(
            "pinning the checkpoint",
            lambda store: store.pin(run_id=run_id, digest=digest, name=name, path=path, size=size),
        )

    def close(self) -> None:
        # Only a store the link opened itself is closed; a caller's store stays open.
        if self._store is not None and isinstance(self.target, StoreConfig):
            guarded("closing the store", self._store.close, self.deadline_s)
