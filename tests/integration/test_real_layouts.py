"""Identity on repository layouts as public training code has them (DNA version 3).

Small fixtures in the likeness of karpathy/nanoGPT (a positional ``.py`` config and
``--key=value`` overrides), a Lightning + Hydra template (``src/train.py`` with Hydra
overrides) and a torchrun DDP tutorial: the same command twice gives one DNA though W&B,
MLflow, Lightning and expdna itself leave their outputs in the checkout; each real change
gives a new DNA and ``expdna diff`` names it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import git

EXPDNA = str(Path(sys.executable).with_name("expdna"))

NANOGPT = {
    "train.py": "import os\nbatch_size = 12\ncompile = True\n"
    "exec(open('configurator.py').read())\n",
    "configurator.py": "import sys\nfor arg in sys.argv[1:]:\n    pass\n",
    "model.py": "class GPT:\n    n_layer = 12\n",
    "config/train_shakespeare_char.py": "batch_size = 64\nn_layer = 6\n",
    ".gitignore": "__pycache__/\n*.bin\n",
}
TEMPLATE = {
    "src/train.py": "import hydra\n",
    "src/models/mnist_module.py": "class MNISTLitModule:\n    pass\n",
    "configs/train.yaml": "seed: 12345\ntrainer:\n  max_epochs: 10\n",
    ".project-root": "",
}


def _checkout(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def _generate(cwd: Path, argv: list[str], out: Path | None = None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EXPDNA_", "WANDB_"))}
    env["EXPDNA_CACHE_DIR"] = str(cwd.parent / "cache")
    output = ["-o", str(out)] if out is not None else []
    done = subprocess.run(
        [EXPDNA, "generate", "--json", *output, "--", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _tool_outputs(root: Path) -> None:
    """What W&B (offline), MLflow (local file store and SQLite) and Lightning write."""
    run = root / "wandb" / "offline-run-20260805_143025-k3f9abcd"
    for name in ("files/config.yaml", "files/output.log", "logs/debug.log", "run-k3f9abcd.wandb"):
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text("x\n")
    (root / "wandb" / "latest-run").symlink_to(run.name)
    meta = root / "mlruns" / "0" / "0123abcd" / "meta.yaml"
    meta.parent.mkdir(parents=True)
    meta.write_text("status: 3\n")
    (root / "mlflow.db").write_bytes(b"SQLite format 3\0")
    hparams = root / "lightning_logs" / "version_0" / "hparams.yaml"
    hparams.parent.mkdir(parents=True)
    hparams.write_text("lr: 0.1\n")


def _diff(a: Path, b: Path) -> str:
    done = subprocess.run([EXPDNA, "diff", str(a), str(b)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # they differ
    return done.stdout


@pytest.mark.slow  # a dozen real `expdna generate` processes
def test_nanogpt_layout_one_setup_one_dna_and_each_change_named(tmp_path: Path) -> None:
    repo = _checkout(tmp_path / "nanoGPT", NANOGPT)
    argv = ["python", "train.py", "config/train_shakespeare_char.py", "--compile=False"]
    first = _generate(repo, argv)  # the README's default: the manifest lands in the root
    _tool_outputs(repo)
    second = _generate(repo, argv, repo / "mine.json")  # -o inside the checkout
    third = _generate(repo, argv, tmp_path / "third.json")
    assert first["dna"] == second["dna"] == third["dna"]
    doc = json.loads((tmp_path / "third.json").read_text())
    assert doc["config"]["resolved_args"]["compile"] is False  # as the script reads it
    assert doc["command"]["entry"] == "train.py"
    notes = doc["collection"]["collectors"]["git"]["notes"]
    assert "left out as outputs: wandb/ (2 entries)" in notes
    assert "left out as outputs: expdna manifests (2 files)" in notes

    (repo / "newmod.py").write_text("x = 1\n")  # a new module, untracked
    new_code = _generate(repo, argv, tmp_path / "new_code.json")
    assert new_code["dna"] != third["dna"]
    assert "code." in _diff(tmp_path / "third.json", tmp_path / "new_code.json")
    (repo / "newmod.py").unlink()

    on = _generate(repo, [*argv[:-1], "--compile=True"], tmp_path / "on.json")
    assert on["dna"] != third["dna"]
    assert "config.resolved_args.compile" in _diff(tmp_path / "third.json", tmp_path / "on.json")


@pytest.mark.slow  # real `expdna generate` processes
def test_hydra_overrides_are_config_and_seeds_stay_in_the_family(tmp_path: Path) -> None:
    repo = _checkout(tmp_path / "template", TEMPLATE)
    base = ["python", "src/train.py", "trainer=cpu"]
    a = _generate(repo, [*base, "model.optimizer.lr=0.001", "seed=1"], tmp_path / "a.json")
    b = _generate(repo, [*base, "model.optimizer.lr=0.002", "seed=1"], tmp_path / "b.json")
    c = _generate(repo, [*base, "model.optimizer.lr=0.001", "seed=2"], tmp_path / "c.json")
    assert len({a["dna"], b["dna"], c["dna"]}) == 3
    assert "config.resolved_args.model.optimizer.lr" in _diff(
        tmp_path / "a.json", tmp_path / "b.json"
    )
    from expdna.manifest import load_manifest
    from expdna.manifest.family import family_of

    docs = [load_manifest(tmp_path / f"{name}.json") for name in "abc"]
    assert family_of(docs[0]) == family_of(docs[2]) != family_of(docs[1])


HYDRA_TEMPLATE = Path(__file__).parent.parent / "data" / "hydra_template"


@pytest.mark.slow  # real `expdna generate`, `check` and `diff` processes
def test_hydra_group_configs_outside_the_checkout_are_identity(tmp_path: Path) -> None:
    """lightning-hydra-template with its configs shared outside the checkout
    (``--config-path /shared``): every group file the defaults lists and the command line
    choose is recorded; editing one changes the DNA, ``check`` fails on it and ``diff``
    names it."""
    import shutil

    repo = _checkout(
        tmp_path / "template", {"src/train.py": (HYDRA_TEMPLATE / "src/train.py").read_text()}
    )
    shared = tmp_path / "sharedcfg"
    shutil.copytree(HYDRA_TEMPLATE / "configs", shared)
    argv = ["python", "src/train.py", "--config-path", str(shared), "trainer=cpu", "model=mnist"]
    a = _generate(repo, argv, tmp_path / "a.json")
    doc = json.loads((tmp_path / "a.json").read_text())
    files = doc["config"]["config_files"]
    for name in ("train", "model/mnist", "model/optimizer/adam", "trainer/cpu", "trainer/default"):
        assert str(shared / f"{name}.yaml") in files, name
    assert doc["collection"]["collectors"]["config_files"]["status"] == "ok"

    def check(manifest: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [EXPDNA, "check", str(manifest)], cwd=repo, capture_output=True, text=True
        )

    assert check(tmp_path / "a.json").returncode == 0
    # the same files in another folder (``-cp``, the short flag): the same DNA
    moved = tmp_path / "movedcfg"
    shutil.copytree(shared, moved)
    short = ["python", "src/train.py", "-cp", str(moved), "trainer=cpu", "model=mnist"]
    assert _generate(repo, short, tmp_path / "moved.json")["dna"] == a["dna"]
    mnist = shared / "model" / "mnist.yaml"
    mnist.write_text(mnist.read_text().replace("compile: false", "compile: true"))
    b = _generate(repo, argv, tmp_path / "b.json")
    assert b["dna"] != a["dna"]
    checked = check(tmp_path / "a.json")
    assert checked.returncode == 1, checked.stdout
    assert f"FAIL config.config_files.{mnist}" in checked.stdout
    assert "changed keys: compile" in checked.stdout
    shown = _diff(tmp_path / "a.json", tmp_path / "b.json")
    assert "config.config_files[model/mnist.yaml]" in shown
    assert "compile: false -> true" in shown
    # another group choice: the group's file is paired with the first run's and named
    gpu = _generate(repo, [*argv[:-2], "trainer=gpu", "model=mnist"], tmp_path / "gpu.json")
    assert gpu["dna"] != b["dna"]
    shown = _diff(tmp_path / "b.json", tmp_path / "gpu.json")
    assert "config.config_files[trainer/cpu.yaml]" in shown
    assert "accelerator: cpu -> gpu" in shown
    assert "hydra_config: trainer/cpu -> trainer/gpu" in shown
    assert "config.resolved_args.trainer: cpu -> gpu" in shown


@pytest.mark.slow  # real `expdna generate` processes
def test_the_launcher_shape_is_part_of_the_dna(tmp_path: Path) -> None:
    repo = _checkout(tmp_path / "ddp", {"multigpu_torchrun.py": "import torch\n"})
    script = ["multigpu_torchrun.py", "50", "10"]
    two = _generate(repo, ["torchrun", "--standalone", "--nproc-per-node=2", *script])
    two_again = _generate(
        repo,
        ["torchrun", "--standalone", "--nproc_per_node", "2", "--master-port", "29501", *script],
        tmp_path / "again.json",
    )
    four = _generate(repo, ["torchrun", "--standalone", "--nproc-per-node=4", *script])
    assert two["dna"] == two_again["dna"] != four["dna"]
