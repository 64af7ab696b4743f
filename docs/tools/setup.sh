#!/bin/sh
# Builds the demo repository (and data) used for the docs' real outputs, under $DEMO.
set -e
: "${DEMO:?set DEMO to the demo directory}"
rm -rf "$DEMO" && mkdir -p "$DEMO/vit-cifar" && cd "$DEMO/vit-cifar"
export GIT_AUTHOR_DATE="2026-11-28T10:00:00Z" GIT_COMMITTER_DATE="2026-11-28T10:00:00Z" GIT_AUTHOR_NAME="Li Wei" GIT_AUTHOR_EMAIL=liwei@example.com GIT_COMMITTER_NAME="Li Wei" GIT_COMMITTER_EMAIL=liwei@example.com
git init -q -b main
cat > train.py <<'PY'
"""A stand-in training script: reads its flags, "trains", prints a final loss."""
import argparse
import random

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--output-dir", default="runs/default")
args = parser.parse_args()

random.seed(args.seed)
loss = 2.3
for epoch in range(args.epochs):
    loss *= 1 - min(0.9, args.lr * 1000) * random.uniform(0.2, 0.4)
    print(f"epoch {epoch}: loss {loss:.4f}")
print(f"final loss {loss:.4f} (lr={args.lr}, batch={args.batch_size}, out={args.output_dir})")
PY
printf 'runs/\nmanifests/\n' > .gitignore
git add train.py .gitignore
git commit -q -m "ViT on CIFAR-10: first training script"
git remote add origin https://liwei:ghp_8f3KzQ2mW7xR1vT9yB4nC6pL0sD5hJ2aE7uG@github.com/example/vit-cifar.git
# uncommitted work: a changed default and a new, untracked file
sed -i 's/default=64/default=128/' train.py
printf 'mean = (0.4914, 0.4822, 0.4465)\nstd = (0.2470, 0.2435, 0.2616)\n' > augment.py
mkdir -p manifests
# a small dataset outside the checkout, for --data
mkdir -p "$DEMO/data/cifar10-mini"
printf 'train images\n' > "$DEMO/data/cifar10-mini/train.bin"
printf 'test images\n' > "$DEMO/data/cifar10-mini/test.bin"
