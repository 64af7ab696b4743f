"""``expdna stability`` through the installed command, over runs collected for real.

Five manifests are collected with :func:`expdna.collect` in a real git repository: three
with ``--seed 1`` (one DNA, val_loss 0.1, 0.2, 0.3) and one each with ``--seed 2`` and
``--seed 3``. They are written to files and recorded with ``expdna record``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import expdna
from expdna.manifest.io import write_manifest
from expdna.manifest.model import Manifest
from expdna.store import Store
from expdna.store.stability import stability
from tests.factories import (
    EXPDNA,
    SEED_PATHS,
    collide_prefix,
    dna,
    git,
    invoke,
    record_docs,
    seed_doc,
)

SEEDS = ["--ignore", "config.resolved_args.seed", "--ignore", "training.seeds.seed"]


def run(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    env["EXPDNA_STORE"] = str(store)
    return subprocess.run([EXPDNA, *args], capture_output=True, text=True, timeout=120, env=env)


def _collect(repo: Path, seed: int, val_loss: float) -> Manifest:
    # A generous deadline: on a loaded machine a collector that misses the default 4 s leaves
    # its section unknown, and then (rightly) another DNA.
    argv = ["python", "train.py", "--lr", "3e-4", "--seed", str(seed)]
    manifest = expdna.collect(argv, cwd=repo, deadline_s=60)
    doc = manifest.to_dict()
    doc["metrics"] = {"val_loss": val_loss, "epochs": 3}
    return Manifest.model_validate(doc)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("stability")
    repo = root / "proj"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text("print('train')\n")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "first")
    plan = [(1, 0.1), (1, 0.2), (1, 0.3), (2, 0.4), (3, 0.5)]
    manifests = [_collect(repo, seed, loss) for seed, loss in plan]
    files = []
    for manifest in manifests:
        files.append(write_manifest(manifest, root / f"manifest_{manifest.run_id}.json"))
    store = root / "store"
    done = run(store, "record", *map(str, files))
    assert done.returncode == 0, done.stderr
    return {"store": store, "manifests": manifests}


def _dna(manifest: Manifest) -> str:
    assert manifest.dna is not None
    return manifest.dna.value


def test_what_the_collected_manifests_hold(runs: dict[str, Any]) -> None:
    """The seed is in the arguments and, copied by the training collector, in training;
    DNA version 3 counts it as the command's word (config), not as training."""
    first, _, _, second, _ = runs["manifests"]
    assert first.config.resolved_args["seed"] == 1 and first.training.seeds == {"seed": 1}
    assert {_dna(m) for m in runs["manifests"][:3]} == {_dna(first)}
    differ = [
        name for name, digest in first.dna.sections.items() if second.dna.sections[name] != digest
    ]
    assert differ == ["config"]


