"""The training process writes a store without its index: objects and log entries, applied
by the next process that opens the index (expdna.store.deferred, expdna.store.catchup).

Real hook runs in fresh interpreters (what is imported is the point), a real git
repository, real SQLite files and the real PostgreSQL server, the installed ``expdna``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from expdna.store import Store
from expdna.store.objects.log import StoreLog
from tests.factories import run

#: A training script: start, add_runtime, pin a checkpoint, final metrics, finish; it
#: prints what it imported and the run id.
TRAIN = """
import json, sys
import expdna
out = sys.argv[1]
lineage = {"derived_from": sys.argv[2]} if len(sys.argv) > 2 else None
handle = expdna.start({"lr": 0.1}, output_dir=out, lineage=lineage)
handle.add_runtime()
open(out + "/ckpt.pt", "wb").write(b"weights of " + handle.run_id.encode())
handle.pin(out + "/ckpt.pt", name="best.pt")
handle.log_final(val_loss=0.25)
handle.finish()
heavy = [m for m in ("sqlalchemy", "alembic") if m in sys.modules]
print(json.dumps({"run_id": handle.run_id, "heavy": heavy, "warnings": handle.warnings}))
"""


def _train(
    project: Path,
    store: Path,
    *args: str,
    index_url: str | None = None,
    script: str = TRAIN,
    timeout: int = 120,
) -> dict[str, Any]:
    """Run ``script`` (the hooked training) in a fresh interpreter writing into
    ``project/out``; the JSON its last line prints, which reports no warnings."""
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    if index_url is not None:
        env["EXPDNA_INDEX_URL"] = index_url
    out = project / "out"
    out.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", script, str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert result["warnings"] == []
    return result


@pytest.fixture
def project(repo: Path) -> Path:
    """The training repository, with an uncommitted edit larger than the file cap allows
    inline (the manifest file cuts its patch text; the store keeps it whole)."""
    lines = [f"weight_{i} = {i * 7919 % 1000003}  # a long uncommitted edit" for i in range(4000)]
    (repo / "train.py").write_text("\n".join(lines) + "\n")
    return repo


def test_the_hook_writes_no_index_and_the_next_command_applies_it(
    project: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    Store.open(store).close()  # an existing store: the hook writes it as files
    trained = _train(project, store)
    run_id = trained["run_id"]
    assert trained["heavy"] == []  # no SQLAlchemy, no alembic in the training process
    pending = StoreLog(store / "objects").pending()
    assert len(pending) == 4  # record, pin, metrics, status: waiting for the index

    which = run(store, "which", "best.pt", "--json")  # the next command applies them
    assert which.returncode == 0, which.stderr
    assert [p["run_id"] for p in json.loads(which.stdout)] == [run_id]
    assert StoreLog(store / "objects").pending() == []
    with Store.open_for_reading(store) as opened:
        assert opened.metrics(run_id) == {"val_loss": 0.25}
        inline = opened.show(run_id, inline=True)
    # the file cut the patch to fit its cap; the store holds it whole (show --inline)
    (manifest,) = (project / "out").glob("manifest_*.json")
    cut = json.loads(manifest.read_text())["code"]["proj"]["patch"]
    whole = inline["code"]["proj"]["patch"]
    assert cut["truncated"] is True and len(cut.get("text") or "") < 100_000
    assert len(whole["text"]) == whole["size"] > 100_000
    assert whole["digest"] == cut["digest"]

    # the hook's own file, with its metrics, pin and cut patch, is the run: skipped
    again = run(store, "record", str(manifest))
    assert again.returncode == 0, again.stderr
    assert "skipped" in again.stdout and "(already recorded)" in again.stdout
    fsck = run(store, "fsck")
    assert fsck.returncode == 0, fsck.stdout


def test_a_rerecorded_hook_manifest_with_lineage_is_skipped(project: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    Store.open(store).close()
    parent = _train(project, store)["run_id"]
    child = _train(project, store, parent)["run_id"]
    files = sorted((project / "out").glob("manifest_*.json"))
    done = run(store, "record", *map(str, files), "--json")
    assert done.returncode == 0, done.stderr
    assert {r["run_id"]: r["status"] for r in json.loads(done.stdout)} == {
        parent: "skipped",
        child: "skipped",
    }
    lineage = run(store, "lineage", child, "--json")
    assert lineage.returncode == 0, lineage.stderr
    assert parent in lineage.stdout


def test_which_right_after_pin_in_the_same_process(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import expdna

    monkeypatch.delenv("EXPDNA_INDEX_URL", raising=False)
    store = tmp_path / "store"
    Store.open(store).close()
    handle = expdna.start({"lr": 0.1}, store=store, caller_file=repo / "train.py")
    assert handle is not None
    handle.add_runtime()
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"weights")
    assert handle.pin(checkpoint) is not None
    assert handle.warnings == []
    with Store.open_for_reading(store) as opened:
        assert [p.run_id for p in opened.which(str(checkpoint))] == [handle.run_id]


def test_a_new_store_is_made_through_the_index_once(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import expdna

    monkeypatch.delenv("EXPDNA_INDEX_URL", raising=False)
    store = tmp_path / "new-store"
    handle = expdna.start({"lr": 0.1}, store=store, caller_file=repo / "train.py")
    assert handle is not None
    handle.add_runtime()
    assert handle.warnings == []
    assert StoreLog(store / "objects").pending() == []  # recorded through the index
    with Store.open_for_reading(store) as opened:
        assert opened.get(handle.run_id or "").dna == handle.dna


def test_the_hook_on_the_shared_postgresql_index(
    project: Path, tmp_path: Path, pg_url: str
) -> None:
    store = tmp_path / "store"
    Store.open(store, pg_url, upgrade=True).close()
    trained = _train(project, store, index_url=pg_url)
    assert trained["heavy"] == []
    with Store.open(store, pg_url) as opened:  # applies the pending entries
        assert [p.run_id for p in opened.which("best.pt")] == [trained["run_id"]]
        assert opened.metrics(trained["run_id"]) == {"val_loss": 0.25}
    assert StoreLog(store / "objects").pending() == []


#: A run whose DNA can still change when it pins: Ray is imported (add_runtime adds its
#: topology), so start() does not record it, and a checkpoint is saved before add_runtime.
TRAIN_PIN_FIRST = """
import json, sys
import ray  # noqa: F401  (imported, not started: the hook records at add_runtime)
import expdna
out = sys.argv[1]
handle = expdna.start({"lr": 0.1}, output_dir=out)
open(out + "/early.pt", "wb").write(b"weights before add_runtime " + handle.run_id.encode())
handle.pin(out + "/early.pt", name="early.pt")
handle.add_runtime()
handle.finish({"val_loss": 0.5})
print(json.dumps({"run_id": handle.run_id, "warnings": handle.warnings}))
"""


def _kinds(store: Path) -> list[str]:
    entries = StoreLog(store / "objects")
    return [entries.read(name).kind for name in entries.names()]


def test_a_pin_before_the_run_is_recorded_waits_for_the_record(
    project: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    Store.open(store).close()
    trained = _train(project, store, script=TRAIN_PIN_FIRST, timeout=300)
    # the pin was held until add_runtime recorded the run, then written after its record
    assert _kinds(store) == ["record", "pin", "metrics", "status"]
    which = run(store, "which", "early.pt", "--json")  # catch-up applies them
    assert which.returncode == 0, which.stderr
    assert [p["run_id"] for p in json.loads(which.stdout)] == [trained["run_id"]]
    assert run(store, "reindex").returncode == 0
    again = run(store, "which", "early.pt", "--json")
    assert [p["run_id"] for p in json.loads(again.stdout)] == [trained["run_id"]]


def test_a_pin_into_a_new_store_records_its_run_first(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import expdna

    monkeypatch.delenv("EXPDNA_INDEX_URL", raising=False)
    store = tmp_path / "new-store"  # not there at start(): nothing recorded then
    handle = expdna.start({"lr": 0.1}, store=store, caller_file=repo / "train.py")
    assert handle is not None
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"weights of a run not recorded yet")
    assert handle.pin(checkpoint, name="model.pt") is not None
    handle.finish({"val_loss": 0.5})
    assert handle.warnings == []
    with Store.open_for_reading(store) as opened:
        assert [p.run_id for p in opened.which("model.pt")] == [handle.run_id]
        assert opened.get(handle.run_id or "").dna == handle.dna


#: A training script that imports torch: its manifest holds ``torch.initial_seed()``, a
#: 64-bit integer beyond 2^53 that the file writes as its decimal string. Seeded, so the
#: seed is large in every run (unseeded it is random, and large all but always).
TORCH_TRAIN = """
import json, sys
import torch
import expdna
torch.manual_seed(2**63 + 5)
with expdna.track({"lr": 0.4}, output_dir=sys.argv[1]) as handle:
    handle.log_final(loss=1.0)
