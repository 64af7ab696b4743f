"""Runs a real training script records, half of them where a package it imports has a
regressed release: the fleet of ``tests/integration/test_explain_real_runs.py`` and of
explain.md's second example (``docs/tools/explain_package_fleet.py``).

One git repository, one torch script hooked with ``expdna.track``, a run per seed. Every
other run has, on the interpreter's path, ``fastkernels`` 2.1.0 instead of 2.0.0, as on two
nodes whose site-packages differ: a real installed distribution (``dist-info`` metadata,
read by ``importlib.metadata``), whose regressed release makes the loss NaN, so the script
fails. The seeds and the output directories vary; the code, the command up to them and
the data do not: one setup.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TRAIN = """\
import argparse
import expdna
import torch
import fastkernels

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--output-dir", default="out")
args = parser.parse_args()

with expdna.track(args, output_dir=args.output_dir) as run:
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    x = torch.randn(64, 8)
    y = x.sum(dim=1, keepdim=True)
    for step in range(20):
        loss = torch.nn.functional.mse_loss(model(x) * fastkernels.scale(), y)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    run.log_final(train_loss=loss.item())
"""

GOOD, REGRESSED = "2.0.0", "2.1.0"
# The regressed release divides by a count it no longer computes (0).
MODULES = {
    GOOD: "def scale():\n    return 1.0\n",
    REGRESSED: "def scale():\n    count = 0\n    return float('nan') if count == 0 else 1.0\n",
}


def site(root: Path, version: str) -> Path:
    """A directory holding ``fastkernels`` ``version`` as an installed distribution."""
    path = root / f"site-{version}"
    info = path / f"fastkernels-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fastkernels\nVersion: {version}\n"
    )
    (info / "RECORD").write_text("")
    (path / "fastkernels.py").write_text(MODULES[version])
    return path


def plan(runs: int = 12) -> list[tuple[int, str]]:
    """(seed, fastkernels version) per run: every other seed on the regressed release, so
    seeds and packages are not confounded."""
    return [(seed, REGRESSED if seed % 2 else GOOD) for seed in range(runs)]


def train_fleet(
    repo: Path, sites: Path, env: dict[str, str], runs: int = 12
) -> list[tuple[int, str, subprocess.CompletedProcess[str]]]:
    """Commit the script in ``repo`` (a git repository) and run it once per seed of
    :func:`plan`, two at a time, in ``env`` (which names the store) with the plan's
    release on ``PYTHONPATH``; per run, its seed, release and finished process."""
    (repo / "train.py").write_text(TRAIN)
    (repo / ".gitignore").write_text("runs/\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "train"], cwd=repo, check=True)
    paths = {version: site(sites, version) for version in MODULES}
    base = {k: v for k, v in env.items() if k != "PYTHONPATH"}

    def one(seed: int, version: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "train.py", "--seed", str(seed), "--output-dir", f"runs/seed{seed}"],
            cwd=repo,
            env={**base, "PYTHONPATH": str(paths[version])},
            capture_output=True,
            text=True,
            timeout=300,
        )

    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        done = list(pool.map(lambda p: one(*p), plan(runs)))
    return [(seed, version, proc) for (seed, version), proc in zip(plan(runs), done, strict=True)]