def test_three_repeats_json(runs: dict[str, Any]) -> None:
    first = runs["manifests"][0]
    done = run(runs["store"], "stability", _dna(first)[:12], "--metric", "val_loss", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["dna"] == _dna(first)
    assert sorted(report["runs"]) == sorted(m.run_id for m in runs["manifests"][:3])
    assert report["ignored"] == []
    assert list(report["metrics"]) == ["val_loss"]
    loss = report["metrics"]["val_loss"]
    assert loss["n"] == 3 and loss["mean"] == pytest.approx(0.2)
    assert loss["std"] == pytest.approx(0.1) and loss["cv"] == pytest.approx(0.5)
    assert (loss["min"], loss["max"]) == (0.1, 0.3)


def test_text_table_with_every_metric(runs: dict[str, Any]) -> None:
    first = runs["manifests"][0]
    done = run(runs["store"], "stability", _dna(first)[:8])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"dna      {_dna(first)[:12]}"
    assert lines[1] == "runs     3"
    header, *rows = lines[lines.index("") + 1 :]
    assert header.split() == ["METRIC", "RUNS", "MEAN", "STD", "MIN", "MAX", "CV"]
    assert [row.split() for row in rows] == [
        ["epochs", "3", "3", "0", "3", "3", "0"],
        ["val_loss", "3", "0.2", "0.1", "0.1", "0.3", "0.5"],
    ]


def test_ignoring_the_seed_pools_the_seeds(runs: dict[str, Any]) -> None:
    manifests = runs["manifests"]
    target = manifests[3]  # seed 2: alone under its own DNA
    alone = run(runs["store"], "stability", _dna(target)[:12], "--json")
    assert json.loads(alone.stdout)["runs"] == [target.run_id]
    # Only the training field: the argument still tells the seeds apart.
    half = run(runs["store"], "stability", _dna(target)[:12], SEEDS[2], SEEDS[3], "--json")
    assert half.returncode == 0, half.stderr
    assert json.loads(half.stdout)["runs"] == [target.run_id]
    half_text = invoke(runs["store"], "stability", _dna(target)[:12], SEEDS[2], SEEDS[3])
    assert f"pooled   1 DNA: {_dna(target)[:12]}\n" in half_text.stdout
    # Only the argument: the training field derived from it goes with it, so it pools.
    arg = run(runs["store"], "stability", _dna(target)[:12], SEEDS[0], SEEDS[1], "--json")
    assert sorted(json.loads(arg.stdout)["runs"]) == sorted(m.run_id for m in manifests)
    pooled = run(
        runs["store"], "stability", _dna(target)[:12], *SEEDS, "--metric", "val_loss", "--json"
    )
    assert pooled.returncode == 0, pooled.stderr
    report = json.loads(pooled.stdout)
    assert sorted(report["runs"]) == sorted(m.run_id for m in manifests)
    assert report["ignored"] == ["config.resolved_args.seed", "training.seeds.seed"]
    assert report["dnas"][0] == _dna(target) and len(report["dnas"]) == 3
    loss = report["metrics"]["val_loss"]
    assert loss["n"] == 5 and loss["mean"] == pytest.approx(0.3)
    assert loss["std"] == pytest.approx(0.158113883)
    text = run(runs["store"], "stability", _dna(target)[:12], *SEEDS, "--metric", "val_loss")
    assert text.returncode == 0, text.stderr
    assert "ignored  config.resolved_args.seed, training.seeds.seed" in text.stdout
    assert f"pooled   3 DNAs: {_dna(target)[:12]}, " in text.stdout


def test_missing_metrics(runs: dict[str, Any]) -> None:
    prefix = _dna(runs["manifests"][0])[:12]
    some = run(runs["store"], "stability", prefix, "--metric", "val_loss", "--metric", "bleu")
    assert some.returncode == 0
    assert some.stderr == "expdna: no run of the group reported bleu\n"
    none = run(runs["store"], "stability", prefix, "--metric", "bleu")
    assert none.returncode == 1 and none.stdout == ""
    assert none.stderr == (f"expdna: error: none of the 3 runs of DNA {prefix} reported bleu\n")
    as_json = invoke(runs["store"], "stability", prefix, "--metric", "bleu", "--json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["metrics"] == {}


def test_a_typo_in_an_ignore_is_warned(runs: dict[str, Any]) -> None:
    prefix = _dna(runs["manifests"][0])[:12]
    done = invoke(runs["store"], "stability", prefix, "--ignore", "config.resolved_args.sede")
    assert done.exit_code == 0
    assert (
        "expdna: warning: --ignore config.resolved_args.sede removes nothing from the DNA "
        f"of {prefix}"
    ) in done.stderr


def test_usage_errors_exit_2_and_unknown_exits_1(runs: dict[str, Any]) -> None:
    store = runs["store"]
    prefix = _dna(runs["manifests"][0])[:12]
    bad_ignore = invoke(store, "stability", prefix, "--ignore", "metrics.val_loss")
    assert bad_ignore.exit_code == 2
    assert bad_ignore.stderr.startswith("expdna: error: --ignore 'metrics.val_loss': not a dotted")
    short = invoke(store, "stability", "abc")
    assert short.exit_code == 2
    assert "a DNA prefix needs at least 6 hex characters" in short.stderr
    assert invoke(store, "stability", "no such/run").exit_code == 2
    assert invoke(store, "stability", "20260101_000000_nope_abcd").exit_code == 1
    unknown = "0" * 12 if not prefix.startswith("0" * 12) else "f" * 12
    missing = invoke(store, "stability", unknown)
    assert missing.exit_code == 1
    assert missing.stderr == f"expdna: error: no recorded run has a DNA starting with {unknown}\n"


def test_an_ambiguous_prefix_exits_2_listing_candidates(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    copy = tmp_path / "store"
    shutil.copytree(runs["store"], copy)
    first, second = runs["manifests"][0], runs["manifests"][4]
    with Store.open(copy) as store:
        crafted = collide_prefix(store, second.run_id, _dna(first))
    done = run(copy, "stability", _dna(first)[:6])
    assert done.returncode == 2
    assert done.stdout == ""
    listed = done.stderr.strip().rsplit("candidates: ", 1)[1].split(", ")
    assert sorted(listed) == sorted([_dna(first)[:12], crafted[:12]])


def test_help_names_the_seed_paths() -> None:
    done = invoke(Path("unused"), "stability", "--help")
    assert done.exit_code == 0
    assert "training.seeds.seed" in done.stdout


@pytest.mark.postgres
def test_seed_pooling_on_a_postgres_index(pg_store: Store) -> None:
    """The same grouping queries on PostgreSQL (GROUP BY with min(), IN lists)."""
    s1, s2, s3, other = record_docs(
        pg_store,
        seed_doc(1, seed=1, val_loss=0.1),
        seed_doc(2, seed=2, val_loss=0.2),
        seed_doc(3, seed=3, val_loss=0.3),
        seed_doc(4, seed=4, driver="550.54.15", val_loss=9.0),
    )
    report = stability(pg_store, dna(s2)[:10], ignore=SEED_PATHS, metrics=["val_loss"])
    assert report.runs == [s1.run_id, s2.run_id, s3.run_id]
    assert report.metrics["val_loss"].std == pytest.approx(0.1)
    assert stability(pg_store, dna(other)[:10]).runs == [other.run_id]
