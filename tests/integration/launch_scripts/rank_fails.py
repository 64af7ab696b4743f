"""Two ranks of a torch.distributed job (gloo) under torchrun, recorded by the hook; one
rank fails inside the tracked block. ``--first``: which ends first, the failing rank or
rank 0 (finishing ``completed``); the other waits for it through the process group's
store, so the order is certain."""

from __future__ import annotations

import argparse

import torch.distributed as dist

import expdna


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--failing-rank", type=int, default=1)
    parser.add_argument("--first", choices=["failure", "completion"], required=True)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    store = dist.distributed_c10d._get_default_store()
    fails = rank == args.failing_rank
    try:
        with expdna.track(args, output_dir=args.output_dir) as run:
            dist.barrier()
            print(f"rank {rank} run {run.run_id}", flush=True)
            if fails and args.first == "completion":
                store.wait(["test/completed"])
            if not fails and args.first == "failure":
                store.wait(["test/told"])
            if fails:
                raise RuntimeError(f"CUDA out of memory on rank {rank}")
    finally:
        if fails and args.first == "failure":
            store.set("test/told", "1")  # the with block told the store as it left
            store.wait(["test/completed"])  # alive until rank 0 has finished
        if not fails:
            store.set("test/completed", "1")


if __name__ == "__main__":
    main()