print(json.dumps({"run_id": handle.run_id, "warnings": handle.warnings}))
"""


def _train_torch(project: Path, store: Path) -> tuple[str, Path]:
    """Train with the hook in a fresh interpreter that imported torch; the run id and its
    manifest file."""
    pytest.importorskip("torch")
    result = _train(project, store, script=TORCH_TRAIN)
    (manifest,) = (project / "out").glob("manifest_*.json")
    return result["run_id"], manifest


def test_the_hook_file_of_a_torch_run_is_skipped(project: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    Store.open(store).close()
    run_id, manifest = _train_torch(project, store)
    seed = json.loads(manifest.read_text())["environment"]["framework"]["torch"]["loaded"]
    assert seed["determinism"]["initial_seed"] == str(2**63 + 5)  # the file's form

    again = run(store, "record", str(manifest))
    assert again.returncode == 0, again.stderr
    assert f"skipped  {run_id}" in again.stdout and "(already recorded)" in again.stdout
    scan = run(store, "record", "--scan", str(manifest.parent))
    assert scan.returncode == 0, scan.stderr
    assert "failed 0" in scan.stdout


def test_a_torch_run_file_with_another_value_is_refused(project: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    Store.open(store).close()
    run_id, manifest = _train_torch(project, store)
    doc = json.loads(manifest.read_text())
    # outside the DNA and not filled in late: a different run all the same
    doc["environment"]["framework"]["torch"]["loaded"]["determinism"]["initial_seed"] = "7"
    manifest.write_text(json.dumps(doc))
    again = run(store, "record", str(manifest))
    assert again.returncode == 2
    assert f"run {run_id} is recorded already with other content" in again.stderr
