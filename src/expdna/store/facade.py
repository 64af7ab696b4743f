"""``Store``: the object directory and the index behind one small API.

    store = Store.open()                       # $EXPDNA_STORE or ~/.local/share/expdna
    store.record(manifest)                     # idempotent per run id
    store.twins("a7f3b2")                      # every run with that DNA
    store.find(Filter(("hardware.gpus.vbios_version",), "96.00.89.00.01"))

Write order for every record: blobs into the object directory (durable), then every index
row of the batch in one transaction. A crash leaves at worst unreferenced objects.

The record pipeline, the manifest model (pydantic), pins, lineage and metrics are imported
by the methods that use them, so a read-only query (``expdna twins``) loads only the index.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expdna.errors import ExpdnaError, InvalidInputError
from expdna.filesystems import DEFAULT_MOUNTS
from expdna.store import SQLITE_NAME, queries
from expdna.store.config import StoreConfig
from expdna.store.entities import (
    FsckReport,
    GcReport,
    LineageReport,
    PinRecord,
    RecordResult,
    RunRecord,
    RunSummary,
)
from expdna.store.errors import RunConflictError, StoreError
from expdna.store.index.chunks import chunks
from expdna.store.index.read import EngineReads, IndexReads, SqliteFile, local_sqlite
from expdna.store.index.readonly import writable
from expdna.store.index.revision import HEAD
from expdna.store.index.schema import stored_revision
from expdna.store.objects.interface import ObjectStore
from expdna.store.objects.place import open_objects
from expdna.store.presence import require_index
from expdna.store.queries import Filter

if TYPE_CHECKING:
    from expdna.manifest.model import Manifest
    from expdna.store.index.engine import Index
    from expdna.store.record.recorder import BatchItem, Recorder
    from expdna.store.record.sections import SectionMemo

log = logging.getLogger(__name__)

BATCH = 500
OBJECTS = "objects"


def _make_cache(root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{root}: cannot create the local cache: {exc.strerror}") from None


def _failed(source: str | None, exc: ExpdnaError, run_id: str = "") -> RecordResult:
    return RecordResult(
        run_id=run_id, dna=None, generated_at=None, status="failed", source=source, message=str(exc)
    )


def _load(path: str | os.PathLike[str], memo: SectionMemo) -> BatchItem:
    """Load and check one manifest file; a bad file becomes a ``failed`` result."""
    from expdna.manifest.io import load_manifest
    from expdna.store.record.prepare import prepare

    source = os.fspath(path)
    try:
        return prepare(load_manifest(source), source=source, memo=memo)
    except ExpdnaError as exc:
        return _failed(source, exc)


def _check(manifest: Manifest, source: str | None, memo: SectionMemo) -> BatchItem:
    """Check one loaded manifest; a bad one becomes a ``failed`` result."""
    from expdna.store.record.prepare import prepare

    try:
        return prepare(manifest, source=source, memo=memo)
    except ExpdnaError as exc:
        return _failed(source, exc, manifest.run_id)


def _reads_of(index: Index) -> IndexReads:
    """Reads of an open index: an SQLite file through the standard library, else the engine."""
    if index.dialect == "sqlite":
        return SqliteFile(Path(str(index.url.database)))
    return EngineReads(index)


def _sqlite_file(config: StoreConfig) -> Path | None:
    """The SQLite index file a config names; None for PostgreSQL."""
    if config.index_url is None:
        return config.root / SQLITE_NAME
    from expdna.store.index.engine import index_url  # a URL given: SQLAlchemy parses it

    resolved = index_url(config.root, config.index_url)
    return Path(str(resolved.database)) if resolved.drivername == "sqlite" else None


def _refuse_a_blank_index(config: StoreConfig, database: Path) -> None:
    """An SQLite index without expdna's tables over objects that hold a store: lost, as a
    deleted one is. A query must not make it a new, empty index that answers "no runs"."""
    from expdna.store.errors import IndexMissingError
    from expdna.store.objects.idfile import holds_objects
    from expdna.store.presence import INDEX_MISSING, OBJECTS

    if config.remote is None and holds_objects(config.root / OBJECTS):
        raise IndexMissingError(
            f"{INDEX_MISSING} (index {database} holds no expdna tables; object directory "
            f"{config.root / OBJECTS} holds the store)"
        )


def _bring_current(
    config: StoreConfig,
    database: Path | None,
    found: str | None,
    upgrade: bool | None,
    mounts_file: Path,
) -> None:
    """An index a reader found at another revision: one behind is upgraded (an SQLite one,
    where it can be written, or when ``upgrade``), else the error says why and how."""
    from expdna.store.index.engine import open_index
    from expdna.store.index.migrate import ensure_current, upgradable

    auto = database is not None if upgrade is None else upgrade
    if auto and upgradable(found):
        if database is not None and not writable(database):
            raise StoreError(
                f"index {database} is at revision {found or '(empty)'}, this expdna "
                f"needs {HEAD}, and it is read-only here: upgrade it where it can be "
                "written (`expdna db upgrade`) or use the expdna that recorded it"
            )
        writer = open_index(config.root, config.index_url, mounts_file=mounts_file)
        try:
            ensure_current(writer, auto_upgrade=True)
        finally:
            writer.dispose()
        return
    index = open_index(config.root, config.index_url, mounts_file=mounts_file, read_only=True)
    try:
        ensure_current(index, auto_upgrade=False)  # says why, and how to upgrade
    finally:
        index.dispose()


class Store:
    """A content-addressed object directory (or bucket) plus a SQL index over every
    recorded run."""

    def __init__(
        self,
        root: Path,
        index: Index | None,
        objects: ObjectStore | None = None,
        *,
        reads: IndexReads | None = None,
        opener: Callable[[], Index] | None = None,
    ) -> None:
        """``index``: the open SQLAlchemy index, or None where ``opener`` opens it on first
        use (a read-only store: its queries go through ``reads`` and never load it)."""
        #: the store directory; for a store in a bucket, its local cache directory
        self.root = root
        self.objects: ObjectStore = (
            objects if objects is not None else open_objects(StoreConfig(path=root))
        )
        self.log = self.objects.open_log()
        self._index = index
        self._opener = opener
        if reads is None:
            if index is None:
                raise TypeError("Store needs an index or its reads")
            reads = _reads_of(index)
        #: where every query reads (expdna.store.index.read)
        self.reads: IndexReads = reads
        self._pipeline: tuple[Recorder, SectionMemo] | None = None

    @property
    def index(self) -> Index:
        """The SQLAlchemy index, for writes (opened here on first use when the store was
        opened for reading)."""
        if self._index is None:
            if self._opener is None:
                raise TypeError("Store has no index to open")
            self._index = self._opener()
        return self._index

    @property
    def _recorder(self) -> Recorder:
        return self._record_pipeline()[0]

    @property
    def _memo(self) -> SectionMemo:
        return self._record_pipeline()[1]

    def _record_pipeline(self) -> tuple[Recorder, SectionMemo]:
        # Made on the first record: queries never load the record pipeline or pydantic.
        if self._pipeline is None:
            from expdna.store.record.recorder import Recorder
            from expdna.store.record.sections import SectionMemo

            self._pipeline = (Recorder(self.objects, self.index), SectionMemo())
        return self._pipeline

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        index_url: str | None = None,
        *,
        mounts_file: Path = DEFAULT_MOUNTS,
        upgrade: bool | None = None,
    ) -> Store:
        """Open (and create) a store.

        ``path``: the store directory (default ``$EXPDNA_STORE`` or the user data dir).
        ``index_url``: a PostgreSQL URL for a shared index (default ``$EXPDNA_INDEX_URL``,
        else ``<path>/index.sqlite``). The embedded SQLite index is created and upgraded
        here; a PostgreSQL index must be at the current revision (``expdna db upgrade``).
        ``upgrade``: force (True) or forbid (False) the automatic upgrade.
        """
        config = StoreConfig.resolve(path, index_url)
        return cls.from_config(config, mounts_file=mounts_file, upgrade=upgrade)

    @classmethod
    def open_unchecked(
        cls,
        path: str | os.PathLike[str] | None = None,
        index_url: str | None = None,
        *,
        mounts_file: Path = DEFAULT_MOUNTS,
    ) -> Store:
        """Open without checking the schema revision (``expdna db`` commands)."""
        config = StoreConfig.resolve(path, index_url)
        return cls.from_config(config, mounts_file=mounts_file, checked=False)

    @classmethod
    def from_config(
        cls,
        config: StoreConfig,
        *,
        mounts_file: Path = DEFAULT_MOUNTS,
        upgrade: bool | None = None,
        checked: bool = True,
        read_only: bool = False,
        bind: bool = True,
    ) -> Store:
        """The store ``config`` names, as :meth:`open` (``checked=False``:
        :meth:`open_unchecked`, no directory made and no revision check;
        ``read_only=True``: :meth:`open_for_reading`; ``bind=False``: the store id is not
        checked, for ``reindex``, which sets it)."""
        require_index(config)  # before open_index, which would create an empty one
        if read_only:
            return cls._for_reading(
                config, mounts_file=mounts_file, upgrade=upgrade, checked=checked
            )
        return cls._for_writing(
            config, mounts_file=mounts_file, upgrade=upgrade, checked=checked, bind=bind
        )

    @classmethod
    def _for_writing(
        cls,
        config: StoreConfig,
        *,
        mounts_file: Path,
        upgrade: bool | None,
        checked: bool,
        bind: bool,
    ) -> Store:
        from expdna.store import identity
        from expdna.store.catchup import apply_pending
        from expdna.store.index.engine import open_index
        from expdna.store.index.migrate import ensure_current

        root = config.root
        objects = open_objects(config)
        if config.remote is not None and config.index_url is None:
            _make_cache(root)  # the local SQLite index of a store in a bucket
        if not checked:
            index = open_index(root, config.index_url, mounts_file=mounts_file)
            return cls(root, index, objects)
        try:
            index = open_index(root, config.index_url, mounts_file=mounts_file)
        except OSError as exc:
            raise StoreError(f"{root}: cannot create the store: {exc.strerror}") from None
        store = cls(root, index, objects)
        try:
            auto = index.dialect == "sqlite" if upgrade is None else upgrade
            ensure_current(index, auto_upgrade=auto)
            if bind:  # before any directory is made: a refused store is left as it was
                identity.bind(store.objects, index)
            if config.remote is None:
                root.mkdir(parents=True, exist_ok=True)
            store.objects.ensure()
            if bind:
                apply_pending(store.objects, index, store.log)
        except OSError as exc:
            index.dispose()
            raise StoreError(f"{root}: cannot create the store: {exc.strerror}") from None
        except BaseException:
            index.dispose()
            raise
        return store

    @classmethod
    def open_for_reading(
        cls,
        path: str | os.PathLike[str] | None = None,
        index_url: str | None = None,
        *,
        mounts_file: Path = DEFAULT_MOUNTS,
    ) -> Store:
        """Open an existing store for queries, creating and changing nothing.

        A missing store is a :class:`StoreError` ("no store at PATH"), and the SQLite index
        is opened read-only, so a store the user cannot write answers too. An SQLite index
        behind this expdna is still upgraded, as :meth:`open` does, when it can be written.
        """
        config = StoreConfig.resolve(path, index_url)
        return cls._for_reading(config, mounts_file=mounts_file, upgrade=None)

    @classmethod
    def _for_reading(
        cls,
        config: StoreConfig,
        *,
        mounts_file: Path,
        upgrade: bool | None,
        checked: bool = True,
    ) -> Store:
        """The read path: a local SQLite index at this expdna's revision is read with the
        standard library alone (expdna.store.index.read); SQLAlchemy and alembic load only
        for PostgreSQL, an index to upgrade, or a write."""
        root = config.root
        database = _sqlite_file(config)
        if database is not None and not database.is_file():
            if config.remote is not None:
                raise StoreError(
                    f"no local index for {config.remote} (expected {database}): "
                    f"`expdna --store {config.remote} reindex` builds it from the bucket"
                )
            where = f"store at {root}" if config.index_url is None else f"index at {database}"
            raise StoreError(f"no {where}")

        def opener() -> Index:
            from expdna.store.index.engine import open_index

            return open_index(root, config.index_url, mounts_file=mounts_file, read_only=True)

        index: Index | None = None
        if database is None:  # PostgreSQL: through SQLAlchemy
            index = opener()
            reads: IndexReads = EngineReads(index)
        else:
            local_sqlite(database, mounts_file)
            reads = SqliteFile(database)
        try:
            found = stored_revision(reads) if checked else HEAD
            if found is None and database is not None:
                _refuse_a_blank_index(config, database)
            if found != HEAD:
                _bring_current(config, database, found, upgrade, mounts_file)
        except BaseException:
            if index is not None:
                index.dispose()
            raise
        store = cls(root, index, open_objects(config), reads=reads, opener=opener)
        if checked and store.log.pending():  # the training hook's entries: applied where it can be
            store._catch_up(config, database, mounts_file)
        return store

    def _catch_up(self, config: StoreConfig, database: Path | None, mounts_file: Path) -> None:
        """Apply pending log entries before a query, through a writing index; a store
        this process cannot write answers without them (as it was)."""
        if database is not None and not writable(database):
            log.info("%s: pending log entries left for a writer (read-only here)", self.root)
            return
        from expdna.store import identity
        from expdna.store.catchup import apply_pending
        from expdna.store.index.engine import open_index

        writer = open_index(self.root, config.index_url, mounts_file=mounts_file)
        try:
            identity.bind(self.objects, writer)
            apply_pending(self.objects, writer, self.log)
        finally:
            writer.dispose()

    def close(self) -> None:
        self.reads.close()
        if self._index is not None:
            self._index.dispose()
        closing = getattr(self.objects, "close", None)
        if closing is not None:
            closing()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- recording -------------------------------------------------------------------

    def record(
        self,
        manifest: Manifest,
        *,
        attachments: Iterable[bytes] = (),
        source: str | None = None,
    ) -> RecordResult:
        """Record one manifest; recording it again changes nothing (status ``skipped``).

        Raises :class:`DnaMismatchError` for a manifest whose DNA does not match its
        content, :class:`RunConflictError` when the run id is recorded with other content.
        """
        from expdna.store.record.prepare import prepare

        prepared = prepare(manifest, source=source, attachments=attachments, memo=self._memo)
        result = next(self._recorder.run([[prepared]]))
        if result.status == "conflict":
            raise RunConflictError(result.message or "conflict")
        if result.status == "failed":  # its lineage would close a cycle
            raise InvalidInputError(result.message or "failed")
        return result

    def record_many(
        self,
        manifests: Iterable[Manifest],
        *,
        sources: Iterable[str] | None = None,
        batch_size: int = BATCH,
    ) -> list[RecordResult]:
        """Record many manifests, one transaction per batch of ``batch_size``. From the
        second batch on, a helper process writes each batch's blobs while the next batch is
        checked (:mod:`expdna.store.record.recorder`); it ends with the call.

        Each batch is checked whole before any of it is written: an invalid manifest
        raises, and only the batches before it are recorded (recording them again skips
        them). Conflicting run ids come back with status ``conflict``, and a run whose lineage
        would close a cycle with status ``failed`` (its reason in ``message``). ``sources`` (one
        file name per manifest) label errors and results.
        """
        from expdna.store.record.prepare import prepare

        labels = iter(sources) if sources is not None else None
        batches = (
            [
                prepare(m, source=next(labels) if labels is not None else None, memo=self._memo)
                for m in chunk
            ]
            for chunk in chunks(manifests, batch_size)
        )
        return list(self._recorder.run(batches))

    def record_files(
        self, paths: Iterable[str | os.PathLike[str]], *, batch_size: int = BATCH
    ) -> Iterator[RecordResult]:
        """Record manifest files, yielding one result per file; a bad file is ``failed``."""
        batches = ([_load(p, self._memo) for p in chunk] for chunk in chunks(paths, batch_size))
        yield from self._recorder.run(batches)

    def record_each(
        self,
        manifests: Iterable[tuple[str | None, Manifest]],
        *,
        batch_size: int = BATCH,
    ) -> Iterator[RecordResult]:
        """Record (source, manifest) pairs one result each: a manifest that fails its checks
        is a ``failed`` result and the others are still recorded."""
        batches = (
            [_check(manifest, source, self._memo) for source, manifest in chunk]
            for chunk in chunks(manifests, batch_size)
        )
        yield from self._recorder.run(batches)

    def scan(
        self,
        directory: str | os.PathLike[str],
        *,
        batch_size: int = BATCH,
        passed_over: Callable[[Path, str], None] | None = None,
    ) -> Iterator[RecordResult]:
        """Record every ``manifest_*.json`` below ``directory`` (sorted; recorded ones skipped).

        ``passed_over(path, reason)`` hears of each ``.json`` file that is not recorded
        because of its name or its kind (a FIFO, a directory).
        """
        from expdna.store.record.scan import candidates

        yield from self.record_files(
            candidates(Path(directory), passed_over), batch_size=batch_size
        )

    # -- reading ---------------------------------------------------------------------

    def get(self, ref: str) -> RunRecord:
        """A run by id or DNA prefix (the newest run of that DNA)."""
        with self.reads.read() as conn:
            return queries.resolve(conn, ref)

    def show(self, ref: str, *, inline: bool = False) -> dict[str, Any]:
        """The recorded manifest document; ``inline``: the self-contained file form."""
        record = self.get(ref)
        doc: dict[str, Any] = json.loads(self.objects.read_verified(record.manifest_digest))
        if inline:
            from expdna.store.record.storeform import to_file_form

            return to_file_form(doc, self.objects.read_verified)
        return doc

    def load(self, ref: str) -> Manifest:
        """The recorded manifest as a model, patch texts inline."""
        from expdna.manifest.model import Manifest

        return Manifest.model_validate(self.show(ref, inline=True))

    def runs(
        self,
        *,
        dna_prefix: str | None = None,
        where: Sequence[Filter] = (),
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[RunSummary]:
        """Runs, newest first, matching every given condition."""
        with self.reads.read() as conn:
            return queries.select_runs(
                conn, dna_prefix=dna_prefix, filters=where, since=since, limit=limit
            )

    def twins(self, ref: str | Manifest, *, across_seeds: bool = False) -> list[RunSummary]:
        """Every run with the DNA of ``ref`` (a run id, a DNA prefix or a manifest);
        ``across_seeds``: every run of its family (the same DNA once seeds are left out)."""
        if not isinstance(ref, str):  # a Manifest: pydantic is loaded already
            from expdna.manifest.dna import stored_version, verify_dna
            from expdna.manifest.family import family_of

            # In the DNA version it was written in, as record computes it: a file and the
            # run recorded from it have the same twins.
            version = stored_version(ref)
            dna: str = verify_dna(ref).value
            family: str | None = family_of(ref, version=version)
        else:
            record = self.get(ref)
            dna, family = record.dna, record.family
            if across_seeds and family is None:  # recorded before family digests
                from expdna.manifest.family import family_of

                family = family_of(self.show(record.run_id), version=record.dna_version)
        with self.reads.read() as conn:
            if across_seeds:
                return queries.select_runs(conn, family=family)
            return queries.select_runs(conn, dna=dna)

    def fill_families(self) -> int:
        """Give runs recorded before family (or setup) digests theirs, from their stored
        manifests (``expdna db upgrade`` calls it); returns how many runs were filled in."""
        from sqlalchemy import or_, select, update

        from expdna.manifest.dna import dna_value, stored_version
        from expdna.manifest.family import seedless_sections, setup_value
        from expdna.store.index.models import Blob, Run

        filled = 0
        while True:
            with self.index.read() as conn:
                rows = conn.execute(
                    select(Run.id, Blob.digest)
                    .join(Blob, Blob.id == Run.manifest_blob_id)
                    .where(or_(Run.family.is_(None), Run.setup.is_(None)))
                    .limit(1000)
                ).all()
            if not rows:
                return filled
            updates = []
            for run_key, digest in rows:
                doc = json.loads(self.objects.read_verified(digest))
                # Computed in the DNA version of the run's own DNA.
                version = stored_version(doc)
                seedless = seedless_sections(doc, version=version)
                updates.append(
                    {
                        "key": run_key,
                        "family": dna_value(seedless, version=version),
                        "setup": setup_value(seedless, version=version),
                    }
                )
            with self.index.write() as conn:
                for row in updates:
                    conn.execute(
                        update(Run)
                        .where(Run.id == row["key"])
                        .values(family=row["family"], setup=row["setup"])
                    )
            filled += len(updates)

    def find(self, *filters: Filter, limit: int | None = None) -> list[RunSummary]:
        """Runs matching every filter (AND), newest first."""
        with self.reads.read() as conn:
            return queries.select_runs(conn, filters=filters, limit=limit)

    def unknown_paths(self, filters: Sequence[Filter]) -> dict[str, list[str]]:
        """Each filter path no recorded run has -> the nearest paths some run has."""
        with self.reads.read() as conn:
            return queries.unknown_paths(conn, filters)

    def find_ids(self, *filters: Filter, limit: int | None = None) -> list[tuple[str, str]]:
        """(run id, DNA) of the runs matching every filter, newest first (find, lighter)."""
        with self.reads.read() as conn:
            return queries.select_ids(conn, filters=filters, limit=limit)

    def resolve_dna(self, prefix: str) -> str:
        """The full DNA a prefix of at least 6 hex names (ambiguous: exit 2)."""
        with self.reads.read() as conn:
            return queries.resolve_dna(conn, prefix)

    # -- metrics, pins, lineage, export --------------------------------------------

    def record_metrics(self, run_id: str, metrics: Mapping[str, Any]) -> dict[str, float]:
        """Add or replace final metrics of a recorded run; returns its numeric metrics now.

        Metrics are outside the DNA: the run's identity and stored manifest do not change.
        A name given again replaces its old value; others stay. Unknown run: exit 1.
        """
        from expdna.store import metrics as metrics_mod

        return metrics_mod.record_metrics(self.index, self.log, run_id, metrics)

    def record_status(self, run_id: str, status: Mapping[str, Any]) -> str | None:
        """Tell the store how a recorded run ended (``status`` as the manifest's section);
        returns the state now. Outside the DNA, like metrics: the stored manifest stays,
        the index's ``runs.state`` and ``status.`` facts change. Unknown run: exit 1."""
        from expdna.store import status as status_mod

        return status_mod.record_status(self.index, self.log, run_id, status)

    def metrics(self, ref: str) -> dict[str, float]:
        """The numeric final metrics of a run (by id or DNA prefix), by flattened name."""
        from expdna.store import metrics as metrics_mod

        return metrics_mod.metrics_of(self.reads, ref)

    def pin(
        self,
        *,
        run_id: str,
        digest: str,
        name: str | None = None,
        path: str | None = None,
        size: int | None = None,
    ) -> PinRecord:
        """Bind a checkpoint's digest (``[blake3:]<hex>``, never the file) and name to a run
        (id or DNA prefix) and its DNA. Pinning it again changes nothing."""
        from expdna.store import pins

        return pins.pin(
            self.index, self.log, run_id=run_id, digest=digest, name=name, path=path, size=size
        )

    def pin_file(
        self,
        path: str | os.PathLike[str],
        *,
        run: str,
        name: str | None = None,
        use_cache: bool = True,
    ) -> PinRecord:
        """Hash a checkpoint file and pin it to ``run``; ``name`` defaults to the file name.

        The path is kept (redacted, as manifests write paths) so ``which NAME`` can say
        whether the file there still holds these bytes.
        """
        from expdna.store import checkpoints

        return checkpoints.pin_file(
            self.index, self.log, path, run=run, name=name, use_cache=use_cache
        )

    def which(self, target: str, *, use_cache: bool = True) -> list[PinRecord]:
        """The pins answering ``target``, newest first: an existing file by its content (a
        renamed or copied checkpoint is found), ``blake3:<hex>`` by digest, else a name."""
        from expdna.store import checkpoints

        return checkpoints.which(self.reads, target, use_cache=use_cache)

    def link(self, parent: str, child: str, relation: str) -> bool:
        """Record ``child <relation> parent`` between two recorded runs (ids or DNA
        prefixes); True when the edge is new. A cycle or a self-link is refused (exit 2)."""
        from expdna.store import lineage

        return lineage.link_runs(self.index, self.log, parent, child, relation)

    def lineage(self, ref: str) -> LineageReport:
        """Ancestors and descendants of a run, transitively, nearest first. A run id that is
        not recorded but named by recorded edges (a parent recorded later) is answered too."""
        from expdna.store import lineage

        return lineage.report(self.reads, ref)

    def export_parquet(
        self,
        path: str | os.PathLike[str],
        *,
        where: Sequence[Filter] = (),
        since: datetime | None = None,
        columns: Sequence[str] = (),
    ) -> int:
        """One Parquet row per matching run (key fields, section digests, ``metric_<name>``
        columns, and a string column per manifest path in ``columns``), written atomically;
        returns the number of rows."""
        from expdna.store.export import export_parquet

        return export_parquet(self.reads, Path(path), filters=where, since=since, columns=columns)

    # -- maintenance -----------------------------------------------------------------

    @property
    def index_location(self) -> str:
        """Where the index is, for messages: its URL without a password."""
        return self.reads.where

    def index_revision(self) -> tuple[str | None, str]:
        """The index's schema revision (None when empty) and the one this expdna needs."""
        return stored_revision(self.reads), HEAD

    def upgrade_index(self) -> tuple[str | None, str]:
        """Bring the index to this expdna's schema revision; returns (before, after)."""
        from expdna.store.index.migrate import upgrade

        return upgrade(self.index)

    def fsck(self) -> FsckReport:
        from expdna.store.fsck import fsck

        return fsck(self.objects, self.reads, self.log)

    def gc(self, *, dry_run: bool = False, grace_s: float | None = None) -> GcReport:
        """``grace_s``: default :data:`expdna.store.maintenance.DEFAULT_GRACE_S`."""
        from expdna.store import maintenance

        grace = maintenance.DEFAULT_GRACE_S if grace_s is None else grace_s
        return maintenance.gc(
            self.objects, self.index, dry_run=dry_run, grace_s=grace, log_dir=self.log
        )
