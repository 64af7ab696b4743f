"""``expdna explain`` on runs a real training script recorded, not on synthetic manifests
(``tests/package_fleet.py``): twelve hooked torch runs of one setup, half of them where an
imported package is a regressed release and the script fails. ``explain --status failed``
must name the package, and nothing else, from what the hook recorded."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.factories import EXPDNA
from tests.package_fleet import GOOD, REGRESSED, train_fleet


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env.update(EXPDNA_STORE=str(tmp_path / "store"), EXPDNA_CACHE_DIR=str(tmp_path / "cache"))
    return env


def _expdna(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXPDNA, *args], env=_env(tmp_path), capture_output=True, text=True, timeout=120
    )


def test_explain_names_the_regressed_package_from_hooked_runs(repo: Path, tmp_path: Path) -> None:
    for _, version, proc in train_fleet(repo, tmp_path, _env(tmp_path)):
        if version == REGRESSED:
            assert proc.returncode == 1 and "loss is nan at step 0" in proc.stderr, proc.stderr
        else:
            assert proc.returncode == 0, proc.stderr

    runs = json.loads(_expdna(tmp_path, "runs", "--json", "--limit", "0").stdout)
    assert sorted(r["state"] for r in runs) == ["completed"] * 6 + ["failed"] * 6
    assert len({r["dna"] for r in runs}) == 12  # a DNA per seed and environment
    assert len({r["family"] for r in runs}) == 2  # seeds pooled: a family per environment
    explained = _expdna(
        tmp_path, "explain", "--status", "failed", "--same-setup", runs[0]["run_id"], "--json"
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
    assert top["extreme"] == REGRESSED
    assert {(v["value"], v["n"], v["bad"]) for v in top["values"]} == {
        (REGRESSED, 6, 6),
        (GOOD, 6, 0),
    }
    assert report["top"] == (
        f"runs with environment.packages.fastkernels {REGRESSED} failed in 6 of 6 runs; "
        f"with {GOOD} in 0 of 6"
    )
    # the seeds differ in every run: they name runs, they are not a condition
    assert not any("seed" in path for f in report["findings"] for path in f["fields"])
    assert any("differ in every run" in line for line in report["limits"])
