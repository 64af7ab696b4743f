"""``expdna reindex``: the index rebuilt from the object directory answers as before.

Each test records runs, pins, links and metrics updates, saves the answers of ``show
--json``, ``which``, ``lineage`` and ``stability``, damages the index (deleted, truncated,
corrupted; on SQLite and on the real PostgreSQL server), checks fsck and gc name
``reindex``, rebuilds, and compares every answer.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from expdna.cli import cli as cli_group
from expdna.store import SQLITE_NAME, Store
from expdna.store.objects.log import StoreLog
from tests.factories import manifest_of, run, seed_doc, synthetic

PIN = "ab" * 32


def cli(root: Path, *args: str, index_url: str | None = None) -> Result:
    options = ["--store", str(root)] + (["--index-url", index_url] if index_url else [])
    return CliRunner().invoke(
        cli_group,
        [*options, *args],
        env={"EXPDNA_CACHE_DIR": str(root.parent / "cache"), "EXPDNA_INDEX_URL": None},
    )


def build(root: Path, url: str | None = None) -> list[str]:
    """A history with every kind of index-only fact; returns the seeded runs' ids."""
    docs = [seed_doc(i, seed=i, final_loss=1.0 + i / 10) for i in range(4)]
    docs[1]["lineage"] = [{"relation": "resumed_from", "parent": docs[0]["run_id"]}]
    ids = [doc["run_id"] for doc in docs]
    with Store.open(root, url) as store:
        store.record_many([manifest_of(doc) for doc in docs])
        store.record_many([synthetic(100 + i) for i in range(12)])
        store.pin(run_id=ids[0], digest=PIN, name="best.pth", path="/ckpt/best.pth", size=10)
        store.pin(run_id=ids[0], digest=PIN, name="best.pth", path="/ckpt/moved.pth", size=10)
        store.pin(run_id=ids[2], digest="cd" * 32, name="last.pth")
        store.link(ids[2], ids[3], "rerun_of")
        store.record_metrics(ids[3], {"final_loss": 9.5, "acc": 0.7})
        store.record_metrics(ids[3], {"acc": 0.8})
    return ids


def answers(root: Path, ids: list[str], url: str | None = None) -> list[tuple[int, str]]:
    asked = [
        ("show", "--json", ids[1]),
        ("show", "--manifest", ids[3]),
        ("which", "best.pth"),
        ("which", f"blake3:{'cd' * 32}"),
        ("lineage", "--json", ids[3]),
        ("lineage", ids[0]),
        ("stability", ids[0]),
        ("stability", "--across-seeds", ids[0]),
        ("runs", "--json"),
        ("find", "--metric", "acc>0.75"),
    ]
    found = []
    for args in asked:
        done = cli(root, *args, index_url=url)
        found.append((done.exit_code, done.stdout))
    return found


def _fsck_names_reindex(root: Path, url: str | None = None) -> None:
    checked = cli(root, "fsck", index_url=url)
    assert checked.exit_code == 1, checked.stdout
    assert "expdna reindex" in checked.stdout


