"""A tiny, real PyTorch training run recorded by expdna (CPU, a few seconds).

It generates a small regression dataset, writes it as Parquet, trains an MLP on it and
saves a checkpoint named by the run's DNA. Run it twice with the same arguments: two runs,
one DNA. Change ``--lr``: another DNA, differing only in its ``config`` section. Inside a
checkout, list ``runs/`` in ``.expdnaignore`` (or ``.gitignore``): run a's folder is
otherwise new files in the checkout when run b is recorded.

    python examples/train_tiny.py --output-dir runs/a
    python examples/train_tiny.py --output-dir runs/b            # same DNA as runs/a
    python examples/train_tiny.py --output-dir runs/c --lr 0.01  # another DNA
    expdna diff runs/a/manifest_*.json runs/c/manifest_*.json

``--store DIR`` (default ``$EXPDNA_STORE``) also records each run and pins its checkpoint
in an expdna store. The last line printed is a JSON summary of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import nn

import expdna

FEATURES = 8
# The dataset is the experiment's input, not a knob of this run: it is always the same.
DATA_SEED = 1234


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, required=True, help="where this run writes")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0, help="seeds initialisation and shuffling")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=32, help="hidden layer width")
    parser.add_argument("--rows", type=int, default=2048, help="rows in the generated dataset")
    parser.add_argument(
        "--store",
        default=os.environ.get("EXPDNA_STORE"),
        help="expdna store directory (default: $EXPDNA_STORE; none: no store)",
    )
    return parser.parse_args(argv)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # the same reduction order on every run


def write_dataset(path: Path, rows: int) -> Path:
    """Inputs from a fixed generator, targets from a fixed random "teacher" plus noise."""
    gen = torch.Generator().manual_seed(DATA_SEED)
    x = torch.randn(rows, FEATURES, generator=gen)
    teacher = torch.randn(FEATURES, 1, generator=gen)
    y = torch.sin(x @ teacher) + 0.1 * torch.randn(rows, 1, generator=gen)
    columns = {f"x{i}": pa.array(x[:, i].tolist(), pa.float32()) for i in range(FEATURES)}
    columns["y"] = pa.array(y[:, 0].tolist(), pa.float32())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def read_dataset(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    table = pq.read_table(path)
    x = torch.tensor([table.column(f"x{i}").to_pylist() for i in range(FEATURES)]).T
    y = torch.tensor(table.column("y").to_pylist()).unsqueeze(1)
    return x.float(), y.float()


def train(
    args: argparse.Namespace, x: torch.Tensor, y: torch.Tensor
) -> tuple[nn.Module, dict[str, float]]:
    split = int(0.8 * len(x))
    x_train, y_train, x_val, y_val = x[:split], y[:split], x[split:], y[split:]
    model = nn.Sequential(nn.Linear(FEATURES, args.hidden), nn.Tanh(), nn.Linear(args.hidden, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.MSELoss()
    shuffle = torch.Generator().manual_seed(args.seed)
    train_loss = float("nan")
    for _ in range(args.epochs):
        model.train()
        order = torch.randperm(split, generator=shuffle)
        total = 0.0
        for start in range(0, split, args.batch_size):
            batch = order[start : start + args.batch_size]
            optimiser.zero_grad()
            loss = loss_fn(model(x_train[batch]), y_train[batch])
            loss.backward()
            optimiser.step()
            total += loss.item() * len(batch)
        train_loss = total / split
    model.eval()
    with torch.no_grad():
        val_loss = loss_fn(model(x_val), y_val).item()
    return model, {"val_loss": val_loss, "train_loss": train_loss}


def main(argv: list[str] | None = None) -> dict[str, object]:
    args = parse_args(argv)
    seed_everything(args.seed)
    data = write_dataset(args.output_dir / "data" / "tiny.parquet", args.rows)
    # Where the store lives says nothing about the experiment: keep it out of the DNA.
    with expdna.track(
        args,
        output_dir=args.output_dir,
        data=[data],
        store=args.store,
        dna_ignore=["config.resolved_args.store"],
    ) as run:
        x, y = read_dataset(data)
        model, metrics = train(args, x, y)
        checkpoint = args.output_dir / expdna.checkpoint_name("tiny_mlp", run.dna, "final", ".pt")
        torch.save(model.state_dict(), checkpoint)
        if args.store:
            run.pin(checkpoint)
        run.log_final(**metrics)
    summary: dict[str, object] = {
        "run_id": run.run_id,
        "dna": run.dna,
        "manifest": str(run.path),
        "checkpoint": str(checkpoint),
        **metrics,
    }
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
