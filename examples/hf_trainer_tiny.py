"""A tiny Hugging Face Trainer run recorded by ``ExpdnaCallback`` (CPU, no downloads).

A one-layer BERT built from ``BertConfig`` learns a toy task on an in-memory dataset.

    HF_HUB_OFFLINE=1 python examples/hf_trainer_tiny.py --output-dir runs/hf --store runs/store
    expdna --store runs/store which runs/hf/checkpoint-4/model.safetensors

The manifest is written into ``--output-dir`` (the Trainer's ``output_dir``); with a
store, each saved checkpoint's weights are pinned to the run. The last line printed is a
JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

from expdna.integrations.transformers import ExpdnaCallback


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, required=True, help="the Trainer's output_dir")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", default=os.environ.get("EXPDNA_STORE"))
    return parser.parse_args()


def toy_dataset(rows: int, vocab: int) -> list[dict[str, torch.Tensor]]:
    """Label 1 when the first token is in the upper half of the vocabulary."""
    gen = torch.Generator().manual_seed(1234)
    ids = torch.randint(1, vocab, (rows, 8), generator=gen)
    return [
        {"input_ids": row, "attention_mask": torch.ones(8, dtype=torch.long),
         "labels": torch.tensor(int(row[0] >= vocab // 2))}
        for row in ids
    ]  # fmt: skip


def main() -> None:
    args = parse_args()
    config = BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
    )
    training = TrainingArguments(
        output_dir=str(args.output_dir),
        max_steps=args.steps,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        learning_rate=args.lr,
        seed=args.seed,
        data_seed=args.seed + 1,
        logging_steps=1,
        save_steps=args.steps,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    callback = ExpdnaCallback(store=args.store)
    trainer = Trainer(
        model=BertForSequenceClassification(config),
        args=training,
        train_dataset=toy_dataset(64, config.vocab_size),
        callbacks=[callback],
    )
    trainer.train()
    run = callback.run
    assert run is not None and run.manifest is not None
    print(json.dumps({"run_id": run.run_id, "dna": run.dna, "manifest": str(run.path)}))


if __name__ == "__main__":
    main()