@pytest.mark.parametrize("damage", ["delete", "truncate", "corrupt"])
def test_a_lost_sqlite_index_is_rebuilt_and_answers_as_before(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "store"
    ids = build(root)
    before = answers(root, ids)
    assert all(code == 0 for code, _ in before[:-1]), before
    database = root / SQLITE_NAME
    if damage == "delete":
        database.unlink()
    elif damage == "truncate":
        database.write_bytes(b"")
    else:
        database.write_bytes(b"\x00garbage" * 4096)
    for leftover in root.glob(SQLITE_NAME + "-*"):
        leftover.unlink()
    _fsck_names_reindex(root)
    refused = cli(root, "gc", "--grace", "0")
    # a deleted or emptied index is "index missing: run expdna reindex", exit 2, as every
    # command says
    assert refused.exit_code == 1 or refused.exit_code == 2
    assert "reindex" in refused.stderr or "not a database" in refused.stderr
    assert len(list((root / "objects").glob("??/*"))) > 16  # gc removed nothing

    rebuilt = run(root, "reindex", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    report = json.loads(rebuilt.stdout)
    assert report["runs"] == 16 and report["problems"] == [] and report["adopted"] == 0
    assert "16/16 runs" in rebuilt.stderr  # progress goes to stderr
    assert answers(root, ids) == before
    clean = cli(root, "fsck")
    assert clean.exit_code == 0 and "0 problems; 0 unreferenced" in clean.stdout, clean.stdout
    again = cli(root, "gc", "--grace", "0")
    assert again.exit_code == 0 and "removed 0 objects" in again.stdout


def test_an_index_behind_the_log_is_found_and_caught_up(tmp_path: Path) -> None:
    root = tmp_path / "store"
    ids = build(root)
    backup = tmp_path / "backup.sqlite"
    source, copy = sqlite3.connect(root / SQLITE_NAME), sqlite3.connect(backup)
    source.backup(copy)  # a consistent copy, as a backup tool makes
    source.close()
    copy.close()
    with Store.open(root) as store:
        store.record_many([synthetic(200 + i) for i in range(5)])
        store.pin(run_id=synthetic(200).run_id, digest=PIN, name="best.pth")
    after = answers(root, ids)
    shutil.copyfile(backup, root / SQLITE_NAME)
    for leftover in root.glob(SQLITE_NAME + "-*"):
        leftover.unlink()
    young = cli(root, "fsck")  # entries this young may be a recorder at work
    assert young.exit_code == 0 and "2 log entries not in the index yet" in young.stdout
    old = time.time() - 3600
    log = StoreLog(root / "objects")
    for name in log.names():
        os.utime(log.root / name, (old, old))
    _fsck_names_reindex(root)
    refused = cli(root, "gc", "--grace", "0")
    assert refused.exit_code == 1 and "behind" in refused.stderr and "reindex" in refused.stderr
    assert cli(root, "reindex").exit_code == 0
    assert answers(root, ids) == after


def test_manifests_recorded_before_the_log_are_adopted(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:
        store.record_many([synthetic(i) for i in range(6)])
        before = [run.run_id for run in store.runs()]
        shown = store.show(before[0])
    shutil.rmtree(root / "objects" / "log")  # as a store written before the log existed
    (root / SQLITE_NAME).unlink()
    done = cli(root, "reindex", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["adopted"] == 6
    with Store.open(root) as store:
        assert [run.run_id for run in store.runs()] == before
        assert store.show(before[0]) == shown
        assert store.fsck().ok


def test_recording_again_repairs_missing_and_corrupt_objects(tmp_path: Path) -> None:
    root = tmp_path / "store"
    manifests = [synthetic(i) for i in range(3)]
    with Store.open(root) as store:
        store.record_many(manifests)
        digests = [store.get(m.run_id).manifest_digest for m in manifests]
    (root / "objects" / digests[0][:2] / digests[0][2:]).unlink()
    rotten = root / "objects" / digests[1][:2] / digests[1][2:]
    os.chmod(rotten, 0o644)
    rotten.write_bytes(b"x" * rotten.stat().st_size)  # same size: only the bytes say it
    assert cli(root, "fsck").exit_code == 1
    with Store.open(root) as store:
        results = store.record_many(manifests)
        assert [r.status for r in results] == ["skipped"] * 3
        assert store.fsck().ok
        assert store.show(manifests[1].run_id)["run_id"] == manifests[1].run_id


def test_a_failed_pin_leaves_no_log_entry(tmp_path: Path) -> None:
    root = tmp_path / "store"
    with Store.open(root) as store:
        store.record_many([synthetic(0)])
        names = StoreLog(store.objects.root).names()
    refused = cli(root, "link", synthetic(0).run_id, synthetic(0).run_id, "rerun_of")
    assert refused.exit_code == 2
    unknown = cli(root, "which", "nothing.pth")
    assert unknown.exit_code == 1
    assert StoreLog(root / "objects").names() == names


@pytest.mark.postgres
@pytest.mark.parametrize("damage", ["delete", "truncate", "corrupt"])
def test_a_lost_postgres_index_is_rebuilt_and_answers_as_before(
    pg_url: str, tmp_path: Path, damage: str
) -> None:
    import psycopg

    root = tmp_path / "shared"
    assert cli(root, "db", "upgrade", index_url=pg_url).exit_code == 0
    ids = build(root, pg_url)
    before = answers(root, ids, pg_url)
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        if damage == "delete":
            conn.execute("DROP SCHEMA public CASCADE")
            conn.execute("CREATE SCHEMA public")
        elif damage == "truncate":
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename <> 'alembic_version'"
            ).fetchall()
            conn.execute(f"TRUNCATE {', '.join(t[0] for t in tables)} CASCADE")
        else:
            conn.execute("DELETE FROM pins")
            conn.execute("DELETE FROM metrics")
            conn.execute("UPDATE lineage SET relation = 'derived_from'")
    if damage != "corrupt":
        if damage == "delete":
            assert cli(root, "db", "upgrade", index_url=pg_url).exit_code == 0
        _fsck_names_reindex(root, pg_url)
        refused = cli(root, "gc", "--grace", "0", index_url=pg_url)
        assert refused.exit_code == 1 and "reindex" in refused.stderr
    done = cli(root, "reindex", index_url=pg_url)
    assert done.exit_code == 0, done.output
    assert answers(root, ids, pg_url) == before
    assert cli(root, "fsck", index_url=pg_url).exit_code == 0


def test_a_stopped_recorders_entry_is_superseded_by_a_later_record(tmp_path: Path) -> None:
    root = tmp_path / "store"
    manifest = synthetic(0)
    with Store.open(root) as store:
        store.record(synthetic(1))
        # what a recorder stopped between its log entry and its transaction leaves behind
        from expdna.store.record.prepare import prepare

        prepared = prepare(manifest)
        store.objects.put_many(blob.data for blob in prepared.blobs)
        entry = store.log.append(
            "record", {"runs": [[manifest.run_id, prepared.manifest_digest, []]]}
        )
    old = time.time() - 3600
    os.utime(StoreLog(root / "objects").root / entry.name, (old, old))
    behind = cli(root, "fsck")
    assert behind.exit_code == 1 and "behind" in behind.stdout
    with Store.open(root) as store:
        store.record(manifest)  # recorded again, by a later batch
    assert cli(root, "fsck").exit_code == 0
    assert cli(root, "gc", "--grace", "0").exit_code == 0


def test_preparing_in_worker_processes_rebuilds_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expdna.store import reindex as module
    from expdna.store.config import StoreConfig

    root = tmp_path / "store"
    ids = build(root)
    before = answers(root, ids)
    (root / SQLITE_NAME).unlink()
    monkeypatch.setattr(module, "PARALLEL_RUNS", 1)  # the path stores of >= 5,000 runs take
    monkeypatch.setattr(module.os, "cpu_count", lambda: 2)
    report = module.reindex(StoreConfig.resolve(root))
    assert report.ok and report.runs == 16, report.problems
    assert answers(root, ids) == before


def test_adopted_manifests_keep_their_patch_and_config_texts(tmp_path: Path) -> None:
    from expdna.digest.hashing import hex_of
    from expdna.digest.refs import ref

    text = "optimizer:\n  lr: 0.1\n"
    doc = synthetic(0).to_dict()
    doc.pop("dna")
    doc["config"]["config_files"] = {"exp.yaml": ref(hex_of(text.encode()))}
    doc["config"]["config_file_details"] = {
        "exp.yaml": {"digest": ref(hex_of(text.encode())), "size": len(text), "text": text}
    }
    root = tmp_path / "store"
    with Store.open(root) as store:
        run_id = store.record(manifest_of(doc)).run_id
        inline = store.show(run_id, inline=True)
    shutil.rmtree(root / "objects" / "log")  # as a store written before the log existed
    (root / SQLITE_NAME).unlink()
    assert cli(root, "reindex").exit_code == 0
    assert cli(root, "gc", "--grace", "0").exit_code == 0  # nothing referenced may go
    with Store.open(root) as store:
        assert store.show(run_id, inline=True) == inline
        assert store.fsck().ok
    assert inline["config"]["config_file_details"]["exp.yaml"]["text"] == text
