"""gc against the training hook's entries, which no index holds yet: an object such an
entry names is never lost, however gc and the hook interleave (expdna.store.maintenance)."""

from __future__ import annotations

from pathlib import Path

from expdna.store import Store, maintenance
from expdna.store.config import StoreConfig
from expdna.store.deferred import LogWriter
from expdna.store.index.engine import open_index
from expdna.store.objects.directory import ObjectDir
from expdna.store.objects.spool import blobs_of
from tests.factories import synthetic


def test_gc_puts_back_an_object_a_pending_hook_entry_names(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:  # the store exists: the hook writes entries only
        store.record(synthetic(1))
    writer = LogWriter(StoreConfig.resolve(root))
    name = writer.record(synthetic(2))
    objects = ObjectDir(root / "objects")
    store_log = objects.open_log()
    named = blobs_of(store_log.read(name))
    # gc found these unreferenced by the index (it does not know the entry) and trashed
    # them after the hook's check: settling must put them back, not delete them
    trashed = {digest: objects.trash(digest) for digest in named}
    index = open_index(root, None)
    try:
        removed = maintenance._settle(
            objects,
            index,
            {d: w for d, w in trashed.items() if w is not None},
            store_log,
        )
    finally:
        index.dispose()
    assert removed == []
    assert all(objects.has(digest) for digest in named)
    with Store.open(root) as store:  # applied, and whole
        assert store.fsck().ok


def test_the_hook_writes_again_an_object_gc_removed_before_its_entry(tmp_path: Path) -> None:
    root = tmp_path / "store"
    manifest = synthetic(3)
    with Store.open(root) as store:
        store.record(synthetic(4))
    writer = LogWriter(StoreConfig.resolve(root))
    objects = ObjectDir(root / "objects")
    original = objects.remove
    gone: list[str] = []

    def put_then_lose(blobs: list[bytes]) -> list[str]:
        # the objects were there already and looked unreferenced: gc took them between
        # the hook's put (which found them) and its entry
        digests = ObjectDir.put_many(writer.objects, blobs)
        for digest in digests:
            original(digest)
            gone.append(digest)
        return digests

    writer.objects.put_many = put_then_lose  # type: ignore[method-assign]
    writer.record(manifest)
    assert gone and all(objects.has(digest) for digest in gone)
    with Store.open(root) as store:
        assert store.show(manifest.run_id)["run_id"] == manifest.run_id
        assert store.fsck().ok
