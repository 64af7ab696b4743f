"""The JavaScript implementation (spec/js, written from the guide) agrees with expdna.

Fresh manifests are made here, not taken from the vectors: two collected by expdna from real
git repositories with uncommitted work, a dataset and option names in several scripts, and
sparse hand-written documents that lean on the rules most easily guessed wrong. For each,
``node spec/js/dna.mjs`` must print the DNA (and family digest) expdna computes.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import expdna
from expdna.manifest.dna import compute_dna
from expdna.manifest.family import family_of
from expdna.manifest.io import manifest_from_dict, write_manifest
from tests.factories import git

SPEC = Path(__file__).parents[2] / "spec" / "js"
SCRIPT = SPEC / "dna.mjs"


@pytest.fixture(scope="module")
def node() -> str:
    """The node command, with spec/js's pinned packages installed (``npm ci`` once)."""
    found = shutil.which("node")
    assert found is not None, "node (20 or later) is needed: spec/js is part of the test suite"
    if not (SPEC / "node_modules" / "@noble" / "hashes").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed to install spec/js's packages (npm ci)"
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=SPEC,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"npm ci in {SPEC} failed:\n{done.stderr}"
    return found


def js(node: str, path: Path, *flags: str) -> str:
    done = subprocess.run(
        [node, str(SCRIPT), str(path), *flags], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("spec")
    main = _repo(root / "trainer", {"train.py": "print('train')\n", "conf.yaml": "lr: 1\n"})
    lib = _repo(root / "lib", {"lib.py": "X = 1\n"})
    (main / "train.py").write_text("print('train, edited')\n", encoding="utf-8")  # dirty
    (lib / "new_module.py").write_text("Y = 2\n", encoding="utf-8")  # untracked
    data = root / "data"
    data.mkdir()
    (data / "a.txt").write_text("alpha\n", encoding="utf-8")
    (data / "b.bin").write_bytes(bytes(range(256)))
    argv = [
        "python",
        "train.py",
        "--学习率",
        "3e-4",
        "--Ausgabe-Größe",
        "7",
        "--chec\u212apoint-dir",
        str(root / "out"),
        "--Output-Dir",
        str(root / "out"),
        "--seed",
        "3",
    ]
    paths = []
    for i, repos in enumerate(([main, lib], [main])):
        manifest = expdna.collect(
            argv, cwd=main, repos=repos, data=[data], deadline_s=60, dna_ignore=["hardware.*"]
        )
        paths.append(write_manifest(manifest, root / f"collected_{i}.json"))
    return paths


def test_collected_manifests_agree(node: str, collected: list[Path]) -> None:
    for path in collected:
        manifest = expdna.load_manifest(path)
        assert manifest.dna is not None and len(manifest.code) >= 1
        assert manifest.data.datasets and any(
            not k.isascii() for k in manifest.config.resolved_args
        )
        assert js(node, path) == manifest.dna.value
        lines = js(node, path, "--sections", "--family").splitlines()
        assert lines[:7] == [f"{name:<12} {d}" for name, d in manifest.dna.sections.items()]
        assert lines[8] == f"{'family':<12} {family_of(manifest)}"


NAMES = [
    "seed",
    "Data-Seed",
    "__seed",
    "output_dir",
    "OUTPUT-DIR",
    "chec\u212apoint_dir",
    "ＳＥＥＤ",
    "学习率",
    "Größe",
    "log_path",
    "wandb_mode",
    "x.y",
    "\U0001f600",
    "\uff5e",
]
VALUES: list[Any] = [
    "/out/run",
    "/out/run/tb",
    ".",
    "abc***",
    ["hf_***"],
    2**60,
    1e-7,
    3,
    2.5,
    None,
    True,
    {"nested": None, "k": 1},
    "6.1",
    "\U0001f600",
]


def _sparse(rng: random.Random) -> dict[str, Any]:
    """A small random document with only some sections, some legacy names, some globs."""
    doc: dict[str, Any] = {
        "schema_version": "1.1",
        "run_id": f"r{rng.randrange(10**6)}",
        "generated_at": "2026-12-01T00:00:00Z",
    }
    args = {rng.choice(NAMES): rng.choice(VALUES) for _ in range(rng.randrange(1, 8))}
    if rng.random() < 0.3:
        doc["args"] = args  # a legacy name for config.resolved_args
    else:
        doc["config"] = {"resolved_args": args}
    if "config" in doc and rng.random() < 0.5:
        doc["config"]["dna_ignore"] = rng.sample(
            [
                "config.resolved_args.[!o]*",
                "training.seeds",
                "hardware",
                "environment.k?rnel",
                "runtime.nodes",
                "config.config_files",
                "code.*",
            ],
            2,
        )
        doc["config"]["config_files"] = {f"c{i}.yaml": rng.choice(NAMES) for i in range(2)}
    if rng.random() < 0.5:
        doc["code"] = {
            rng.choice(NAMES): {
                "commit": "a" * 40,
                "dirty": rng.random() < 0.5,
                "submodules": [{"path": rng.choice(NAMES)} for _ in range(rng.randrange(3))],
            }
            for _ in range(rng.randrange(1, 4))
        }
    if rng.random() < 0.5:
        doc["training"] = {"seeds": {"seed": rng.randrange(9)}, "global_batch_size": 1e17}
    if rng.random() < 0.5:
        doc["environment"] = {"kernel": rng.choice(["6.1.0-18", "６.１", "v6"]), "os": "x"}
    if rng.random() < 0.5:
        doc["runtime"] = {"nodes": [{"role": "head"}, {"resources": {"GPU": 2**53 + 1}}]}
    if rng.random() < 0.5:
        doc["hardware"] = {"gpus": [{"name": "g", "uuid": "u", "memory_gb": 80}]}
    if rng.random() < 0.3:
        doc["unknown"] = {"data": "failed"}
    return doc


def test_sparse_documents_agree(node: str, tmp_path: Path) -> None:
    rng = random.Random(18)
    checked = 0
    for i in range(12):
        doc = _sparse(rng)
        manifest = manifest_from_dict(doc)
        path = tmp_path / f"sparse_{i}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        expected = compute_dna(manifest)
        assert js(node, path) == expected.value, json.dumps(doc, ensure_ascii=False)
        assert js(node, path, "--family") == family_of(manifest)
        checked += 1
    assert checked == 12
