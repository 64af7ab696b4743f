"""examples/hf_trainer_tiny.py, run for real: a one-layer BERT from ``BertConfig``, no downloads.

Two runs of the same setup into different output directories, side by side: two run ids,
one DNA (the Trainer's per-run paths stay out of it).
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

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hf_trainer_tiny.py"

pytestmark = pytest.mark.slow  # transformers takes seconds to import; two runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    root = tmp_path_factory.mktemp("hf")
    repo = root / "project"
    repo.mkdir()
    shutil.copy(EXAMPLE, repo / "train.py")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "tiny")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EXPDNA_", "WANDB_"))}
    env.update(
        PYTHONWARNINGS="ignore",
        EXPDNA_CACHE_DIR=str(root / "cache"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(root / "hf_home"),
    )
    train = [sys.executable, str(repo / "train.py"), "--store", str(root / "store")]
    processes = [
        subprocess.Popen(
            [*train, "--output-dir", str(root / name)],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    found = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        assert [line for line in stderr.splitlines() if line.startswith("expdna:")] == []
        found.append({**json.loads(stdout.strip().splitlines()[-1]), "root": root})
    return found


def test_the_callback_records_the_training_arguments(runs: list[dict[str, Any]]) -> None:
    run = runs[0]
    path = Path(run["manifest"])
    assert path.parent == run["root"] / "a"  # args.output_dir
    manifest = load_manifest(path)
    assert manifest.run_id == run["run_id"] and list(manifest.code) == ["project"]
    training = manifest.training.model_dump()
    assert {k: training[k] for k in ("micro_batch_size", "global_batch_size", "seeds")} == {
        "micro_batch_size": 8,
        "global_batch_size": 16,  # 8 per device x 2 accumulation steps x 1 process
        "seeds": {"seed": 0, "data_seed": 1},
    }
    assert training["gradient_accumulation_steps"] == 2
    assert training["learning_rate"] == 1e-3
    assert training["precision"] == {"fp16": False, "bf16": False}
    resolved = manifest.config.resolved_args
    assert resolved["max_steps"] == 4 and resolved["report_to"] == []
    # The last logged value of each metric, the final summary included.
    assert {"loss", "train_loss", "train_runtime", "epoch"} <= set(manifest.metrics)
    assert manifest.metrics["epoch"] == 1.0

    weights = run["root"] / "a" / "checkpoint-4" / "model.safetensors"
    which = invoke(run["root"] / "store", "which", str(weights), "--json")
    assert which.exit_code == 0, which.output
    (pinned,) = json.loads(which.output)
    assert pinned["run_id"] == run["run_id"] and pinned["name"] == "checkpoint-4/model.safetensors"


def test_one_setup_one_dna_whatever_the_output_dir(runs: list[dict[str, Any]]) -> None:
    a, b = runs
    assert a["run_id"] != b["run_id"]
    assert a["dna"] == b["dna"]


def test_arguments_that_fail_never_reach_the_training(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expdna.integrations.transformers import ExpdnaCallback

    monkeypatch.delenv("EXPDNA_STORE", raising=False)
    callback = ExpdnaCallback(output_dir=tmp_path)
    callback.on_train_begin(object(), object(), object())  # no to_dict(), no batch size
    assert callback.run is None
    callback.on_save(object(), object(), object())
    callback.on_log(object(), object(), object(), logs={"loss": 0.5, "note": [1]})
    callback.on_train_end(object(), object(), object())
    assert callback.metrics == {"loss": 0.5}  # a list is not a final metric
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("expdna")]
    assert warnings == [
        "expdna: Trainer run not recorded: AttributeError: "
        "'object' object has no attribute 'to_dict'"
    ]


def _callback_manifest(tmp_path: Path, layers: int, given: Any) -> Any:
    import dataclasses

    from transformers import BertConfig, BertForSequenceClassification, TrainingArguments

    from expdna.integrations.transformers import ExpdnaCallback

    @dataclasses.dataclass
    class ModelArguments:
        model_name_or_path: str = f"tiny-{layers}-layer"

    model = BertForSequenceClassification(
        BertConfig(
            vocab_size=32,
            hidden_size=8,
            num_hidden_layers=layers,
            num_attention_heads=2,
            intermediate_size=8,
        )
    )
    args = TrainingArguments(output_dir=str(tmp_path / f"out{layers}"), report_to="none")
    callback = ExpdnaCallback(args=(ModelArguments(),) if given else None, collectors=["config"])
    callback.on_train_begin(args, object(), object(), model=model)
    assert callback.run is not None and callback.run.manifest is not None
    return callback.run.manifest


def test_the_callback_takes_args_and_records_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EXPDNA_STORE", raising=False)
    one = _callback_manifest(tmp_path, 1, given=True)
    two = _callback_manifest(tmp_path, 2, given=True)
    assert one.config.resolved_args["model_name_or_path"] == "tiny-1-layer"
    assert "learning_rate" in one.config.resolved_args  # TrainingArguments merged over them
    model = one.training.model
    assert model["class"].endswith("BertForSequenceClassification")
    assert model["config"]["num_hidden_layers"] == 1 and model["parameters"] > 0
    assert two.training.model["config"]["num_hidden_layers"] == 2
    # Recorded, but (DNA version 3) out of the DNA with the whole training section: generate
    # cannot see a model built in code. The code that builds it, the command's model name,
    # or a local model directory's config.json (tests/integration/test_path_agree.py) count.
    assert one.dna.value == two.dna.value
    from expdna.manifest.dna import compute_dna

    assert compute_dna(one, version=2).value != compute_dna(two, version=2).value
    assert "report_to" in one.config.resolved_args  # recorded, but out of the DNA (v3)
