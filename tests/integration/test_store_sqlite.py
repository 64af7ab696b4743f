"""The Store API on a real SQLite index: recording, idempotence, queries, fsck and gc."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import pytest

from expdna.digest import hex_of, ref_of
from expdna.manifest.io import load_manifest, manifest_from_dict, serialise, write_manifest
from expdna.manifest.model import Manifest
from expdna.store import Filter, Store
from expdna.store.errors import (
    AmbiguousPrefixError,
    DnaMismatchError,
    InvalidRunRefError,
    NetworkFilesystemError,
    RunConflictError,
    RunNotFoundError,
)
from expdna.store.queries import named_filter, parse_where
from tests.factories import (
    DRIVER,
    PATCH_TEXT,
    VBIOS,
    collide_prefix,
    manifest_of,
    synthetic,
    synthetic_doc,
)

T = TypeVar("T")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    opened = Store.open(tmp_path / "store")
    yield opened
    opened.close()


def test_open_creates_the_store_and_an_sqlite_index_in_wal_mode(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        assert store.index.dialect == "sqlite"
    assert (tmp_path / "s" / "objects").is_dir()
    conn = sqlite3.connect(tmp_path / "s" / "index.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "runs",
        "facts",
        "fact_paths",
        "fact_values",
        "blobs",
        "run_blobs",
        "pins",
        "lineage",
        "metrics",
        "alembic_version",
    } <= tables


def test_open_refuses_sqlite_on_a_network_filesystem(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/vda / ext4 rw 0 0\nfiler:/vol {tmp_path} nfs4 rw 0 0\n")
    with pytest.raises(NetworkFilesystemError, match="postgresql") as caught:
        Store.open(tmp_path / "store", mounts_file=mounts)
    assert caught.value.exit_code == 2
    assert "--index-url" in str(caught.value)
    assert not (tmp_path / "store" / "index.sqlite").exists()


def test_record_is_idempotent_per_run_id(store: Store) -> None:
    manifest = synthetic(1)
    first = store.record(manifest)
    assert first.status == "recorded" and first.dna == manifest.dna.value  # type: ignore[union-attr]
    objects = sorted(store.objects)
    again = store.record(manifest)
    assert again.status == "skipped"
    assert sorted(store.objects) == objects
    assert [r.run_id for r in store.runs()] == [manifest.run_id]


def test_the_same_run_id_with_other_content_is_a_conflict(store: Store) -> None:
    store.record(synthetic(2))
    doc = synthetic_doc(2)
    doc["collection"]["collectors"]["git"]["duration_ms"] = 99.0  # outside the DNA
    changed = manifest_of(doc)
    with pytest.raises(RunConflictError, match="never changed"):
        store.record(changed)
    assert store.record_many([changed])[0].status == "conflict"
    # final metrics are what the hook adds after recording: its file is the same run
    later = synthetic(2)
    before = store.metrics(later.run_id)
    later.metrics["final_loss"] = 0.1
    assert store.record(later).status == "skipped"
    assert store.metrics(later.run_id) == before  # recording again changed nothing


def test_an_edited_manifest_is_refused_and_nothing_is_written(store: Store) -> None:
    manifest = synthetic(3)
    manifest.command.argv[3] = "0.1"  # an argument edited after the DNA was computed
    with pytest.raises(DnaMismatchError, match="corrupted or edited"):
        store.record(manifest)
    assert list(store.objects) == [] and store.runs() == []


def test_a_patch_shared_by_many_runs_is_stored_once(store: Store) -> None:
    results = store.record_many([synthetic(i) for i in range(20)])
    assert {r.status for r in results} == {"recorded"}
    patch = hex_of(PATCH_TEXT.encode())
    assert store.objects.has(patch)
    assert len(list(store.objects)) == 21  # 20 manifests + 1 patch
    stored = json.loads(store.objects.read(store.get(results[0].run_id).manifest_digest))
    assert "text" not in stored["code"]["train"]["patch"]
    assert stored["code"]["train"]["patch"]["digest"] == f"blake3:{patch}"


def test_show_inline_is_byte_identical_to_the_manifest_file(store: Store, tmp_path: Path) -> None:
    path = write_manifest(synthetic(4), tmp_path / "m.json")
    result = store.record(load_manifest(path))
    shown = store.show(result.run_id, inline=True)
    assert serialise(shown) == path.read_bytes()
    assert store.load(result.run_id) == load_manifest(path)
    assert "text" not in store.show(result.run_id)["code"]["train"]["patch"]


def test_a_manifest_without_dna_gets_one(store: Store) -> None:
    manifest = manifest_from_dict(synthetic_doc(5))
    result = store.record(manifest)
    assert result.dna == synthetic(5).dna.value  # type: ignore[union-attr]
    assert store.show(result.run_id)["dna"]["value"] == result.dna


def test_attachments_are_stored_as_blobs(store: Store) -> None:
    store.record(synthetic(6), attachments=[b"listing"])
    assert store.objects.read(hex_of(b"listing")) == b"listing"
    assert store.fsck().ok


def test_record_files_reports_bad_files_and_records_the_rest(store: Store, tmp_path: Path) -> None:
    good = write_manifest(synthetic(7), tmp_path / "manifest_good.json")
    (tmp_path / "manifest_bad.json").write_text("{not json")
    edited = json.loads(good.read_text())
    edited["run_id"] = "20260805_000000_1c8e2fb_edit"
    edited["command"]["argv"][3] = "0.1"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "manifest_edited.json").write_text(json.dumps(edited))
    results = list(store.scan(tmp_path))
    by_status = {r.status: r for r in results}
    assert sorted(r.status for r in results) == ["failed", "failed", "recorded"]
    assert by_status["recorded"].source == str(good)
    messages = " ".join(r.message or "" for r in results)
    assert "invalid JSON" in messages and "corrupted or edited" in messages
    assert [r.status for r in store.scan(tmp_path) if r.source == str(good)] == ["skipped"]


@pytest.fixture
def history(store: Store) -> Store:
    """40 runs: 20 setups of 2 runs; every 5th setup on one VBIOS, odd setups on DRIVER."""
    manifests = [
        synthetic(
            i,
            setup=i // 2,
            vbios=VBIOS if (i // 2) % 5 == 0 else "96.00.5A.00.01",
            driver=DRIVER if (i // 2) % 2 else "535.104.05",
        )
        for i in range(40)
    ]
    store.record_many(manifests, batch_size=16)
    return store


def test_twins_are_every_run_with_the_same_dna(history: Store) -> None:
    twins = history.twins(synthetic(6, setup=3).run_id)
    assert sorted(r.run_id for r in twins) == sorted(synthetic(i).run_id for i in (6, 7))
    assert len({r.dna for r in twins}) == 1
    assert [r.run_id for r in history.twins(synthetic(99, setup=3, driver=DRIVER))] == [
        r.run_id for r in twins
    ]
    assert history.twins(synthetic(99, setup=1000)) == []


def test_find_by_vbios_driver_and_any_path(history: Store) -> None:
    on_vbios = history.find(named_filter("vbios", VBIOS))
    expected = (0, 1, 10, 11, 20, 21, 30, 31)
    assert sorted(r.run_id for r in on_vbios) == sorted(synthetic(i).run_id for i in expected)
    both = history.find(named_filter("vbios", VBIOS), named_filter("driver", DRIVER))
    assert sorted(r.run_id for r in both) == sorted(synthetic(i).run_id for i in (10, 11, 30, 31))
    assert len(history.find(named_filter("driver", DRIVER))) == 20
    assert len(history.find(named_filter("gpu", "NVIDIA H100 80GB HBM3"))) == 40
    assert len(history.find(parse_where("training.global_batch_size=16"))) == 40
    assert len(history.find(parse_where("config.resolved_args.seed=3"))) == 2
    assert history.find(parse_where("no.such.path=1")) == []
    assert len(history.find(named_filter("cuda", "12.4"), limit=5)) == 5


def test_runs_filters_and_order(history: Store) -> None:
    runs = history.runs()
    assert len(runs) == 40
    assert [r.generated_at for r in runs] == sorted((r.generated_at for r in runs), reverse=True)
    assert len(history.runs(limit=3)) == 3
    dna = runs[0].dna
    assert {r.dna for r in history.runs(dna_prefix=dna[:8])} == {dna}
    since = datetime(2026, 8, 5, 0, 0, 30)
    assert len(history.runs(since=since)) == 10
    assert len(history.runs(where=[Filter(("run_id",), runs[5].run_id)])) == 1
    assert len(history.runs(where=[Filter(("dna.value",), dna)])) == 2
    assert history.runs(where=[parse_where("training.algorithm=none")]) == []


def test_resolving_runs_and_dna_prefixes(history: Store) -> None:
    run = history.runs()[0]
    assert history.get(run.run_id).run_id == run.run_id
    newest = history.get(run.dna[:6])
    assert newest.dna == run.dna and newest.manifest_digest
    assert history.resolve_dna(run.dna[:10].upper()) == run.dna
    with pytest.raises(RunNotFoundError):
        history.get("20990101_000000_nogit_zzzz")
    with pytest.raises(InvalidRunRefError):
        history.get("../../etc/passwd")
    with pytest.raises(InvalidRunRefError, match="at least 6"):
        history.get("abc")


def test_an_ambiguous_prefix_lists_the_candidates(history: Store) -> None:
    first, second = history.runs()[0], history.runs()[2]
    crafted = collide_prefix(history, second.run_id, first.dna)
    with pytest.raises(AmbiguousPrefixError) as caught:
        history.get(first.dna[:6])
    assert caught.value.exit_code == 2
    assert sorted(caught.value.candidates) == sorted([first.dna[:12], crafted[:12]])
    assert history.get(first.dna[:7]).dna == first.dna


def test_fsck_is_clean_then_names_a_corrupt_and_a_missing_object(history: Store) -> None:
    report = history.fsck()
    assert report.ok and report.runs == 40 and report.objects == 41
    victim = history.get(history.runs()[0].run_id).manifest_digest
    path = history.objects.path(victim)
    os.chmod(path, 0o644)
    path.write_bytes(b"{}")
    missing = history.get(history.runs()[1].run_id).manifest_digest
    history.objects.path(missing).unlink()
    problems = history.fsck().problems
    assert len(problems) == 2
    assert any(victim in p and "corrupt" in p for p in problems)
    assert any(missing in p and "missing" in p and history.runs()[1].run_id in p for p in problems)


def test_gc_removes_only_unreferenced_objects(history: Store) -> None:
    stray = history.objects.put(b"left by a recorder that died")
    temp = history.objects.root / stray[:2] / ".tmp-dead"
    temp.write_bytes(b"half")
    fresh = history.objects.root / stray[:2] / ".tmp-writing"
    fresh.write_bytes(b"a recorder's work in progress")
    old = time.time() - 1200  # a temporary file is a writer's for 10 minutes, at any grace
    os.utime(temp, (old, old))
    assert history.fsck().ok and history.fsck().unreferenced == 1
    young = history.gc()
    assert young.removed == [] and young.kept_young == 1
    dry = history.gc(dry_run=True, grace_s=0)
    assert dry.removed == [stray] and history.objects.has(stray) and temp.exists()
    done = history.gc(grace_s=0)
    assert done.removed == [stray] and done.temp_files == [str(temp)]
    assert not history.objects.has(stray) and not temp.exists() and fresh.exists()
    fresh.unlink()
    after = history.fsck()
    assert after.ok and after.objects == 41 and after.unreferenced == 0


def test_metrics_are_recorded(store: Store) -> None:
    from sqlalchemy import select

    from expdna.store.index.models import Metric

    store.record(synthetic(3))
    with store.index.read() as conn:
        rows = sorted(conn.execute(select(Metric.name, Metric.value)).all())
    assert rows == [("final_loss", 0.25), ("reward.mean", 0.5)]


def test_index_stays_small(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        store.record_many([synthetic(i, setup=i // 2) for i in range(400)])
    conn = sqlite3.connect(tmp_path / "s" / "index.sqlite")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0] * pages
    assert size / 400 < 4096, f"{size / 400:.0f} bytes per run"


def test_expdna_store_is_the_facade(tmp_path: Path) -> None:
    import expdna

    assert expdna.Store is Store
    assert ref_of(b"").startswith("blake3:")


def test_a_file_in_the_way_is_one_clear_error(tmp_path: Path) -> None:
    from expdna.store.errors import StoreError

    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match="cannot create the store"):
        Store.open(tmp_path / "file" / "store")


def test_a_run_twice_in_one_batch(store: Store) -> None:
    manifest, changed = synthetic(20), synthetic(20)
    changed.metrics["final_loss"] = 0.0
    statuses = [r.status for r in store.record_many([manifest, manifest, changed])]
    assert statuses == ["recorded", "skipped", "conflict"]
    assert len(store.runs()) == 1 and store.fsck().ok


@pytest.mark.skipif(
    not hasattr(sqlite3.Connection, "setlimit"), reason="sqlite3 sets limits from Python 3.11"
)
def test_a_batch_splits_its_inserts_to_the_parameters_sqlite_allows(store: Store) -> None:
    from sqlalchemy import event

    def limited(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        # SQLite's default before 3.32: 47 runs rows a statement, 499 of two columns
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)

    event.listen(store.index.engine, "connect", limited)
    store.index.engine.dispose()
    manifests = [synthetic(i, setup=i // 2, vbios=VBIOS if i % 3 else "other") for i in range(120)]
    assert {r.status for r in store.record_many(manifests, batch_size=120)} == {"recorded"}
    assert len(store.runs()) == 120 and store.fsck().ok
    assert len(store.find(named_filter("vbios", VBIOS))) == 80
    twice = [r.status for r in store.record_many(manifests[:3])]
    assert twice == ["skipped"] * 3


def test_only_writes_that_apply_synced_log_entries_skip_the_wal_sync(store: Store) -> None:
    """A transaction applying log entries commits with synchronous=NORMAL (the log replays
    what a power loss undoes); any other write keeps the connection's FULL."""
    from sqlalchemy import Connection

    def level(conn: Connection) -> int:
        return int(conn.exec_driver_sql("PRAGMA synchronous").scalar_one())

    assert store.index.write_retrying(level, logged=True) == 1
    with store.index.write() as conn:
        assert level(conn) == 2
    assert store.index.write_retrying(level) == 2
    levels: list[int] = []
    original = store.index.write_retrying

    def spy(body: Callable[[Connection], T], *, logged: bool = False) -> T:
        return original(lambda conn: (levels.append(level(conn)), body(conn))[1], logged=logged)

    store.index.write_retrying = spy  # type: ignore[method-assign]
    store.record_many([synthetic(1), synthetic(2)])
    store.record_many([synthetic(1)])  # skipped: applies no entry
    assert levels == [1, 2]


def test_recording_pauses_the_garbage_collector_per_batch_only(store: Store) -> None:
    import gc

    seen: list[bool] = []

    def manifests() -> Iterator[Manifest]:
        for i in range(6):
            seen.append(gc.isenabled())  # pulled while its batch is being made
            yield synthetic(i)

    assert gc.isenabled()
    store.record_many(manifests(), batch_size=3)
    assert seen == [False] * 6 and gc.isenabled()
    gc.disable()
    try:  # a caller's own choice is left alone
        store.record_many([synthetic(7)])
        assert not gc.isenabled()
    finally:
        gc.enable()
