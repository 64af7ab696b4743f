"""Many recorders at once lose nothing and duplicate nothing; a recorder killed with
SIGKILL at any point leaves a store that fsck calls consistent. (PostgreSQL runs the same
concurrency checks, below.)"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from expdna.digest.cache import _connect as cache_connect
from expdna.filesystems import DEFAULT_MOUNTS
from expdna.store import SQLITE_NAME, Store
from expdna.store.queries import named_filter
from tests.factories import synthetic

REPO = Path(__file__).resolve().parents[2]


def _record_indices(job: tuple[str, str | None, list[int]]) -> int:
    """One recorder process: its runs in batches of 7, each batch one transaction."""
    root, url, indices = job
    with Store.open(root, url) as store:
        for start in range(0, len(indices), 7):
            chunk = indices[start : start + 7]
            store.record_many([synthetic(i, setup=i // 2) for i in chunk])
    return len(indices)


def record_concurrently(
    root: Path, url: str | None, *, processes: int = 4, per: int = 50, overlap: int = 15
) -> None:
    """``processes`` recorders of ``per`` runs each, neighbours sharing ``overlap`` runs;
    then check that every run is recorded exactly once and the store is consistent."""
    step = per - overlap
    jobs = []
    for k in range(processes):
        indices = list(range(k * step, k * step + per))
        if k % 2:
            indices.reverse()  # meet the neighbours' shared runs from the other end
        jobs.append((str(root), url, indices))
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        assert pool.map(_record_indices, jobs) == [per] * processes
    expected = sorted(synthetic(i).run_id for i in range((processes - 1) * step + per))
    with Store.open(root, url) as store:
        recorded = [r.run_id for r in store.runs()]
        assert sorted(recorded) == expected  # nothing lost, nothing twice
        everywhere = store.find(named_filter("gpu", "NVIDIA H100 80GB HBM3"))
        assert len(everywhere) == len(expected)
        report = store.fsck()
    assert report.ok, report.problems
    assert report.unreferenced == 0 and report.objects == len(expected) + 1  # + one patch


PIN_DIGEST = "b3" * 32
PINNERS = 4


def _pin_and_link(job: tuple[str, str | None, int]) -> tuple[bool, ...]:
    """One process: the same pin and the same lineage edge as every other, many times."""
    root, url, seed = job
    runs = [synthetic(i).run_id for i in range(3)]
    new_edges = []
    with Store.open(root, url) as store:
        for k in range(15):
            store.pin(run_id=runs[(seed + k) % 2], digest=PIN_DIGEST, name="best.pt")
            new_edges.append(store.link(runs[0], runs[2], "resumed_from"))
    return tuple(new_edges)


def pin_and_link_concurrently(root: Path, url: str | None) -> None:
    """Processes pinning the same bytes under one name to the same two runs, and adding the
    same edge, all at once: one pin per run and one edge survive, and the edge is new to
    exactly one of them."""
    with Store.open(root, url) as store:
        store.record_many([synthetic(i) for i in range(3)])
    context = multiprocessing.get_context("spawn")
    with context.Pool(PINNERS) as pool:
        answers = pool.map(_pin_and_link, [(str(root), url, k) for k in range(PINNERS)])
    assert sum(new for answer in answers for new in answer) == 1
    with Store.open(root, url) as store:
        pins = store.which(f"blake3:{PIN_DIGEST}")
        assert sorted(p.run_id for p in pins) == sorted(synthetic(i).run_id for i in range(2))
        assert [p.name for p in pins] == ["best.pt", "best.pt"]
        report = store.lineage(synthetic(2).run_id)
        assert [(e.run_id, e.relation) for e in report.ancestors] == [
            (synthetic(0).run_id, "resumed_from")
        ]


@pytest.mark.slow
def test_concurrent_pins_and_links_on_sqlite(tmp_path: Path) -> None:
    pin_and_link_concurrently(tmp_path / "store", None)


@pytest.mark.slow
def test_concurrent_recorders_on_sqlite(tmp_path: Path) -> None:
    # the store does not exist yet: the recorders also race to create it and its schema
    record_concurrently(tmp_path / "store", None)


@pytest.mark.postgres
def test_concurrent_recorders_on_postgres(pg_store: Store, tmp_path: Path) -> None:
    url = pg_store.index.url.render_as_string(hide_password=False)
    record_concurrently(pg_store.root, url)


@pytest.mark.postgres
def test_concurrent_pins_and_links_on_postgres(pg_store: Store, tmp_path: Path) -> None:
    url = pg_store.index.url.render_as_string(hide_password=False)
    pin_and_link_concurrently(pg_store.root, url)


# Calls of one batch (written in the recorder) and calls of two (the second batch's blobs
# written by the helper process, expdna.store.objects.blobwriter), in turn.
_KILLED_RECORDER = """
import itertools, sys
from expdna.digest.cache import _connect as cache_connect
from expdna.filesystems import DEFAULT_MOUNTS
from expdna.store import SQLITE_NAME, Store
from tests.factories import synthetic
first, span = int(sys.argv[1]), int(sys.argv[2])
with Store.open(sys.argv[3]) as store:
    print("ready", flush=True)
    for call, start in enumerate(itertools.count(first, 150)):  # until killed, over and over
        batch = [(start + k) % span for k in range(150)]
        store.record_many([synthetic(i, setup=i // 2) for i in batch],
                          batch_size=150 if call % 2 else 75)
"""
SPAN = 1500


@pytest.mark.slow
def test_a_recorder_killed_at_random_points_leaves_a_consistent_store(tmp_path: Path) -> None:
    root = tmp_path / "store"
    Store.open(root).close()
    seed = int(os.environ.get("EXPDNA_KILL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    for trial in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", _KILLED_RECORDER, str(trial * 350), str(SPAN), str(root)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", f"seed {seed}"
        time.sleep(rng.uniform(0.05, 0.8))
        assert child.poll() is None, f"seed {seed}: the recorder stopped by itself"
        if trial % 2:  # the recorder alone: its helper finishes the batch it has, then ends
            child.send_signal(signal.SIGKILL)
        else:  # the recorder and its helper, each at some point of its work
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        with Store.open(root) as store:
            report = store.fsck()
            assert report.ok, f"seed {seed}, trial {trial}: {report.problems}"
    with Store.open(root) as store:
        before = {r.run_id for r in store.runs()}
        store.record_many([synthetic(i, setup=i // 2) for i in range(SPAN)], batch_size=250)
        after = [r.run_id for r in store.runs()]
        assert sorted(after) == sorted(synthetic(i).run_id for i in range(SPAN))
        assert before <= set(after)
        old = time.time() - 3600  # killed writers' temporary files, an hour later
        for leftover in store.objects.temp_files():
            os.utime(leftover, (old, old))
        store.gc(grace_s=0)
        report = store.fsck()
        assert report.ok and report.unreferenced == 0 and report.temp_files == 0
        assert report.objects == SPAN + 1


def test_a_new_store_opens_while_another_process_holds_its_index(tmp_path: Path) -> None:
    """Two runs started at once on a new store: the one that loses SQLite's race to switch
    the new file to WAL was told "database is locked" at once (no busy wait); it now waits."""
    root = tmp_path / "store"
    root.mkdir()
    other = sqlite3.connect(root / SQLITE_NAME, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE other_writer(x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO other_writer VALUES (1)")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    try:
        with Store.open(root) as store:
            store.record(synthetic(1))
            assert [r.run_id for r in store.runs()] == [synthetic(1).run_id]
    finally:
        release.join()
        other.close()


def test_a_new_digest_cache_opens_while_another_process_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "digests.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE other_writer(x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO other_writer VALUES (1)")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    try:
        conn = cache_connect(path, DEFAULT_MOUNTS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()
    finally:
        release.join()
        other.close()
