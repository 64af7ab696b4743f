"""Unknown is a value: a collector that misses its deadline leaves its section marked
unknown, in the manifest and in the DNA, through the installed command."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.factories import EXPDNA


def expdna(cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [EXPDNA, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture
def hanging_git(tmp_path: Path) -> str:
    """A PATH whose ``git`` never answers (a stalled network mount, a huge checkout)."""
    bin_dir = tmp_path / "hang-bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\nexec sleep 20\n")
    fake.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def generated(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    info = json.loads(done.stdout)
    return dict(json.loads(Path(info["path"]).read_text()))


def test_a_hung_git_marks_code_unknown_and_never_equals_a_run_without_git(
    repo: Path, tmp_path: Path, hanging_git: str
) -> None:
    args = ("generate", "--deadline", "1", "--json")
    hung = expdna(repo, *args, "--output", str(tmp_path / "hung.json"), "--", "x", path=hanging_git)
    assert hung.returncode == 0, hung.stderr
    assert "section code is unknown: collector git timeout" in hung.stderr
    doc = generated(hung)
    assert doc["schema_version"] == "1.1"
    assert doc["unknown"]["code"].startswith("collector git timeout")
    assert doc["code"] == {}
    assert json.loads(hung.stdout)["unknown"] == doc["unknown"]

    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    no_git = expdna(outside, *args, "--output", str(tmp_path / "none.json"), "--", "x")
    assert no_git.returncode == 0, no_git.stderr
    plain = generated(no_git)
    assert "unknown" not in plain and plain["code"] == {}
    # Both have an empty code section; only one of them knows that it is empty.
    assert doc["dna"]["sections"]["code"] != plain["dna"]["sections"]["code"]
    assert doc["dna"]["value"] != plain["dna"]["value"]


def test_strict_exits_1_and_check_warns_naming_the_section(
    repo: Path, tmp_path: Path, hanging_git: str
) -> None:
    out = tmp_path / "strict.json"
    strict = expdna(
        repo,
        "generate",
        "--strict",
        "--deadline",
        "1",
        "--output",
        str(out),
        "--",
        "x",
        path=hanging_git,
    )
    assert strict.returncode == 1
    assert "section code is unknown" in strict.stderr
    assert out.is_file()  # still written, with the section marked unknown

    checked = expdna(repo, "check", str(out))
    lines = checked.stdout.splitlines()
    assert any(
        ln.startswith("WARN unknown.code: not collected: collector git timeout") for ln in lines
    )
    assert lines[-1].startswith("verdict: WARN") or lines[-1].startswith("verdict: FAIL")
