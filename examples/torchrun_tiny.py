"""A tiny DistributedDataParallel run under ``torchrun``, recorded by expdna (CPU, gloo).

Every rank calls the hook; global rank 0 alone writes the run's one manifest, with each
node's hardware fingerprint under ``runtime.nodes``, and every rank learns the run id.

    torchrun --standalone --nproc-per-node 2 examples/torchrun_tiny.py --output-dir runs/ddp

Each rank prints one JSON line: its rank, the run id and the DNA it was told.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import expdna


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, required=True, help="where this run writes")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    dist.init_process_group("gloo")
    # Every rank: rank 0 collects and writes, the others write nothing.
    with expdna.track(args, output_dir=args.output_dir) as run:
        torch.manual_seed(args.seed)
        model = DistributedDataParallel(nn.Linear(4, 1))
        optimiser = torch.optim.SGD(model.parameters(), lr=args.lr)
        gen = torch.Generator().manual_seed(args.seed + dist.get_rank())
        for _ in range(args.steps):
            x = torch.randn(16, 4, generator=gen)
            loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        run.log_final(loss=loss.item())
        dist.barrier()  # rank 0 has announced the run id by now
        print(json.dumps({"rank": dist.get_rank(), "run_id": run.run_id, "dna": run.dna}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
