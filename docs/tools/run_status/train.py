# train.py
import argparse
import os

import expdna

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()

with expdna.track(args, output_dir="out") as run:
    for step in range(args.steps):
        loss = 1.0 / (step + 1) / args.lr
    if os.environ.get("CRASH"):
        raise RuntimeError(f"loss is NaN at step {args.steps}")
    run.log_final(val_loss=round(loss, 4))
