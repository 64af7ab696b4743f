"""The command section names the entry script relative to its repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

from expdna.collectors.command import collect_command
from expdna.collectors.context import CollectContext


def test_the_entry_is_named_relative_to_its_repository_from_any_cwd(tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "src" / "train.py").write_text("pass\n")
    argv = ("python", "src/train.py", "--lr", "0.1")
    from_top = collect_command(CollectContext(argv=argv, cwd=repo))
    from_src = collect_command(CollectContext(argv=("python", "train.py"), cwd=repo / "src"))
    assert from_top["entry"] == from_src["entry"] == "src/train.py"
    assert from_top["argv"] == list(argv)


def test_no_entry_outside_a_repository_or_for_a_module(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("pass\n")
    assert "entry" not in collect_command(CollectContext(argv=("train.py",), cwd=tmp_path))
    module = collect_command(CollectContext(argv=("python", "-m", "pkg"), cwd=tmp_path))
    assert "entry" not in module
