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
