"""check and diff verdicts as golden outputs: the exact text a person reads.

Regenerate on purpose with ``EXPDNA_UPDATE_GOLDEN=1 pytest tests/unit/test_verdict_golden.py``
and review the diff of ``tests/data/golden/``.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from expdna.cli.check import report_lines, verdict_line
from expdna.cli.diff import render
from expdna.compare.check import check_manifest
from expdna.compare.diff import diff_manifests
from expdna.manifest.dna import compute_dna
from expdna.manifest.model import Manifest

GOLDEN = Path(__file__).parents[1] / "data" / "golden"
COMMIT = "1c8e2fb98b7af3e1e86263ccd1f375e4d833b217"
BASE: dict[str, Any] = {
    "schema_version": "1.1",
    "run_id": "20260805_143025_1c8e2fb_k3f9",
    "generated_at": "2026-08-05T14:30:25Z",
    "command": {"argv": ["python", "train.py", "--lr", "0.1"], "cwd": "/work/relax"},
    "code": {
        "relax": {
            "commit": COMMIT,
            "dirty": False,
            "remote": "https://github.com/example/relax.git",
        }
    },
    "config": {"resolved_args": {"lr": 0.1, "seed": 1, "output_dir": "/out/a"}},
    "training": {"seeds": {"seed": 1}},
    "environment": {"python_version": "3.11.7", "packages": {"torch": "2.3.0"}},
    "hardware": {"gpu_model": "NVIDIA H100 80GB HBM3", "driver_version": "550.54.15"},
}


def manifest(edit: Any = None, *, keep_dna: bool = False) -> Manifest:
    doc = copy.deepcopy(BASE)
    if edit is not None:
        edit(doc)
    model = Manifest.model_validate(doc)
    model.dna = compute_dna(Manifest.model_validate(BASE) if keep_dna else model)
    return model


def clone(doc: dict[str, Any]) -> None:  # the same repository, another checkout name
    doc["code"] = {"relax-2": doc["code"]["relax"]}
    doc["config"]["resolved_args"]["output_dir"] = "/out/b"


def other_lr(doc: dict[str, Any]) -> None:  # the command's word, and the value it parses to
    doc["command"]["argv"][-1] = "0.2"
    doc["config"]["resolved_args"]["lr"] = 0.2


def other_commit_in_clone(doc: dict[str, Any]) -> None:
    clone(doc)
    doc["code"]["relax-2"]["commit"] = "9" * 40


def hand_edited(doc: dict[str, Any]) -> None:
    doc["environment"]["python_version"] = "3.12.1"


def unknown_code(doc: dict[str, Any]) -> None:
    doc["code"] = {}
    doc["unknown"] = {"code": "collector git timeout: git rev-parse gave no answer within 4 s"}


def nothing_recorded(doc: dict[str, Any]) -> None:
    for section in ("code", "environment", "hardware"):
        doc.pop(section)


DIFFS = {
    "diff_clone_equal": clone,
    "diff_one_resolved_arg": other_lr,
    "diff_commit_across_clones": other_commit_in_clone,
    "diff_unknown_code": unknown_code,
}
CHECKS = {
    "check_edited_after_written": (hand_edited, True),
    "check_unknown_code": (unknown_code, False),
    "check_nothing_recorded": (nothing_recorded, False),
}


def compare(name: str, lines: list[str]) -> None:
    path = GOLDEN / f"{name}.txt"
    text = "\n".join(lines) + "\n"
    if os.environ.get("EXPDNA_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("name", sorted(DIFFS))
def test_diff_golden(name: str) -> None:
    compare(name, render(diff_manifests(manifest(), manifest(DIFFS[name]))))


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_check_golden(name: str) -> None:
    edit, keep_dna = CHECKS[name]
    recorded = manifest(edit, keep_dna=keep_dna)
    report = check_manifest(recorded, manifest())
    compare(name, [*report_lines(report), verdict_line(report)])


def _many_packages(doc: dict[str, Any]) -> None:
    doc["environment"]["packages"].update({f"pkg{i:03d}": "1.0" for i in range(40)})


def test_many_equal_packages_read_as_one_line_and_a_changed_one_stands_out() -> None:
    recorded = manifest(_many_packages)
    here = manifest(_many_packages)
    here.environment.packages["pkg007"] = "2.0"
    report = check_manifest(recorded, here)
    lines = report_lines(report)
    assert "PASS environment.packages: 39 equal (--verbose lists them)" in lines
    assert "WARN environment.packages.pkg007: 1.0 -> 2.0" in lines
    assert not any(line.startswith("PASS environment.packages.pkg") for line in lines)
    everything = report_lines(report, verbose=True)
    assert sum(line.startswith("PASS environment.packages.pkg") for line in everything) == 39
