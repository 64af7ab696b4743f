"""The same job as ddp_batch.py under Lightning's ``ddp_spawn`` (2 CPU processes, gloo):
no launcher, so no launcher variables; the callback records it."""

from __future__ import annotations

import argparse
from typing import Any

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from expdna.integrations.lightning import ExpdnaCallback


class Tiny(pl.LightningModule):
    def __init__(self, batch_size: int) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Linear(4, 1)

    def training_step(self, batch: Any, _: int) -> Any:
        x, y = batch
        return nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> Any:
        data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
        return DataLoader(data, batch_size=self.hparams.batch_size)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--accumulate", type=int, default=1)
    args = parser.parse_args()
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp_spawn",
        max_epochs=1,
        accumulate_grad_batches=args.accumulate,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[ExpdnaCallback(output_dir=args.output_dir, args=args)],
    )
    trainer.fit(Tiny(args.batch_size))


if __name__ == "__main__":
    main()
