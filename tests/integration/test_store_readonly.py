"""Reads never write: a query on a missing store creates nothing, and a store the user
cannot write answers queries. Through the installed ``expdna`` command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from expdna.manifest.io import write_manifest
from expdna.store import SQLITE_NAME
from tests.factories import EXPDNA, run, synthetic

#: A query per command that only reads; RUN stands for a recorded run id, OUT for a file
#: outside the store.
QUERIES = [
    ("runs",),
    ("show", "RUN"),
    ("twins", "RUN"),
    ("find", "--vbios", "x"),
    ("which", "ckpt.pt"),
    ("lineage", "RUN"),
    ("stability", "RUN"),
    ("export", "--parquet", "OUT"),
    ("fsck",),
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store of 3 runs (two of one setup), and their run ids."""
    root = tmp_path_factory.mktemp("readonly")
    files = []
    for i in range(3):
        manifest = synthetic(i, setup=i // 2)
        files.append(str(write_manifest(manifest, root / f"m{i}.json")))
    store = root / "store"
    done = run(store, "record", *files, "--json")
    assert done.returncode == 0, done.stderr
    return store, [row["run_id"] for row in json.loads(done.stdout)]


def _args(query: tuple[str, ...], run_id: str, out: Path) -> list[str]:
    named = {"RUN": run_id, "OUT": str(out / "runs.parquet")}
    return [named.get(arg, arg) for arg in query]


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime: what a read must leave alone.

    Less SQLite's WAL and shared-memory files: a reader of a WAL database in a writable
    directory may create them (empty of changes), as any SQLite reader does.
    """
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if not p.name.endswith(("-wal", "-shm"))
    }


@pytest.mark.parametrize("query", QUERIES, ids=[q[0] for q in QUERIES])
def test_a_query_on_a_missing_store_exits_2_and_creates_nothing(
    query: tuple[str, ...], tmp_path: Path
) -> None:
    mistyped = tmp_path / "nonexistent" / "deep" / "store"
    done = run(mistyped, *_args(query, "20260101_000000_nogit_a", tmp_path))
    assert done.returncode == 2, done.stdout
    assert done.stderr == f"expdna: error: no store at {mistyped}\n"
    assert not (tmp_path / "nonexistent").exists()


def test_a_query_on_an_empty_directory_creates_no_index(tmp_path: Path) -> None:
    done = subprocess.run(
        [EXPDNA, "--store", str(tmp_path), "runs"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr == f"expdna: error: no store at {tmp_path}\n"
    assert list(tmp_path.iterdir()) == []


def test_queries_change_nothing_in_a_store(
    recorded: tuple[Path, list[str]], tmp_path: Path
) -> None:
    store, run_ids = recorded
    before = _tree(store)
    for query in QUERIES:
        done = run(store, *_args(query, run_ids[0], tmp_path))
        assert done.returncode in (0, 1), (query, done.stderr)
    assert _tree(store) == before


@pytest.fixture()
def read_only_copy(recorded: tuple[Path, list[str]], tmp_path: Path) -> Iterator[Path]:
    """A copy of the store, to be seen through a read-only mount (see :func:`_read_only`)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and unshare")
    copy = tmp_path / "ro-store"
    shutil.copytree(recorded[0], copy)
    yield copy


def _read_only(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``expdna ARGS`` seeing ``store`` on a read-only filesystem: a bind mount in a mount
    namespace of its own, so nothing outside it changes. Root cannot write there either,
    which file modes alone would not ensure (and dropping to another user cannot run a
    virtual environment under a private home directory)."""
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(store), EXPDNA, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_a_store_on_a_read_only_filesystem_answers_queries(
    read_only_copy: Path, recorded: tuple[Path, list[str]]
) -> None:
    run_ids = recorded[1]
    probe = subprocess.run(  # the mount really is read-only, to root too
        ["unshare", "-m", "sh", "-c",
         'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && touch "$1/probe"',
         "sh", str(read_only_copy)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert probe.returncode != 0 and "Read-only file system" in probe.stderr
    before = _tree(read_only_copy)

    runs = _read_only(read_only_copy, "runs", "--json")
    assert runs.returncode == 0, runs.stderr
    assert sorted(r["run_id"] for r in json.loads(runs.stdout)) == sorted(run_ids)

    show = _read_only(read_only_copy, "show", run_ids[0], "--inline")  # reads its objects
    assert show.returncode == 0, show.stderr
    assert json.loads(show.stdout)["run_id"] == run_ids[0]

    twins = _read_only(read_only_copy, "twins", run_ids[0], "--json")
    assert twins.returncode == 0, twins.stderr
    assert sorted(r["run_id"] for r in json.loads(twins.stdout)) == sorted(run_ids[:2])

    fsck = _read_only(read_only_copy, "fsck")
    assert fsck.returncode == 0, fsck.stderr
    assert "0 problems" in fsck.stdout

    which = _read_only(read_only_copy, "which", "nothing-pinned")
    assert which.returncode == 1, which.stderr
    assert "readonly database" not in which.stderr

    assert _tree(read_only_copy) == before


def test_every_read_command_leaves_a_read_only_store_without_a_new_file(
    read_only_copy: Path, recorded: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """A store copied after its writer ended (no -wal, no -shm), on a read-only mount:
    each read command answers through the read layer and no file appears, not even
    SQLite's shared-memory file."""
    for leftover in read_only_copy.glob(SQLITE_NAME + "-*"):
        leftover.unlink()
    before = sorted(str(p.relative_to(read_only_copy)) for p in read_only_copy.rglob("*"))
    for query in [*QUERIES, ("db", "current")]:
        done = _read_only(read_only_copy, *_args(query, recorded[1][0], tmp_path))
        assert done.returncode in (0, 1), (query, done.stderr)
        assert "index" not in done.stderr and "database" not in done.stderr, (query, done.stderr)
    after = sorted(str(p.relative_to(read_only_copy)) for p in read_only_copy.rglob("*"))
    assert after == before


def _one_revision_behind(store: Path) -> None:
    from alembic import command
    from sqlalchemy import create_engine

    from expdna.store.index.migrate import alembic_config

    engine = create_engine(f"sqlite:///{store / SQLITE_NAME}")
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "-1")
    engine.dispose()


def test_an_index_behind_is_upgraded_by_a_query_when_writable(tmp_path: Path) -> None:
    from expdna.store import Store
    from expdna.store.index.migrate import HEAD, revision

    store = tmp_path / "store"
    done = run(store, "record", str(write_manifest(synthetic(0), tmp_path / "m.json")))
    assert done.returncode == 0, done.stderr
    _one_revision_behind(store)
    listed = run(store, "runs")
    assert listed.returncode == 0, listed.stderr
    with Store.open_for_reading(store) as opened:
        assert revision(opened.index) == HEAD


def test_an_index_behind_that_cannot_be_written_says_so(read_only_copy: Path) -> None:
    _one_revision_behind(read_only_copy)
    for leftover in read_only_copy.glob(SQLITE_NAME + "-*"):
        leftover.unlink()  # as a store copied after its writer ended
    done = _read_only(read_only_copy, "runs")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "read-only" in lines[0] and "db upgrade" in lines[0], lines


def test_gc_creates_no_store_and_removes_nothing_without_its_index(tmp_path: Path) -> None:
    mistyped = tmp_path / "nonexistent" / "store"
    done = run(mistyped, "gc")
    assert done.returncode == 2 and done.stderr == f"expdna: error: no store at {mistyped}\n"
    assert not (tmp_path / "nonexistent").exists()
    store = tmp_path / "store"
    assert (
        run(store, "record", str(write_manifest(synthetic(0), tmp_path / "m.json"))).returncode == 0
    )
    before = {p for p in (store / "objects").rglob("*") if p.is_file()}
    (store / "index.sqlite").unlink()
    done = run(store, "gc", "--grace", "0")
    assert done.returncode == 2, done.stderr
    assert "index missing: run expdna reindex" in done.stderr, done.stderr
    assert {p for p in (store / "objects").rglob("*") if p.is_file()} == before
    assert not (store / "index.sqlite").exists()
