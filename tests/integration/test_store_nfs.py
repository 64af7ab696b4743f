"""Many writers on many machines sharing one object directory, with gc at grace 0 beside
them and one PostgreSQL index.

With ``EXPDNA_TEST_NFS_MOUNTS`` (``/mnt/a:/mnt/b``: one NFS export mounted twice, as two
clients) the writers use the two mounts. That export is not something a test can create:
it was verified on this project's machines, whose kernel has no NFS client or server, with
nfs-ganesha (a userspace NFS server, FSAL VFS) mounted twice through fuse-nfs (libnfs, a
userspace NFSv3 client over FUSE); see docs/en/integration.md, "The team layout". Without
it (CI) the same test runs on one local directory reached through two different paths, as
two machines mounting one share at different places would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from expdna.manifest.io import write_manifest
from expdna.store import Store
from tests.factories import EXPDNA, synthetic

REPO = Path(__file__).resolve().parents[2]
MOUNTS = [Path(p) for p in os.environ.get("EXPDNA_TEST_NFS_MOUNTS", "").split(":") if p]
RUNS = 400

pytestmark = pytest.mark.postgres


def _mounts(tmp_path: Path) -> list[Path]:
    if len(MOUNTS) >= 2:
        return MOUNTS[:2]
    share = tmp_path / "share"
    share.mkdir()
    paths = [tmp_path / "mnt-a", tmp_path / "mnt-b"]
    for path in paths:
        path.symlink_to(share, target_is_directory=True)
    return paths


_GC_LOOP = """
import sys
from pathlib import Path
from expdna.store import Store
stop = Path(sys.argv[3])
with Store.open(sys.argv[1], sys.argv[2]) as store:
    print("ready", flush=True)
    while not stop.exists():
        store.gc(grace_s=0)
"""


def test_writers_on_two_nfs_clients_with_gc_lose_nothing(pg_url: str, tmp_path: Path) -> None:
    name = f"expdna-{uuid.uuid4().hex[:8]}"
    roots = [mount / name for mount in _mounts(tmp_path)]  # one directory, as two machines see it
    manifests = tmp_path / "manifests"
    quarters = [manifests / str(k) for k in range(4)]
    for quarter in quarters:
        quarter.mkdir(parents=True)
    for i in range(RUNS):
        write_manifest(synthetic(i, setup=i // 2), quarters[i % 4] / f"manifest_{i:05d}.json")
    Store.open(roots[0], pg_url, upgrade=True).close()
    stop = tmp_path / "stop"
    gc = subprocess.Popen(
        [sys.executable, "-c", _GC_LOOP, str(roots[0]), pg_url, str(stop)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert gc.stdout is not None and gc.stdout.readline().strip() == "ready"
    where = [["--store", str(roots[k % 2]), "--index-url", pg_url] for k in range(4)]
    recorders = [
        subprocess.Popen(
            [EXPDNA, *where[k], "record", "--scan", str(quarter)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, quarter in enumerate(quarters)
    ]
    errors = [recorder.communicate(timeout=600)[1] for recorder in recorders]
    stop.touch()
    gc.communicate(timeout=600)
    assert all(r.returncode == 0 for r in recorders), errors
    for root in roots:
        with Store.open(root, pg_url) as store:
            assert len(store.runs()) == RUNS
            report = store.fsck()
            assert report.ok, report.problems[:5]
