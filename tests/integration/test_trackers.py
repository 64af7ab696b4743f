"""MLflow (a local SQLite tracking store) and W&B (offline mode) beside an expdna run, for real."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest
import wandb

import expdna
from expdna.integrations import mlflow as expdna_mlflow
from expdna.integrations import wandb as expdna_wandb
from expdna.manifest import load_manifest
from expdna.manifest.family import family_of
from tests.factories import invoke

pytestmark = pytest.mark.slow  # mlflow creates its SQLite schema; wandb starts its service


@pytest.fixture(autouse=True)
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No store from the environment; the "training script" lies outside any repository
    (this checkout changes while it is worked on, and its patch is not the point here)."""
    monkeypatch.delenv("EXPDNA_STORE", raising=False)
    monkeypatch.delenv("EXPDNA_INDEX_URL", raising=False)
    monkeypatch.chdir(tmp_path)


def _start(args: dict[str, Any], **kwargs: Any) -> expdna.RunHandle:
    handle = expdna.start(args, caller_file=Path.cwd() / "train.py", **kwargs)
    assert handle is not None
    return handle


@pytest.fixture(scope="module")
def tracking_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    # Artifacts beside the database, not in ./mlruns of wherever pytest started.
    mlflow.create_experiment("tiny", artifact_location=(root / "artifacts").as_uri())
    mlflow.set_experiment(experiment_name="tiny")
    yield uri
    mlflow.set_tracking_uri("")


def _tags(run_id: str) -> dict[str, str]:
    tags = mlflow.MlflowClient().get_run(run_id).data.tags
    return {k: v for k, v in tags.items() if k.startswith("expdna.")}


def test_an_active_mlflow_run_gets_the_dna_and_the_manifest(
    tracking_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    # The command's words are what DNA version 3 counts (and the family leaves the seed of).
    monkeypatch.setattr(sys, "argv", ["train.py", "--lr", "0.1", "--seed", "3"])
    with mlflow.start_run() as active:
        handle = _start({"lr": 0.1, "seed": 3}, output_dir=tmp_path / "out", store=store)
        handle.add_runtime()
        handle.finish(metrics={"loss": 0.25})
    assert handle.warnings == [] and handle.manifest is not None and handle.dna is not None
    mlflow_id = active.info.run_id
    sections = handle.manifest.dna.sections if handle.manifest.dna else {}
    assert _tags(mlflow_id) == {
        "expdna.dna": handle.dna,
        "expdna.family": family_of(handle.manifest, sections),
        "expdna.run_id": handle.run_id,
        **{f"expdna.section.{name}": digest for name, digest in sections.items()},
    }
    assert handle.dna != _tags(mlflow_id)["expdna.family"]  # the seed is out of the family

    # The twins question, asked in MLflow's own terms.
    found = mlflow.search_runs(
        experiment_names=["tiny"],
        filter_string=f"tags.\"expdna.dna\" = '{handle.dna}'",
        output_format="list",
    )
    assert [run.info.run_id for run in found] == [mlflow_id]

    artifact = mlflow.artifacts.load_text(f"runs:/{mlflow_id}/{expdna_mlflow.ARTIFACT}")
    assert json.loads(artifact)["metrics"] == {"loss": 0.25}
    assert handle.path is not None
    assert json.loads(artifact) == json.loads(handle.path.read_text())

    written = load_manifest(handle.path).to_dict()
    assert written["tracking"]["mlflow"] == {
        "run_id": mlflow_id,
        "experiment_id": active.info.experiment_id,
        "tracking_uri": tracking_uri,
    }
    shown = invoke(store, "show", str(handle.run_id))
    assert shown.exit_code == 0, shown.output
    assert f"mlflow     {mlflow_id} ({tracking_uri})" in shown.output.splitlines()


def test_log_ties_a_run_started_later_and_never_raises(tracking_uri: str, tmp_path: Path) -> None:
    handle = _start({"lr": 0.2}, output_dir=tmp_path / "out")
    handle.add_runtime()
    assert "tracking" not in handle.manifest.to_dict()  # type: ignore[union-attr]
    with mlflow.start_run() as active:
        assert expdna_mlflow.log(handle) == active.info.run_id
    assert _tags(active.info.run_id)["expdna.dna"] == handle.dna
    handle.finish()  # no run active any more: the tie stays, the file records it
    assert handle.path is not None
    written = json.loads(handle.path.read_text())
    assert written["tracking"]["mlflow"]["run_id"] == active.info.run_id

    assert expdna_mlflow.log(handle) is None  # no active run
    assert expdna_mlflow.log(handle, run_id="0" * 32) is None  # no such run
    assert handle.warnings[0] == "mlflow.log: no active MLflow run and no run_id given"
    assert handle.warnings[1].startswith("mlflow.log: MlflowException")
    assert expdna_mlflow.log(None) is None


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "wandb"
    root.mkdir()
    for name, value in {
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(root),
        "WANDB_SILENT": "true",
        "WANDB_CONFIG_DIR": str(root / "config"),
        "WANDB_CACHE_DIR": str(root / "cache"),
    }.items():
        monkeypatch.setenv(name, value)
    return root


def test_an_active_wandb_run_gets_the_dna_in_its_config(offline: Path, tmp_path: Path) -> None:
    run = wandb.init(project="tiny", config={"lr": 0.1})
    try:
        handle = _start({"lr": 0.1, "seed": 3}, output_dir=tmp_path / "out")
        handle.add_runtime()
        handle.finish(metrics={"loss": 0.5})
        config: dict[str, Any] = dict(run.config)
        files = Path(run.dir)
    finally:
        run.finish()
    assert handle.warnings == [] and handle.manifest is not None and handle.manifest.dna
    assert config["lr"] == 0.1
    assert config[expdna_wandb.CONFIG_KEY] == {
        "dna": handle.dna,
        "family": family_of(handle.manifest, handle.manifest.dna.sections),
        "run_id": handle.run_id,
        "sections": handle.manifest.dna.sections,
    }
    saved = json.loads((files / expdna_wandb.FILE).read_text())
    assert saved["metrics"] == {"loss": 0.5} and saved["dna"]["value"] == handle.dna
    assert saved["tracking"]["wandb"] == {"run_id": run.id, "project": "tiny", "entity": None}
    assert files.parent.name.startswith("offline-run-")


def test_a_tracker_that_is_down_costs_a_warning_not_the_training(
    tracking_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    handle = _start({"lr": 0.3}, output_dir=tmp_path / "out", deadline_s=2.0)
    with mlflow.start_run() as active:
        found = expdna_mlflow.log(handle)
    assert found == active.info.run_id and handle.warnings == []
    # The same run, now behind a tracking server that does not answer (nothing listens).
    handle.links["mlflow"] = expdna_mlflow._link(found, "0", "http://127.0.0.1:9")
    started = time.perf_counter()
    handle.finish(metrics={"loss": 1.0})
    assert time.perf_counter() - started < 10.0
    assert len(handle.warnings) == 1 and handle.warnings[0].startswith("telling mlflow: ")
    assert handle.path is not None
    assert json.loads(handle.path.read_text())["metrics"] == {"loss": 1.0}  # the run is kept
