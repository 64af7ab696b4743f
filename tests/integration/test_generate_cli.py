"""`expdna generate` through the installed command, in real git repositories."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.factories import EXPDNA, git


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXPDNA, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def generate(
    cwd: Path, *argv: str, output: str = "m.json", env: dict[str, str] | None = None
) -> dict[str, Any]:
    done = run(cwd, "generate", "--output", output, "--json", "--", *argv, env=env)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    doc = json.loads(Path(info["path"]).read_text())
    assert doc["dna"]["value"] == info["dna"] and doc["run_id"] == info["run_id"]
    return dict(doc)


def test_default_output_name_and_text_output(repo: Path) -> None:
    done = run(repo, "generate")
    assert done.returncode == 0, done.stderr
    files = list(repo.glob("manifest_*.json"))
    assert len(files) == 1
    doc = json.loads(files[0].read_text())
    assert f"wrote {files[0].name}" in done.stdout or f"wrote {files[0]}" in done.stdout
    assert f"dna {doc['dna']['value'][:12]}" in done.stdout
    assert doc["command"]["argv"] == []
    head = git(repo, "rev-parse", "HEAD")
    assert doc["code"]["proj"]["commit"] == head
    assert doc["run_id"].split("_")[2] == head[:7]


def test_twice_in_an_unchanged_repo_same_dna_new_run_id(repo: Path) -> None:
    # the default output lands in the checkout: expdna's own manifests do not dirty it
    done = run(repo, "generate", "--json", "--", "python", "train.py", "--lr", "0.1")
    first = json.loads(done.stdout)
    assert Path(first["path"]).parent == repo
    b = generate(repo, "python", "train.py", "--lr", "0.1", output=str(repo.parent / "b.json"))
    a = json.loads(Path(first["path"]).read_text())
    assert b["code"]["proj"]["dirty"] is False
    assert a["dna"]["value"] == b["dna"]["value"]
    assert a["run_id"] != b["run_id"]


def test_one_arg_changes_only_config_and_a_commit_only_code(repo: Path) -> None:
    # manifests are written outside the repo so that they do not dirty it
    out = repo.parent
    a = generate(repo, "train.py", "--lr", "0.1", output=str(out / "a.json"))
    b = generate(repo, "train.py", "--lr", "0.2", output=str(out / "b.json"))
    changed = {k for k, v in a["dna"]["sections"].items() if b["dna"]["sections"][k] != v}
    assert changed == {"config"}
    (repo / "model.py").write_text("x = 1\n")
    git(repo, "add", "model.py")
    git(repo, "commit", "-q", "-m", "second")
    c = generate(repo, "train.py", "--lr", "0.1", output=str(out / "c.json"))
    changed = {k for k, v in a["dna"]["sections"].items() if c["dna"]["sections"][k] != v}
    assert changed == {"code"}


def test_env_order_does_not_change_the_dna(repo: Path) -> None:
    out = repo.parent
    env1 = {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring"}
    a = generate(repo, "x", output=str(out / "a.json"), env=env1)
    b = generate(repo, "x", output=str(out / "b.json"), env=dict(reversed(env1.items())))
    assert a["dna"]["value"] == b["dna"]["value"]
    assert a["config"]["selected_env"]["NCCL_ALGO"] == "Ring"


def test_dirty_repo_records_a_patch_with_untracked_files(repo: Path) -> None:
    (repo / "train.py").write_text("print('changed')\n")
    (repo / "new.py").write_text("print('new')\n")
    doc = generate(repo, "x", output=str(repo.parent / "m.json"))
    proj = doc["code"]["proj"]
    assert proj["dirty"] is True
    assert "+print('changed')" in proj["patch"]["text"]
    assert "+print('new')" in proj["patch"]["text"]


def test_secrets_never_reach_the_file(repo: Path) -> None:
    token = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gHi"
    doc_path = repo.parent / "m.json"
    generate(
        repo,
        "train.py",
        "--hf-token",
        token,
        "--db-password",
        "hunter2hunter2",
        output=str(doc_path),
        env={"HF_TOKEN": token, "WANDB_API_KEY": "a" * 40},
    )
    text = doc_path.read_text()
    assert token not in text and "hunter2hunter2" not in text
    doc = json.loads(text)
    assert doc["collection"]["redacted"]


def test_not_a_git_repo(tmp_path: Path) -> None:
    doc = generate(tmp_path, "train.py")
    assert doc["code"] == {}
    assert doc["collection"]["collectors"]["git"]["status"] == "skipped"


def test_repo_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("a = 1\n")
    doc = generate(tmp_path, "train.py", output=str(tmp_path.parent / f"{tmp_path.name}.json"))
    repo = next(iter(doc["code"].values()))
    assert repo["commit"] is None
    assert "+a = 1" in repo["patch"]["text"]
    assert doc["run_id"].split("_")[2] == "nogit"


def test_detached_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD")
    doc = generate(repo, "x", output=str(repo.parent / "m.json"))
    assert doc["code"]["proj"]["branch"] is None
    assert doc["code"]["proj"]["detached"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output", "/nonexistent-dir/m.json"], "output directory does not exist"),
        (["--deadline", "0"], "Invalid value for '--deadline'"),
        (["--repo", "/nonexistent-repo"], "--repo /nonexistent-repo: no such directory"),
        (["--data", ""], "Invalid value for '--data': '' is an empty path"),
        # click's Path reads '' as the current directory: these wrote into the checkout
        (["-o", ""], "Invalid value for '-o' / '--output': '' is an empty path"),
        (["--record", "-o", " "], "' ' is an empty path"),
        (["--repo", ""], "Invalid value for '--repo': '' is an empty path"),
        (["--store", "", "generate", "--record"], "store: '' is an empty path; name a directory"),
        (["--index-url", "", "generate"], "index URL: '' is empty"),
    ],
)
def test_bad_arguments_exit_2_and_write_nothing(repo: Path, args: list[str], message: str) -> None:
    before = sorted(p.name for p in repo.iterdir())
    group = args[0] in ("--store", "--index-url")
    done = run(repo, *args) if group else run(repo, "generate", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in repo.iterdir()) == before


def test_help_explains() -> None:
    done = subprocess.run([EXPDNA, "generate", "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    for word in ("--output", "--repo", "--data", "--json", "ARGV"):
        assert word in done.stdout


@pytest.mark.parametrize("command", [["generate", "-o"], ["run", "--output-dir"]])
def test_a_removed_current_directory_is_one_error_line(tmp_path: Path, command: list[str]) -> None:
    gone, out = tmp_path / "gone", tmp_path / "out"
    gone.mkdir()
    removing = ["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone)]
    done = subprocess.run(
        [*removing, EXPDNA, *command, str(out), "--", "python", "train.py"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "expdna: error: the current directory no longer exists (removed or moved): "
        "cd to one that does"
    ]
    assert not out.is_file() and not list(out.glob("manifest_*"))  # no manifest written


def test_an_error_naming_a_hostile_path_is_one_escaped_line(tmp_path: Path) -> None:
    path = tmp_path / "\x1b[2Jx\ny.json"
    done = subprocess.run([EXPDNA, "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "\x1b" not in done.stderr
    assert done.stderr.startswith("expdna: error: ") and "\\x1b[2Jx\\ny.json" in done.stderr
