"""``expdna explain`` on runs a real training script recorded, not on synthetic manifests.

One git repository, one torch script hooked with ``expdna.track``, twelve runs with twelve
seeds. Half of them run where an installed distribution the script imports is a release
with a regression, as on two nodes whose site-packages differ: the distributions are real
(``dist-info`` metadata on the interpreter's path, read by ``importlib.metadata``), and the
regressed release makes the loss NaN, so the script fails. The seeds, the package and the
output directories vary; the code, the command up to the seed and the data do not, so the
twelve runs are one setup. ``explain --status failed`` must name the package, and nothing
else, from what the hook recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.factories import EXPDNA

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

# The regressed release divides by a count it no longer computes (0).
MODULES = {
    "2.0.0": "def scale():\n    return 1.0\n",
    "2.1.0": "def scale():\n    count = 0\n    return float('nan') if count == 0 else 1.0\n",
}


def _site(root: Path, version: str) -> Path:
    """A directory holding ``fastkernels`` ``version`` as an installed distribution."""
    site = root / f"site-{version}"
    info = site / f"fastkernels-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fastkernels\nVersion: {version}\n"
    )
    (info / "RECORD").write_text("")
    (site / "fastkernels.py").write_text(MODULES[version])
    return site


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env.pop("PYTHONPATH", None)
    env.update(EXPDNA_STORE=str(tmp_path / "store"), EXPDNA_CACHE_DIR=str(tmp_path / "cache"))
    env.update(extra)
    return env


def _train(tmp_path: Path, repo: Path, seed: int, site: Path) -> subprocess.CompletedProcess[str]:
    out = f"runs/seed{seed}"
    return subprocess.run(
        [sys.executable, "train.py", "--seed", str(seed), "--output-dir", out],
        cwd=repo,
        env=_env(tmp_path, PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_explain_names_the_regressed_package_from_hooked_runs(repo: Path, tmp_path: Path) -> None:
    (repo / "train.py").write_text(TRAIN)
    (repo / ".gitignore").write_text("runs/\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "train"], cwd=repo, check=True)
    sites = {version: _site(tmp_path, version) for version in MODULES}
    # every other seed on the regressed release: seeds and packages are not confounded
    plan = [(seed, "2.1.0" if seed % 2 else "2.0.0") for seed in range(12)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda p: _train(tmp_path, repo, p[0], sites[p[1]]), plan))
    for (_, version), proc in zip(plan, done, strict=True):
        if version == "2.1.0":
            assert proc.returncode == 1 and "loss is nan at step 0" in proc.stderr, proc.stderr
        else:
            assert proc.returncode == 0, proc.stderr

    listed = subprocess.run(
        [EXPDNA, "runs", "--json", "--limit", "0"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    runs = json.loads(listed.stdout)
    assert sorted(r["state"] for r in runs) == ["completed"] * 6 + ["failed"] * 6
    assert len({r["dna"] for r in runs}) == 12  # a DNA per seed and environment
    assert len({r["family"] for r in runs}) == 2  # seeds pooled: a family per environment
    explained = subprocess.run(
        [EXPDNA, "explain", "--status", "failed", "--same-setup", runs[0]["run_id"], "--json"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert explained.returncode == 0, explained.stderr
    report = json.loads(explained.stdout)
    assert report["runs"] == 12 and report["judged"] == 12
    significant = [f for f in report["findings"] if f["adjusted_p"] < report["alpha"]]
    # one finding: the package, and the digest of the whole listing that varies with it
    assert [f["fields"] for f in significant] == [
        ["environment.packages.fastkernels", "environment.packages_digest"]
    ]
    top = significant[0]
    assert top["extreme"] == "2.1.0"
    assert {(v["value"], v["n"], v["bad"]) for v in top["values"]} == {
        ("2.1.0", 6, 6),
        ("2.0.0", 6, 0),
    }
    assert report["top"] == (
        "runs with environment.packages.fastkernels 2.1.0 failed in 6 of 6 runs; "
        "with 2.0.0 in 0 of 6"
    )
    # the seeds differ in every run: they name runs, they are not a condition
    assert not any("seed" in path for f in report["findings"] for path in f["fields"])
