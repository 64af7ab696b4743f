"""examples/lightning_tiny.py, run for real: 2 epochs with ``lightning`` and ``pytorch_lightning``.

The script is copied into a fresh git repository, so the code section is the script's own
repository (found through ``__main__``, not Lightning's files that call the callback).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from expdna.manifest import load_manifest
from tests.factories import git, invoke

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lightning_tiny.py"
PACKAGES = ("lightning", "pytorch_lightning")

pytestmark = pytest.mark.slow  # two real Lightning runs, side by side


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("lightning")
    repo = root / "project"
    repo.mkdir()
    shutil.copy(EXAMPLE, repo / "train.py")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "tiny")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env.update(PYTHONWARNINGS="ignore", EXPDNA_CACHE_DIR=str(root / "cache"))
    started = {
        package: subprocess.Popen(
            [
                sys.executable,
                str(repo / "train.py"),
                "--output-dir",
                str(root / package),
                "--store",
                str(root / "store"),
                "--package",
                package,
            ],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for package in PACKAGES
    }
    found: dict[str, dict[str, Any]] = {}
    for package, process in started.items():
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        assert [line for line in stderr.splitlines() if line.startswith("expdna:")] == []
        found[package] = {
            **json.loads(stdout.strip().splitlines()[-1]),
            "root": root,
            "out": root / package,
        }
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_the_callback_records_the_fit(runs: dict[str, dict[str, Any]], package: str) -> None:
    run = runs[package]
    manifest = load_manifest(run["manifest"])
    assert Path(run["manifest"]).parent == run["out"]  # the trainer's log dir
    assert (manifest.run_id, manifest.dna.value if manifest.dna else None) == (
        run["run_id"],
        run["dna"],
    )
    assert list(manifest.code) == ["project"]  # the script's repository, not Lightning's
    training = manifest.training.model_dump()
    assert training["lightning"] == {
        "max_epochs": 2,
        "precision": "32-true",
        "accumulate_grad_batches": 1,
        "strategy": "SingleDeviceStrategy",
        "devices": 1,
        "num_nodes": 1,
    }
    assert training["gradient_accumulation_steps"] == 1 and training["seeds"] == {"seed": 0}
    model = training["model"]
    assert model["class"].endswith("Regression") and model["parameters"] == 5
    assert set(model["hparams"]) == {"lr"}
    assert set(manifest.metrics) == {"train_loss", "val_loss"}
    assert manifest.status is not None and manifest.status.state == "completed"
    assert all(isinstance(v, float) for v in manifest.metrics.values())

    (checkpoint,) = (run["out"] / "checkpoints").glob("*.ckpt")
    which = invoke(run["root"] / "store", "which", str(checkpoint), "--json")
    assert which.exit_code == 0, which.output
    assert json.loads(which.output)[0]["run_id"] == run["run_id"]


def test_the_trainer_settings_are_recorded_and_in_the_dna_before_version_3(
    runs: dict[str, dict[str, Any]],
) -> None:
    from expdna.manifest.dna import projections

    manifest = load_manifest(runs["lightning"]["manifest"])
    assert manifest.training.lightning["max_epochs"] == 2  # type: ignore[attr-defined]
    assert projections(manifest, version=2)["training"]["lightning"]["max_epochs"] == 2
    # Version 3: the training section is derived from what the command and the code say,
    # which generate sees too; the trainer's own view is recorded outside the DNA.
    assert projections(manifest)["training"] == {}


class _BrokenTrainer:
    """A trainer whose every answer fails, as a framework mid-crash might."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name} today")


def test_a_failing_trainer_never_reaches_the_training(caplog: pytest.LogCaptureFixture) -> None:
    from expdna.integrations.lightning import ExpdnaCallback

    callback = ExpdnaCallback()
    callback.setup(_BrokenTrainer(), None, "fit")  # the log dir cannot be had
    assert callback.run is None
    callback.teardown(_BrokenTrainer(), None, "fit")
    callback.setup(_BrokenTrainer(), None, "validate")  # not a fit: nothing to record
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("expdna")]
    assert warnings == ["expdna: Lightning setup not recorded: RuntimeError: no log_dir today"]


class _Trainer:
    """What setup and teardown ask of a trainer, for a fit that raises."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = str(log_dir)
        self.max_epochs, self.num_devices, self.num_nodes = 1, 1, 1
        self.checkpoint_callback = None
        self.callback_metrics = {"train_loss": 2.5}


def test_a_fit_that_raises_is_recorded_failed(tmp_path: Path) -> None:
    from expdna.integrations.lightning import ExpdnaCallback

    trainer = _Trainer(tmp_path / "logs")
    callback = ExpdnaCallback(collectors=["command", "config"])
    callback.setup(trainer, None, "fit")
    assert callback.run is not None and callback.run.path is not None
    callback.on_exception(trainer, None, RuntimeError("CUDA out of memory"))
    callback.teardown(trainer, None, "fit")  # Lightning tears down after the exception too
    doc = json.loads(callback.run.path.read_text())
    assert doc["status"]["state"] == "failed"
    assert doc["status"]["error"] == {"type": "RuntimeError", "message": "CUDA out of memory"}
    assert doc["metrics"] == {"train_loss": 2.5}


def test_a_fit_into_an_existing_store_keeps_the_dna_of_its_manifest(tmp_path: Path) -> None:
    """An existing store is written at start() for a plain script; here the trainer's
    settings join the DNA after start(), so the run is recorded with them, at add_runtime."""
    from expdna.store import Store

    repo = tmp_path / "project"
    repo.mkdir()
    shutil.copy(EXAMPLE, repo / "train.py")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "tiny")
    store = tmp_path / "store"
    Store.open(store).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env.update(PYTHONWARNINGS="ignore", EXPDNA_CACHE_DIR=str(tmp_path / "cache"))
    argv = [sys.executable, str(repo / "train.py"), "--output-dir", str(tmp_path / "out")]
    done = subprocess.run(
        [*argv, "--store", str(store), "--package", "lightning"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    manifest = load_manifest(result["manifest"])
    assert manifest.dna is not None and manifest.dna.value == result["dna"]
    with Store.open(store) as opened:  # applies the entries the training wrote
        assert opened.get(result["run_id"]).dna == manifest.dna.value
        assert opened.show(result["run_id"])["training"] == manifest.to_dict()["training"]
    (checkpoint,) = (tmp_path / "out" / "checkpoints").glob("*.ckpt")
    which = invoke(store, "which", str(checkpoint), "--json")
    assert which.exit_code == 0, which.output
    assert json.loads(which.output)[0]["run_id"] == result["run_id"]
