"""gc at grace 0, looping, while recorders record: no committed run loses an object.

Before gc and recorders coordinated, ``gc --grace 0`` looping beside ``record --scan`` of
2,000 runs left ~200 runs pointing at deleted objects. Now gc moves a candidate to the
trash, asks the index again and puts it back if referenced; a recorder stats its objects
after its commit and rewrites any that went (expdna.store.maintenance).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from expdna.manifest.io import write_manifest
from expdna.store import Store
from tests.factories import EXPDNA, synthetic

REPO = Path(__file__).resolve().parents[2]
RUNS = 2000

_GC_LOOP = """
import json, sys
from pathlib import Path
from expdna.store import Store
stop = Path(sys.argv[2])
passes = removed = 0
with Store.open(sys.argv[1]) as store:
    print("ready", flush=True)
    while not stop.exists() or passes < 3:
        removed += len(store.gc(grace_s=0).removed)
        passes += 1
print(json.dumps({"passes": passes, "removed": removed}))
"""


@pytest.mark.slow
def test_gc_at_grace_zero_racing_two_recorders_loses_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    halves = [tmp_path / "a", tmp_path / "b"]
    for half in halves:
        half.mkdir()
    for i in range(RUNS):
        write_manifest(synthetic(i, setup=i // 2), halves[i % 2] / f"manifest_{i:05d}.json")
    Store.open(root).close()
    stop = tmp_path / "stop"
    gc = subprocess.Popen(
        [sys.executable, "-c", _GC_LOOP, str(root), str(stop)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert gc.stdout is not None and gc.stdout.readline().strip() == "ready"
    started = time.monotonic()
    recorders = [
        subprocess.Popen(
            [EXPDNA, "--store", str(root), "-v", "record", "--scan", str(half)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for half in halves
    ]
    outputs = [recorder.communicate(timeout=300) for recorder in recorders]
    stop.touch()
    report = gc.communicate(timeout=300)[0]
    assert all(r.returncode == 0 for r in recorders), [err[-2000:] for _, err in outputs]
    print(f"recorded in {time.monotonic() - started:.1f} s beside gc: {report.strip()}")
    print("; ".join(line for _, err in outputs for line in err.splitlines() if "rewrit" in line))
    with Store.open(root) as store:
        assert len(store.runs()) == RUNS
        checked = store.fsck()
        assert checked.ok, checked.problems[:5]
        for i in (0, RUNS // 2, RUNS - 1):
            assert store.load(synthetic(i, setup=i // 2).run_id).run_id  # objects readable


def test_an_object_removed_before_the_commit_is_written_again_after_it(tmp_path: Path) -> None:
    """The interleaving gc's recheck cannot catch: gc deletes an object after asking the
    index, and the run's transaction commits after that. The recorder's stat after its
    commit finds the object gone and writes it again."""
    from expdna.store.record.prepare import prepare

    with Store.open(tmp_path / "store") as store:
        recorder = store._recorder
        batch = [prepare(synthetic(i)) for i in range(3)]
        recorder.put_blobs(batch)  # its log entry, then its objects
        victim = batch[1].manifest_digest
        store.objects.remove(victim)  # gc, having found it unreferenced a moment ago
        results = recorder.index_rows(batch)
        assert [r.status for r in results] == ["recorded"] * 3
        assert store.objects.has(victim)
        assert store.fsck().ok


def test_a_stopped_gc_leaves_nothing_a_run_references_in_the_trash(tmp_path: Path) -> None:
    from expdna.store.maintenance import TRASH

    with Store.open(tmp_path / "store") as store:
        store.record(synthetic(0))
        digest = store.get(synthetic(0).run_id).manifest_digest
        trash = store.objects.root / TRASH
        trash.mkdir()
        store.objects.path(digest).rename(trash / f"{digest}.4242")  # gc killed mid-way
        assert not store.fsck().ok
        store.gc()
        assert store.objects.has(digest) and not list(trash.iterdir())
        assert store.fsck().ok
