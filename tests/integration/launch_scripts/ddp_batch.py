"""Two ranks of plain DDP on CPU (gloo), recorded by the hook: run under torchrun or
``accelerate launch``. Prints one JSON line per rank."""

from __future__ import annotations

import argparse
import json

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import expdna


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--batch_size", type=int, default=8)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    with expdna.track(args, output_dir=args.output_dir) as run:
        model = DistributedDataParallel(nn.Linear(4, 1))
        loss = model(torch.randn(args.batch_size, 4)).pow(2).mean()
        loss.backward()
        dist.barrier()
        print(json.dumps({"rank": dist.get_rank(), "run_id": run.run_id}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
