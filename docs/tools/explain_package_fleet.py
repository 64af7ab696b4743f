"""explain.md's second example: twelve runs of a hooked torch script, half of them with a
regressed release of a package it imports (tests/package_fleet.py), recorded in the store
$EXPDNA_STORE names.

python explain_package_fleet.py DIR   (DIR: an empty directory; the repository is DIR/train)
"""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.package_fleet import train_fleet

root = Path(sys.argv[1])
repo = root / "train"
repo.mkdir(parents=True)
subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
for seed, version, proc in train_fleet(repo, root, dict(os.environ)):
    if proc.returncode not in (0, 1):
        sys.exit(f"seed {seed} with fastkernels {version}: exit {proc.returncode}\n{proc.stderr}")
