"""The family digest and incomplete runs in the store, through the installed command:
``twins --across-seeds``, ``stability --across-seeds``, the ``unknown`` marker, and
``db upgrade`` filling in families of runs recorded before them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from tests.factories import EXPDNA


def expdna(cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env["EXPDNA_CACHE_DIR"] = str(cwd.parent / "cache")
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [EXPDNA, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


def generate(repo: Path, out: Path, *argv: str, metric: float | None = None) -> dict[str, Any]:
    done = expdna(repo, "generate", "--output", str(out), "--json", "--", "python", *argv)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    if metric is not None:  # metrics are outside the DNA: the run's own report
        doc["metrics"] = {"val_loss": metric}
        out.write_text(json.dumps(doc))
    return doc


def test_twins_and_stability_across_seeds(repo: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    runs = {
        name: generate(repo, tmp_path / f"{name}.json", "train.py", *argv, metric=loss)
        for name, argv, loss in (
            ("s1", ("--lr", "0.1", "--seed", "1"), 0.50),
            ("s2", ("--lr", "0.1", "--seed", "2"), 0.54),
            ("s3", ("--lr", "0.1", "--data-seed", "7", "--seed", "3"), 0.9),
            ("other", ("--lr", "0.2", "--seed", "1"), 0.70),
        )
    }
    recorded = expdna(
        repo, "--store", store, "record", *(str(tmp_path / f"{n}.json") for n in runs)
    )
    assert recorded.returncode == 0, recorded.stderr
    s1 = runs["s1"]["run_id"]

    plain = expdna(repo, "--store", store, "twins", "--json", s1)
    assert [r["run_id"] for r in json.loads(plain.stdout)] == [s1]
    across = expdna(repo, "--store", store, "twins", "--across-seeds", "--json", s1)
    assert across.returncode == 0, across.stderr
    found = json.loads(across.stdout)
    # s3 also differs in its data seed, which is a seed too; "other" is another setup.
    assert sorted(r["run_id"] for r in found) == sorted(
        runs[n]["run_id"] for n in ("s1", "s2", "s3")
    )
    assert len({r["family"] for r in found}) == 1 and len({r["dna"] for r in found}) == 3

    spread = expdna(repo, "--store", store, "stability", "--across-seeds", "--json", s1)
    assert spread.returncode == 0, spread.stderr
    report = json.loads(spread.stdout)
    assert report["family"] == found[0]["family"]
    assert len(report["runs"]) == 3 and len(report["dnas"]) == 3
    assert report["metrics"]["val_loss"]["n"] == 3
    assert (
        report["metrics"]["val_loss"]["max"] == 0.9 and report["metrics"]["val_loss"]["min"] == 0.5
    )
    text = expdna(repo, "--store", store, "stability", "--across-seeds", s1)
    assert f"family   {report['family'][:12]} (across seeds)" in text.stdout


def test_an_incomplete_run_says_so_in_twins_and_stability(repo: Path, tmp_path: Path) -> None:
    hang = tmp_path / "hang-bin"
    hang.mkdir()
    (hang / "git").write_text("#!/bin/sh\nexec sleep 20\n")
    (hang / "git").chmod(0o755)
    store = str(tmp_path / "store")
    out = tmp_path / "hung.json"
    done = expdna(
        repo, "--store", store, "generate", "--record", "--deadline", "1", "--output", str(out),
        "--", "python", "train.py", path=f"{hang}{os.pathsep}{os.environ['PATH']}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = json.loads(out.read_text())["run_id"]
    twins = expdna(repo, "--store", store, "twins", run_id)
    assert twins.returncode == 0, twins.stderr
    [line] = [ln for ln in twins.stdout.splitlines() if ln.startswith(run_id)]
    assert line.endswith("unknown: code")
    as_json = json.loads(expdna(repo, "--store", store, "twins", "--json", run_id).stdout)
    assert as_json[0]["unknown"] == ["code"]


def test_db_upgrade_fills_in_families_of_older_runs(repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    doc = generate(repo, tmp_path / "a.json", "train.py", "--seed", "4")
    assert expdna(repo, "--store", str(store), "record", str(tmp_path / "a.json")).returncode == 0
    with sqlite3.connect(store / "index.sqlite") as conn:  # as a run recorded before families
        family = conn.execute("SELECT family FROM runs").fetchone()[0]
        conn.execute("UPDATE runs SET family = NULL")
    assert family is not None and family != doc["dna"]["value"]
    # --across-seeds still answers for such a run, from its manifest
    across = expdna(repo, "--store", str(store), "twins", "--across-seeds", "--json", doc["run_id"])
    assert across.returncode == 1  # its own row has no family yet: nothing matches
    upgraded = expdna(repo, "--store", str(store), "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert "family and setup digests filled in for 1 runs recorded before them" in upgraded.stdout
    with sqlite3.connect(store / "index.sqlite") as conn:
        assert conn.execute("SELECT family FROM runs").fetchone()[0] == family
    again = expdna(repo, "--store", str(store), "twins", "--across-seeds", "--json", doc["run_id"])
    assert [r["run_id"] for r in json.loads(again.stdout)] == [doc["run_id"]]
