"""What each framework integration adds to a training start, next to the plain hook.

The plain hook is ``expdna.start()`` + ``add_runtime()`` in a script that imported torch;
each integration is measured the way it runs, in the same process, right after it:

- MLflow: the same calls inside an active run of a local SQLite tracking store (the
  hook finds the run, tags it and logs the manifest artifact);
- W&B: the same calls inside an offline ``wandb.run`` (config update, manifest saved);
- Lightning: ``ExpdnaCallback.setup`` on a real ``Trainer`` (log dir, trainer settings);
- Hugging Face: ``ExpdnaCallback.on_train_begin`` with real ``TrainingArguments``;
- torch.distributed: rank 0's exchange over a real TCPStore with one other node that has
  posted its fingerprint (what rank 0 adds; the other node computes its own in parallel).

The trackers' and the exchange's figures are the hook's added work timed alone; the
callbacks' are the median of paired differences (callback, then the plain hook, again and
again), so a loaded machine's drift cancels out. All warm, median of ``--repeat``; the
framework imports and the tracker's own run start are not counted (the training script
pays them anyway).

    python benchmarks/integrations_bench.py [--repeat 7]

Target (issue "Meet users where they train"): each adds under 150 ms to the start.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

os.environ.pop("EXPDNA_STORE", None)
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", HF_HUB_OFFLINE="1")

import torch

import expdna

TARGET_MS = 150.0
ARGS = {"lr": 0.1, "seed": 0, "batch_size": 32}


def project(root: Path) -> Path:
    """A fresh git repository with a committed training script: the run's code."""
    repo = root / "project"
    repo.mkdir()
    (repo / "train.py").write_text("import torch\nprint('train')\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "train.py"], ["commit", "-q", "-m", "t"]):
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@b", *argv], cwd=repo, check=True
        )
    return repo / "train.py"


def _ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # the first call warms the caches every later start finds warm too
    return statistics.median(_ms(fn) for _ in range(repeat))


def added_ms(base: Callable[[], Any], fn: Callable[[], Any], repeat: int) -> float:
    """Median of paired differences, ``fn`` right after ``base``: a loaded machine's drift
    cancels out of each pair."""
    base(), fn()
    return statistics.median(-_ms(base) + _ms(fn) for _ in range(repeat))


def plain(script: Path, out: Path) -> Callable[[], Any]:
    def go() -> None:
        run = expdna.start(ARGS, output_dir=out, caller_file=script)
        assert run is not None
        run.add_runtime()
        assert not run.warnings, run.warnings

    return go


def tracker_work(script: Path, out: Path) -> Callable[[], Any]:
    """What the hook adds inside a tracker run: find it, record it, tell it once."""
    from expdna.integrations.trackers import discover, push, with_links

    run = expdna.start(ARGS, output_dir=out, caller_file=script, collectors=["config"])
    assert run is not None and run.manifest is not None
    manifest = run.manifest

    def go() -> None:
        links = discover(set())
        assert links, "no tracker run active"
        tied = with_links(manifest, links)
        for link in links.values():
            push(link, tied)

    return go


@contextlib.contextmanager
def mlflow_run(root: Path) -> Iterator[None]:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    mlflow.set_experiment(
        experiment_id=mlflow.create_experiment("bench", (root / "artifacts").as_uri())
    )
    with mlflow.start_run():
        yield


@contextlib.contextmanager
def wandb_run(root: Path) -> Iterator[None]:
    import wandb

    run = wandb.init(project="bench", dir=str(root))
    try:
        yield
    finally:
        run.finish()


def lightning_setup(script: Path, out: Path) -> Callable[[], Any]:
    import lightning.pytorch as pl

    from expdna.integrations.lightning import ExpdnaCallback

    trainer = pl.Trainer(
        max_epochs=2, default_root_dir=out, logger=False, enable_progress_bar=False
    )

    def go() -> None:
        callback = ExpdnaCallback(caller_file=script)
        callback.setup(trainer, None, "fit")
        assert callback.run is not None and not callback.run.warnings

    return go


def hf_begin(script: Path, out: Path) -> Callable[[], Any]:
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from expdna.integrations.transformers import ExpdnaCallback

    args = TrainingArguments(output_dir=str(out), report_to=[], use_cpu=True, seed=0)

    def go() -> None:
        callback = ExpdnaCallback(caller_file=script)
        callback.on_train_begin(args, TrainerState(), TrainerControl())
        assert callback.run is not None and not callback.run.warnings

    return go


def torch_exchange() -> Callable[[], Any]:
    """Rank 0's part: poll the other node's post, read it, announce the run id."""
    import torch.distributed as dist

    from expdna.collectors.distributed import Layout
    from expdna.integrations.torch_nodes import Peers, gather_nodes

    store = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10))
    local = {"fingerprint": "blake3:" + "a" * 64, "hardware": {}, "warnings": []}
    shape = {"world_size": 4, "local_world_size": 2, "node_count": 2, "local_rank": 0}

    def go() -> None:
        rank0 = Peers(Layout(rank=0, node_rank=0, **shape))
        other = Peers(Layout(rank=2, node_rank=1, **shape), sequence=rank0.sequence)
        other.post_node({"ranks": 2, **local}, store=store)
        found = gather_nodes(rank0, deadline_s=4.0, local=local, store=store)
        assert found.record()["status"] == "ok"
        rank0.announce("run", "dna", store=store)

    return go


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = project(root)
        out = root / "out"
        base = median_ms(plain(script, out), repeat)
        print(f"plain start() + add_runtime()        {base:8.1f} ms  (median of {repeat})")
        added: dict[str, float] = {}
        with mlflow_run(root):
            added["MLflow (active run)"] = median_ms(tracker_work(script, out), repeat)
        with wandb_run(root):
            added["W&B (offline run)"] = median_ms(tracker_work(script, out), repeat)
        added["Lightning ExpdnaCallback.setup"] = added_ms(
            plain(script, out), lightning_setup(script, out), repeat
        )
        added["HF ExpdnaCallback.on_train_begin"] = added_ms(
            plain(script, out), hf_begin(script, out), repeat
        )
        added["torch.distributed exchange"] = median_ms(torch_exchange(), repeat)
        worst = True
        for name, ms in added.items():
            ok = ms < TARGET_MS
            worst &= ok
            print(
                f"{name:<36} {ms:+7.1f} ms  ({ms / base:+.0%} of the plain start; "
                f"target < {TARGET_MS:.0f} ms: {'ok' if ok else 'MISSED'})"
            )
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}")
    return 0 if worst else 1


if __name__ == "__main__":
    sys.exit(main())
