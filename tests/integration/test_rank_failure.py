"""A rank other than 0 that fails: the run is ``failed`` in the store, whichever of that
rank and rank 0 (which finishes ``completed``) ends first; real ``torchrun``, two CPU ranks
over gloo, the hook in both, a real SQLite store, the installed ``expdna`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import EXPDNA, git

SCRIPT = Path(__file__).with_name("launch_scripts") / "rank_fails.py"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]

pytestmark = pytest.mark.slow  # torch starts in two processes per case


@pytest.mark.parametrize("first", ["completion", "failure"])
def test_a_failing_rank_fails_the_run_rank_0_completed(tmp_path: Path, first: str) -> None:
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "train.py").write_text(SCRIPT.read_text())
    git(repo, "add", ".")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    store, out = tmp_path / "store", tmp_path / "out"
    env.update(
        EXPDNA_STORE=str(store),
        EXPDNA_CACHE_DIR=str(tmp_path / "cache"),
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
    )
    argv = [*TORCHRUN, "train.py", "--output-dir", str(out), "--first", first]
    done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "CUDA out of memory on rank 1" in done.stderr
    [manifest] = out.iterdir()  # rank 0's, which says how rank 0 ended
    assert json.loads(manifest.read_text())["status"]["state"] == "completed"

    def runs(*where: str) -> list[dict[str, object]]:
        args = [arg for w in where for arg in ("--where", w)]
        listed = subprocess.run(
            [EXPDNA, "runs", "--json", *args], env=env, capture_output=True, text=True
        )
        assert listed.returncode == 0, listed.stderr
        return list(json.loads(listed.stdout))

    [run] = runs()
    assert run["state"] == "failed"
    assert runs("status.rank=1", "status.error.type=RuntimeError") == [run]
    shown = subprocess.run(
        [EXPDNA, "runs", "--where", "status.state=failed"], env=env, capture_output=True, text=True
    )
    assert str(run["run_id"]) in shown.stdout
