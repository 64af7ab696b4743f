"""One setup, one DNA, whatever path records it (issue #22 item 7).

A tiny DDP script under the real ``torchrun``, ``accelerate launch`` and ``deepspeed`` (CPU,
gloo), recorded three ways: ``expdna generate`` before it runs, the hook inside it, and
``expdna run`` around it; the Lightning
callback and the Hugging Face callback, each against ``generate`` of its command. Every path
must give the same DNA, and a real change (the learning rate, an edited source file,
another local model) must still give another one. Nothing downloads (``HF_HUB_OFFLINE=1``;
the models are tiny ``BertConfig`` ones saved here).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.factories import git

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BIN = Path(sys.executable).parent
EXPDNA = str(BIN / "expdna")
TIMEOUT_S = 400

pytestmark = pytest.mark.slow  # torch starts in several processes

#: A DDP script whose argparse default (batch_size) only the process knows.
DDP = '''"""Tiny DDP: every rank calls the hook; rank 0 writes the manifest."""
import argparse

import torch
import torch.distributed as dist
from torch import nn

import expdna

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--batch_size", type=int, default=16)
parser.add_argument("--output-dir", required=True)
parser.add_argument("--local_rank", type=int, default=0)  # deepspeed adds --local_rank=N
args = parser.parse_args()
dist.init_process_group("gloo")
with expdna.track(args, output_dir=args.output_dir) as run:
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss = model(torch.randn(args.batch_size, 4)).pow(2).mean()
    loss.backward()
    optimiser.step()
    run.log_final(loss=loss.item())
    dist.barrier()
dist.destroy_process_group()
'''

#: The same training in one process, as ``accelerate launch --cpu`` starts it (no group).
ONE_PROCESS = '''"""One process on CPU: the hook records it; no process group."""
import argparse

import torch
from torch import nn

import expdna

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--output-dir", required=True)
args = parser.parse_args()
with expdna.track(args, output_dir=args.output_dir) as run:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    loss = model(torch.randn(16, 4)).pow(2).mean()
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=args.lr).step()
    run.log_final(loss=loss.item())
'''

#: A Hugging Face Trainer script that loads a local model directory.
HF_LOCAL = '''"""A local tiny BERT, one Trainer step, recorded by ExpdnaCallback."""
import argparse

import torch
from transformers import BertForSequenceClassification, Trainer, TrainingArguments

from expdna.integrations.transformers import ExpdnaCallback

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path", required=True)
parser.add_argument("--output_dir", required=True)
parser.add_argument("--learning_rate", type=float, default=1e-3)
args = parser.parse_args()
model = BertForSequenceClassification.from_pretrained(args.model_name_or_path)
rows = [
    {"input_ids": torch.arange(1, 9), "attention_mask": torch.ones(8, dtype=torch.long),
     "labels": torch.tensor(i % 2)}
    for i in range(8)
]
training = TrainingArguments(
    output_dir=args.output_dir, max_steps=1, per_device_train_batch_size=4,
    learning_rate=args.learning_rate, report_to=[], use_cpu=True, disable_tqdm=True,
    save_strategy="no",
)
Trainer(model=model, args=training, train_dataset=rows, callbacks=[ExpdnaCallback()]).train()
'''


def _env(tmp: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        # torchrun's own settings must come from torchrun, as in a user's shell
        if not k.startswith(("EXPDNA_", "ACCELERATE_"))
        and k not in ("OMP_NUM_THREADS", "TORCH_NCCL_ASYNC_ERROR_HANDLING")
    }
    env.update(
        EXPDNA_CACHE_DIR=str(tmp / "cache"),
        PYTHONWARNINGS="ignore",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(tmp / "hf"),
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return env


def _tiny_bert(folder: Path, layers: int) -> None:
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=32,
        hidden_size=8,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
    )
    BertForSequenceClassification(config).save_pretrained(folder)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("agree")
    repo = tmp / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "train.py").write_text(DDP)
    (repo / "hf_local.py").write_text(HF_LOCAL)
    (repo / "one_process.py").write_text(ONE_PROCESS)
    for name in ("lightning_tiny.py", "hf_trainer_tiny.py"):
        shutil.copy(EXAMPLES / name, repo / name)
    git(repo, "add", ".")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    models = tmp / "models"
    for layers in (1, 2):
        _tiny_bert(models / f"bert-{layers}", layers)
    return {"repo": repo, "tmp": tmp, "env": _env(tmp), "models": models}


#: What a gloo rank's C++ runtime prints when it aborts at exit (SIGABRT), seen twice in
#: about nine loaded runs of this file, after the training and the manifest were done and
#: never without load; ten bare runs of the script under the same load did not show it.
_TEARDOWN_ABORT = "terminate called without an active exception"


def _run(
    argv: list[str], project: dict[str, Any], *, outputs: tuple[Path, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``argv`` in the project, which must succeed; once more (its ``outputs`` removed
    first) where a rank aborted at teardown as above."""
    for attempt in (1, 2):
        done = subprocess.run(
            argv,
            cwd=project["repo"],
            env=project["env"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        if done.returncode == 0 or _TEARDOWN_ABORT not in done.stderr or attempt == 2:
            break
        for folder in outputs:
            shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _manifest(folder: Path) -> dict[str, Any]:
    [path] = sorted(folder.rglob("manifest_*.json"))
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def _generated(command: list[str], project: dict[str, Any], name: str) -> dict[str, Any]:
    out = project["tmp"] / f"{name}.json"
    _run([EXPDNA, "generate", "-o", str(out), "--", *command], project)
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _hooked(command: list[str], project: dict[str, Any], out: Path) -> dict[str, Any]:
    _run(command, project, outputs=(out,))
    return _manifest(out)


def _dna(doc: dict[str, Any]) -> str:
    value: str = doc["dna"]["value"]
    return value


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [k for k, v in a["dna"]["sections"].items() if b["dna"]["sections"][k] != v]


def _torchrun(project: dict[str, Any], out: Path, *args: str) -> list[str]:
    return ["torchrun", "--standalone", "--nproc-per-node", "2", "train.py", *args,
            "--output-dir", str(out)]  # fmt: skip


def test_torchrun_generate_hook_and_run_agree(project: dict[str, Any]) -> None:
    tmp = project["tmp"]
    generated = _generated(_torchrun(project, tmp / "gen", "--lr", "0.2"), project, "ddp-gen")
    hooked = _hooked(_torchrun(project, tmp / "hook", "--lr", "0.2"), project, tmp / "hook")
    around = tmp / "run"
    _run([EXPDNA, "run", "--output-dir", str(around), "--",
          *_torchrun(project, tmp / "run-out", "--lr", "0.2")], project,
         outputs=(around, tmp / "run-out"))  # fmt: skip
    ran = _manifest(around)
    assert _differing(generated, hooked) == [] and _dna(generated) == _dna(hooked)
    assert _dna(ran) == _dna(generated)
    # What made them differ is still recorded, outside the DNA.
    assert hooked["config"]["resolved_args"]["batch_size"] == 16
    assert "batch_size" not in generated["config"]["resolved_args"]
    assert "nproc_per_node" not in generated["config"]["resolved_args"]
    # torchrun sets these in its ranks only; generate records what the ranks will see.
    assert generated["config"]["selected_env"] == hooked["config"]["selected_env"]
    torchrun_set = {"OMP_NUM_THREADS": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    assert torchrun_set.items() <= generated["config"]["selected_env"].items()
    assert hooked["environment"]["framework"]["torch"]["loaded"]["determinism"]
    assert (
        generated["runtime"]["nodes"][0]["fingerprint"]
        == (hooked["runtime"]["nodes"][0]["fingerprint"])
    )
    # A real change is still another DNA, on both paths.
    other_lr = _hooked(_torchrun(project, tmp / "hook-lr", "--lr", "0.3"), project, tmp / "hook-lr")
    assert _differing(hooked, other_lr) == ["config"]
    assert _dna(_generated(_torchrun(project, tmp / "x", "--lr", "0.3"), project, "lr")) == _dna(
        other_lr
    )
    train = project["repo"] / "train.py"
    train.write_text(DDP.replace("torch.manual_seed(0)", "torch.manual_seed(1)"))
    try:
        edited = _generated(_torchrun(project, tmp / "gen", "--lr", "0.2"), project, "edited")
    finally:
        git(project["repo"], "checkout", "--", "train.py")
    assert _differing(generated, edited) == ["code"]


def test_torchrun_counting_the_cpus_agrees(project: dict[str, Any]) -> None:
    """``--nproc-per-node cpu``: torchrun counts the CPUs this process may run on when it
    starts; generate, run just before it from the same shell, counts the same ones."""
    tmp = project["tmp"]
    command = ["torchrun", "--standalone", "--nproc-per-node", "cpu", "train.py"]
    generated = _generated([*command, "--output-dir", str(tmp / "cpu-gen")], project, "cpu")
    hooked = _hooked([*command, "--output-dir", str(tmp / "cpu")], project, tmp / "cpu")
    assert _differing(generated, hooked) == [] and _dna(generated) == _dna(hooked)
    assert generated["config"]["selected_env"] == hooked["config"]["selected_env"]
    layout = generated["runtime"]["torch_distributed"]
    assert layout["world_size"] == hooked["runtime"]["torch_distributed"]["world_size"]
    assert layout["world_size"] == len(os.sched_getaffinity(0))


def _accelerate(out: Path, *args: str, mode: tuple[str, ...] = ()) -> list[str]:
    script = "train.py" if "--multi_gpu" in mode else "one_process.py"
    return ["accelerate", "launch", *mode, script, *args, "--output-dir", str(out)]


#: ``accelerate launch`` starting torchrun in-process (``--multi_gpu``, CPU here), one
#: process under its simple launcher (``--cpu``: OMP_NUM_THREADS from the physical cores
#: and KMP_*), and ``--num_processes 2`` alone, which on a machine without two accelerators
#: also starts one process.
ACCELERATE_MODES = {
    "multi_gpu": ("--multi_gpu", "--num_processes", "2"),
    "cpu": ("--cpu",),
    "num_processes": ("--num_processes", "2"),
}


@pytest.mark.parametrize("name", list(ACCELERATE_MODES))
def test_accelerate_generate_hook_and_run_agree(project: dict[str, Any], name: str) -> None:
    tmp, mode = project["tmp"], ACCELERATE_MODES[name]
    gen, hooked, ran = _three_ways(
        lambda out: _accelerate(out, "--lr", "0.2", mode=mode), project, f"a-{name}"
    )
    assert _differing(gen, hooked) == [] and _dna(gen) == _dna(hooked)
    assert _dna(ran) == _dna(gen)
    # accelerate sets these for its children; generate records what they will see.
    assert gen["config"]["selected_env"] == hooked["config"]["selected_env"]
    assert "OMP_NUM_THREADS" in gen["config"]["selected_env"]
    assert gen["runtime"]["mode"] == hooked["runtime"]["mode"]
    if name == "multi_gpu":
        assert hooked["runtime"]["torch_distributed"]["world_size"] == 2
        assert (
            gen["runtime"]["nodes"][0]["fingerprint"]
            == (hooked["runtime"]["nodes"][0]["fingerprint"])
        )
    else:
        assert hooked["config"]["selected_env"].get("KMP_BLOCKTIME") == (
            "1" if name == "cpu" else None
        )
    # A real change is still another DNA, on both paths.
    other = _generated(_accelerate(tmp / "x", "--lr", "0.3", mode=mode), project, f"{name}-lr")
    assert _differing(gen, other) == ["config"]
    if name == "multi_gpu":
        out = tmp / f"a-{name}-lr"
        assert _dna(_hooked(_accelerate(out, "--lr", "0.3", mode=mode), project, out)) == (
            _dna(other)
        )


def _three_ways(
    command: Callable[[Path], list[str]], project: dict[str, Any], tag: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``command(out)`` recorded by generate, by the hook inside it and by ``expdna run``
    around it: their three manifests."""
    tmp = project["tmp"]
    generated = _generated(command(tmp / f"{tag}-g"), project, tag)
    out = tmp / f"{tag}-hook"
    hooked = _hooked(command(out), project, out)
    around, inner = tmp / f"{tag}-run", tmp / f"{tag}-r"
    _run([EXPDNA, "run", "--output-dir", str(around), "--", *command(inner)], project,
         outputs=(around, inner))  # fmt: skip
    return generated, hooked, _manifest(around)


def _free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def _deepspeed(out: Path, *args: str, mode: tuple[str, ...] = ()) -> list[str]:
    # Its own port each time: deepspeed's default (29500) is fixed, so a run beside this
    # one would take it; the port is per-run and stays out of the DNA.
    return ["deepspeed", "--master_port", _free_port(), *mode, "train.py", *args,
            "--output-dir", str(out)]  # fmt: skip


#: Two ranks on this one node, the script told its ``--local_rank=N`` (deepspeed's default)
#: or not (``--no_local_rank``).
DEEPSPEED_MODES = {
    "local_rank": ("--num_gpus", "2"),
    "no_local_rank": ("--num_gpus", "2", "--no_local_rank"),
}


@pytest.mark.parametrize("name", list(DEEPSPEED_MODES))
def test_deepspeed_generate_hook_and_run_agree(project: dict[str, Any], name: str) -> None:
    pytest.importorskip("deepspeed")
    tmp, mode = project["tmp"], DEEPSPEED_MODES[name]
    gen, hooked, ran = _three_ways(
        lambda out: _deepspeed(out, "--lr", "0.2", mode=mode), project, f"d-{name}"
    )
    assert _differing(gen, hooked) == [] and _dna(gen) == _dna(hooked)
    assert _dna(ran) == _dna(gen)
    # The hook names the launcher (its ancestor's command line), not the rank's own words.
    assert hooked["command"]["argv"][:2] == ["deepspeed", "--master_port"]
    assert "--local_rank=0" not in hooked["command"]["argv"]
    # deepspeed sets these for its ranks; generate records what they will see.
    assert gen["config"]["selected_env"] == hooked["config"]["selected_env"]
    assert hooked["config"]["selected_env"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    # The same topology as torchrun's two ranks on one node: the same runtime.
    assert hooked["runtime"]["torch_distributed"]["ranks_per_node"] == 2
    two = _generated(_torchrun(project, tmp / "x", "--lr", "0.2"), project, f"{name}-torchrun")
    assert hooked["dna"]["sections"]["runtime"] == two["dna"]["sections"]["runtime"]
    # A real change is still another DNA, on both paths.
    other = _generated(_deepspeed(tmp / "x", "--lr", "0.3", mode=mode), project, f"{name}-lr")
    assert _differing(gen, other) == ["config"]
    if name == "local_rank":
        out = tmp / f"d-{name}-lr"
        assert _dna(_hooked(_deepspeed(out, "--lr", "0.3", mode=mode), project, out)) == (
            _dna(other)
        )


def test_lightning_callback_agrees_with_generate(project: dict[str, Any]) -> None:
    tmp = project["tmp"]
    command = ["python", "lightning_tiny.py", "--epochs", "1", "--output-dir"]
    generated = _generated([*command, str(tmp / "pl-gen")], project, "pl-gen")
    hooked = _hooked([*command, str(tmp / "pl")], project, tmp / "pl")
    assert _differing(generated, hooked) == [] and _dna(generated) == _dna(hooked)
    other = _generated([*command, str(tmp / "pl-gen"), "--lr", "0.1"], project, "pl-lr")
    assert _differing(generated, other) == ["config"]


def test_hf_callback_agrees_with_generate(project: dict[str, Any]) -> None:
    tmp = project["tmp"]
    command = ["python", "hf_trainer_tiny.py", "--steps", "2", "--output-dir"]
    generated = _generated([*command, str(tmp / "hf-gen")], project, "hf-gen")
    hooked = _hooked([*command, str(tmp / "hf")], project, tmp / "hf")
    assert _differing(generated, hooked) == [] and _dna(generated) == _dna(hooked)


def test_a_local_model_directory_is_one_setup_on_both_paths(project: dict[str, Any]) -> None:
    tmp, models = project["tmp"], project["models"]

    def command(layers: int, out: Path) -> list[str]:
        return ["python", "hf_local.py", "--model_name_or_path", str(models / f"bert-{layers}"),
                "--output_dir", str(out)]  # fmt: skip

    generated = _generated(command(1, tmp / "local-gen"), project, "local-gen")
    hooked = _hooked(command(1, tmp / "local"), project, tmp / "local")
    assert _differing(generated, hooked) == [] and _dna(generated) == _dna(hooked)
    assert generated["config"]["config_file_args"] == ["model_name_or_path"]
    two = _generated(command(2, tmp / "local-gen"), project, "local-2")
    assert _differing(generated, two) == ["config"]  # config.json: 1 layer -> 2 layers
