"""``diff`` that explains: golden outputs over manifests the real collectors made.

Each pair of runs is collected from a real git repository, config file and dataset in a temp
directory; the text and JSON outputs are compared, normalised (temp paths, digests, commits,
run ids, versions of this machine), with ``tests/data/golden/diff_explained_*``. Regenerate
on purpose with ``EXPDNA_UPDATE_GOLDEN=1 pytest tests/integration/test_diff_explained.py``
and review the diff of the golden files.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

import expdna
from expdna.cli.diff import render
from expdna.compare.diff import diff_manifests
from expdna.manifest.dna import compute_dna
from expdna.manifest.model import Manifest
from tests.factories import git

GOLDEN = Path(__file__).parents[1] / "data" / "golden"
#: The collectors these cases need (the others only make collection slower).
COLLECTORS = ["command", "git", "config", "config_files", "environment", "data"]


def _collect(repo: Path, *argv: str, data: Path) -> Manifest:
    return expdna.collect(
        ["python", "train.py", *argv],
        cwd=repo,
        data=[data],
        collectors=COLLECTORS,
        use_cache=False,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Manifests of one project before and after each kind of change."""
    root = tmp_path_factory.mktemp("explained")
    repo, shared, elsewhere, data = (root / n for n in ("repo", "shared", "elsewhere", "data"))
    for folder in (repo, shared, elsewhere, data):
        folder.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text('print("training")\n')
    (repo / "model.py").write_text("layers = 4\nwidth = 256\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    config = "optimizer:\n  lr: 0.0003\n  betas: [0.9, 0.95]\ntrainer:\n  seed: 7\n"
    (shared / "exp.yaml").write_text(config)
    (elsewhere / "exp.yaml").write_text(config)
    (data / "input.txt").write_text("to be or not to be\n")
    (data / "meta.pkl").write_bytes(b"\x80\x04N.")
    (data / "train.bin").write_bytes(b"\0" * 4300)
    args = ("--config", str(shared / "exp.yaml"), "--lr", "3e-4")
    out: dict[str, Any] = {"root": root}
    out["a"] = _collect(repo, *args, data=data)
    out["moved"] = _collect(
        repo, "--config", str(elsewhere / "exp.yaml"), "--lr", "3e-4", data=data
    )
    (shared / "exp.yaml").write_text(config.replace("0.0003", "0.0006").replace("7", "8"))
    out["config"] = _collect(repo, *args, data=data)
    (shared / "exp.yaml").write_text(config)
    (data / "input.txt").unlink()
    (data / "train.bin").write_bytes(b"\0" * 4500)
    out["data"] = _collect(repo, *args, data=data)
    (data / "input.txt").write_text("to be or not to be\n")
    (data / "train.bin").write_bytes(b"\0" * 4300)
    (repo / "train.py").write_text('print("training")\nimport model\nprint(model.width)\n')
    out["patch_a"] = _collect(repo, *args, data=data)
    (repo / "model.py").write_text("layers = 6\nwidth = 512\n")
    (repo / "train.py").write_text('print("training")\nimport model\nprint(model.width)\n')
    out["patch_b"] = _collect(repo, *args, data=data)
    return out


def _edited(manifest: Manifest, edit: Any) -> Manifest:
    doc = copy.deepcopy(manifest.to_dict())
    edit(doc)
    model = Manifest.model_validate(doc)
    model.dna = compute_dna(model)
    return model


def _packages(doc: dict[str, Any]) -> None:
    # This machine's versions would make the golden file depend on the install.
    doc["environment"]["packages"] = {"accelerate": "1.0.0", "numpy": "2.1.0", "torch": "2.3.0"}


def _packages_b(doc: dict[str, Any]) -> None:
    doc["environment"]["packages"] = {"numpy": "1.26.4", "torch": "2.3.0", "triton": "3.0.0"}


def _initial_seed(doc: dict[str, Any]) -> None:
    # A process's torch.initial_seed() (random when unseeded) next to a determinism switch.
    torch = doc["environment"].setdefault("framework", {}).setdefault("torch", {})
    torch["loaded"] = {"determinism": {"initial_seed": 1234, "deterministic_algorithms": True}}


def _initial_seed_b(doc: dict[str, Any]) -> None:
    torch = doc["environment"].setdefault("framework", {}).setdefault("torch", {})
    torch["loaded"] = {"determinism": {"initial_seed": 98765, "deterministic_algorithms": False}}


def normalised(text: str, root: Path) -> str:
    text = text.replace(str(root), "<tmp>")
    text = re.sub(r"\b[0-9a-f]{12,64}\b", "<hex>", text)
    text = re.sub(r"\d{8}_\d{6}_\w+", "<run>", text)
    return text


def _check(name: str, text: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("EXPDNA_UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), f"{golden} differs; see the module doc"


CASES = {
    "moved_config": ("a", "moved", None),
    "changed_config": ("a", "config", None),
    "dataset_files": ("a", "data", None),
    "patch_files": ("patch_a", "patch_b", None),
    "packages": ("a", "a", (_packages, _packages_b)),
    "initial_seed": ("a", "a", (_initial_seed, _initial_seed_b)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_explained_text(runs: dict[str, Any], case: str) -> None:
    first, second, edit = CASES[case]
    a, b = runs[first], runs[second]
    if edit is not None:
        a, b = _edited(a, edit[0]), _edited(b, edit[1])
    report = diff_manifests(a, b)
    text = "\n".join(render(report)) + "\n"
    _check(f"diff_explained_{case}.txt", normalised(text, runs["root"]))
    in_dna = [c.in_dna for c in report.changes]
    assert in_dna == sorted(in_dna, reverse=True), "in-DNA changes come first"


def test_explained_json(runs: dict[str, Any]) -> None:
    report = diff_manifests(runs["a"], runs["config"]).to_dict()
    patch = diff_manifests(runs["patch_a"], runs["patch_b"]).to_dict()
    data = diff_manifests(runs["a"], runs["data"]).to_dict()
    keep = {"changes": report["changes"] + patch["changes"] + data["changes"]}
    text = json.dumps(keep, indent=2, ensure_ascii=False) + "\n"
    _check("diff_explained.json", normalised(text, runs["root"]))


def test_a_moved_config_file_is_equal(runs: dict[str, Any]) -> None:
    report = diff_manifests(runs["a"], runs["moved"])
    assert report.equal
    assert not any(c.path.startswith("config.config_files") for c in report.changes)


def test_initial_seed_is_not_in_the_dna(runs: dict[str, Any]) -> None:
    a, b = _edited(runs["a"], _initial_seed), _edited(runs["a"], _initial_seed_b)
    by_path = {c.path: c for c in diff_manifests(a, b).changes}
    seed = by_path["environment.framework.torch.loaded.determinism.initial_seed"]
    assert not seed.in_dna and seed.severity == "INFO"
    # Version 3: the switches only the process reads are out of the DNA too, but a WARN.
    switch = by_path["environment.framework.torch.loaded.determinism.deterministic_algorithms"]
    assert not switch.in_dna and switch.severity == "WARN"


def test_the_web_diff_page_explains_the_same(runs: dict[str, Any], tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from expdna.store import Store
    from expdna.store.config import StoreConfig
    from expdna.ui.app import create_app

    with Store.open(tmp_path / "store") as store:
        store.record_many([runs["a"], runs["config"], runs["patch_a"], runs["patch_b"]])
    ids = {name: runs[name].run_id for name in ("a", "config", "patch_a", "patch_b")}
    with TestClient(
        create_app(StoreConfig(path=tmp_path / "store")), base_url="http://localhost"
    ) as client:
        html = client.get("/diff", params={"a": ids["a"], "b": ids["config"]}).text
        patch = client.get("/diff", params={"a": ids["patch_a"], "b": ids["patch_b"]}).text
    # The changed file's key under its in-DNA digest change, which comes first.
    assert "config.config_files[exp.yaml]" in html
    assert "<li>optimizer.lr: 0.0003 → 0.0006</li>" in html
    changes = html[html.index("<tbody>", html.index("Changes (")) :]
    assert changes.index("config.config_files[exp.yaml]") < changes.index("</tr>")
    assert "<li>model.py: (none) → +2 −2</li>" in patch
