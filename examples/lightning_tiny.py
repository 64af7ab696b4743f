"""A tiny PyTorch Lightning run recorded by ``ExpdnaCallback`` (CPU, a few seconds).

    python examples/lightning_tiny.py --output-dir runs/pl --store runs/store
    expdna --store runs/store which runs/pl/checkpoints/*.ckpt

The manifest lands in the trainer's log dir (here ``--output-dir``); with a store, the
best checkpoint is pinned to the run. ``--package pytorch_lightning`` runs the same with
the older package name. The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, required=True, help="the trainer's root dir")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", default=os.environ.get("EXPDNA_STORE"))
    parser.add_argument(
        "--package", choices=["lightning", "pytorch_lightning"], default="lightning"
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    name = "lightning.pytorch" if args.package == "lightning" else args.package
    pl = importlib.import_module(name)
    from expdna.integrations.lightning import ExpdnaCallback

    class Regression(pl.LightningModule):  # type: ignore[name-defined,misc]
        def __init__(self, lr: float) -> None:
            super().__init__()
            self.save_hyperparameters()  # recorded as training.model.hparams
            self.lr = lr
            self.net = nn.Linear(4, 1)

        def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
            x, y = batch
            loss = nn.functional.mse_loss(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch: list[torch.Tensor], _: int) -> None:
            x, y = batch
            self.log("val_loss", nn.functional.mse_loss(self.net(x), y))

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=self.lr)

    pl.seed_everything(args.seed, verbose=False)
    x = torch.randn(64, 4, generator=torch.Generator().manual_seed(1234))
    data = TensorDataset(x, x.sum(dim=1, keepdim=True))
    callback = ExpdnaCallback(args=args, store=args.store)
    best = pl.callbacks.ModelCheckpoint(dirpath=args.output_dir / "checkpoints", monitor="val_loss")
    trainer = pl.Trainer(
        max_epochs=args.epochs,
        default_root_dir=args.output_dir,
        logger=False,
        callbacks=[callback, best],
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    trainer.fit(
        Regression(args.lr), DataLoader(data, batch_size=16), DataLoader(data, batch_size=64)
    )
    run = callback.run
    assert run is not None and run.manifest is not None
    print(json.dumps({"run_id": run.run_id, "dna": run.dna, "manifest": str(run.path)}))


if __name__ == "__main__":
    main()
