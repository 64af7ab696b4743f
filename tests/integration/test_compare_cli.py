"""check, diff and rerun through the installed ``expdna`` command, on real git repos."""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import EXPDNA

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_SYSTEM": os.devnull,
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True,
                   capture_output=True)  # fmt: skip


def expdna(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXPDNA, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, **GIT_ENV, **(env or {})},
    )  # fmt: skip


@pytest.fixture
def out(tmp_path: Path) -> Path:
    # Manifests go outside the repo: an untracked manifest would make the checkout dirty.
    path = tmp_path / "out"
    path.mkdir()
    return path


def generate(repo: Path, target: Path, *argv: str, env: dict[str, str] | None = None) -> Path:
    # A generous deadline: a loaded test machine must not turn into a missing code section.
    done = expdna(
        "generate", "--deadline", "60", "--output", target, "--", *argv, cwd=repo, env=env
    )
    assert done.returncode == 0, done.stderr
    assert repo.name in json.loads(target.read_text())["code"], done.stderr
    return target


def committed(repo: Path, name: str, text: str) -> str:
    """Commit a script into ``repo``: rerun runs only code a recorded repository holds."""
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return name


def section_lines(stdout: str) -> dict[str, str]:
    return {line.split()[0]: line.split()[1] for line in stdout.splitlines()[:7]}


# --- check ----------------------------------------------------------------------------


def test_check_passes_in_the_same_repo_and_fails_after_a_commit(repo: Path, out: Path) -> None:
    manifest = generate(repo, out / "m.json", "python", "train.py")
    done = expdna("check", manifest, cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS code.proj.commit: " in done.stdout
    assert "PASS code.proj.patch.digest: (clean) -> (clean)" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("verdict: PASS (0 FAIL")

    (repo / "train.py").write_text("print('changed')\n")
    dirty = expdna("check", manifest, cwd=repo)
    assert dirty.returncode == 1
    assert "FAIL code.proj.patch.digest: (clean) -> blake3:" in dirty.stdout

    git(repo, "commit", "-q", "-am", "second")
    done = expdna("check", manifest, cwd=repo)
    assert done.returncode == 1
    assert "FAIL code.proj.commit: " in done.stdout
    assert done.stdout.splitlines()[-1].startswith("verdict: FAIL (1 FAIL")


def test_check_json_and_extra_repos(repo: Path, out: Path, tmp_path: Path) -> None:
    other = tmp_path / "lib"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "commit", "-q", "--allow-empty", "-m", "lib")
    manifest = out / "m.json"
    done = expdna(
        "generate", "--deadline", "60", "--output", manifest, "--repo", other, "--",
        "python", "train.py", cwd=repo,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    with_lib = expdna("check", "--json", "--repo", other, manifest, cwd=repo)
    assert with_lib.returncode == 0, with_lib.stdout
    doc = json.loads(with_lib.stdout)
    assert doc["verdict"] == "PASS"
    fields = {r["field"]: r for r in doc["results"]}
    assert fields["code.lib.commit"]["status"] == "PASS"
    assert set(fields["code.lib.commit"]) == {
        "rule",
        "field",
        "status",
        "recorded",
        "current",
        "note",
    }

    without = expdna("check", "--json", manifest, cwd=repo)
    assert without.returncode == 1
    missing = {r["field"]: r for r in json.loads(without.stdout)["results"]}["code.lib.commit"]
    assert (missing["status"], missing["current"]) == ("FAIL", "(absent)")


# --- diff -----------------------------------------------------------------------------


def test_diff_equal_then_one_resolved_arg(repo: Path, out: Path) -> None:
    a = generate(repo, out / "a.json", "python", "train.py", "--lr", "0.1")
    b = generate(repo, out / "b.json", "python", "train.py", "--lr", "0.1")
    c = generate(repo, out / "c.json", "python", "train.py", "--lr", "0.2")

    same = expdna("diff", a, b, cwd=repo)
    assert same.returncode == 0, same.stdout
    assert set(section_lines(same.stdout).values()) == {"="}
    assert same.stdout.splitlines()[-1].endswith("(equal)")

    differ = expdna("diff", a, c, cwd=repo)
    assert differ.returncode == 1
    sections = section_lines(differ.stdout)
    assert [name for name, eq in sections.items() if eq == "!="] == ["config"]
    # DNA version 3: the command's word is the identity; the parsed value repeats it.
    assert "WARN command.argv: 4 words -> 4 words  (in dna)" in differ.stdout
    assert "    argv[3:4]: 0.1 -> 0.2  (in dna)" in differ.stdout
    assert "INFO config.resolved_args.lr: 0.1 -> 0.2" in differ.stdout
    assert differ.stderr == ""

    doc = json.loads(expdna("diff", "--json", a, c, cwd=repo).stdout)
    assert doc["equal"] is False
    assert [n for n, s in doc["sections"].items() if not s["equal"]] == ["config"]


def test_diff_warns_about_a_stale_stored_dna(repo: Path, out: Path) -> None:
    a = generate(repo, out / "a.json", "python", "train.py", "--lr", "0.1")
    doc = json.loads(a.read_text())
    doc["command"]["argv"][-1] = "0.3"  # edited by hand; the stored DNA is stale
    edited = out / "edited.json"
    edited.write_text(json.dumps(doc))
    done = expdna("diff", a, edited, cwd=repo)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert f"{edited}: stored DNA" in done.stderr and "does not match" in done.stderr


# --- rerun ----------------------------------------------------------------------------


def home_with_this_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A home directory holding this test run's virtual environment (a link to it), as
    most interpreters live under $HOME, and the interpreter's path inside it."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "venv").symlink_to(sys.prefix, target_is_directory=True)
    return home, home / "venv" / "bin" / Path(sys.executable).name


def test_rerun_confirm_exits_with_the_command_status(repo: Path, out: Path, tmp_path: Path) -> None:
    # The interpreter under $HOME is recorded as ~/venv/bin/python, which rerun expands.
    home, python = home_with_this_venv(tmp_path)
    env = {"HOME": str(home)}
    script = committed(repo, "exit3.py", "raise SystemExit(3)\n")
    manifest = generate(repo, out / "m.json", str(python), script, env=env)
    assert json.loads(manifest.read_text())["command"]["argv"][0] == f"~/venv/bin/{python.name}"
    done = expdna("rerun", manifest, "--confirm", "--trust-command", cwd=repo, env=env)
    assert done.returncode == 3, done.stderr
    assert "verdict: PASS" in done.stderr


def test_rerun_dry_run_leaves_the_home_to_the_shell(repo: Path, out: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    program = home / "venv" / "bin" / "train"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\nexit 3\n")
    program.chmod(0o755)
    manifest = generate(repo, out / "m.json", str(program), env={"HOME": str(home)})
    assert json.loads(manifest.read_text())["command"]["argv"] == ["~/venv/bin/train"]

    script = expdna("rerun", manifest, "--dry-run", cwd=repo)
    assert script.stdout.rstrip("\n").splitlines()[-1] == '"$HOME"/venv/bin/train'
    assert "FILL IN BY HAND" not in script.stdout
    ran = subprocess.run(["sh", "-c", script.stdout], env={**os.environ, "HOME": str(home)})
    assert ran.returncode == 3


def test_rerun_confirm_refuses_a_redacted_argument(repo: Path, out: Path) -> None:
    key = "sk-proj-" + "".join(secrets.choice(string.ascii_letters + string.digits)
                               for _ in range(40))  # fmt: skip
    code = "open('marker', 'w').write('ran')"
    manifest = generate(repo, out / "m.json", sys.executable, "-c", code, "--api-key", key)
    assert key not in manifest.read_text()

    done = expdna("rerun", manifest, "--confirm", cwd=repo)
    assert done.returncode == 1
    assert "refusing to rerun" in done.stderr and "argv[4]" in done.stderr
    assert not (repo / "marker").exists()

    script = expdna("rerun", manifest, "--dry-run", cwd=repo)
    assert script.returncode == 0
    assert "# FILL IN BY HAND: argv[4] ('sk-proj-***')" in script.stdout
    subprocess.run(["sh", "-n"], input=script.stdout, text=True, check=True)
    assert not (repo / "marker").exists()


def test_rerun_confirm_refuses_after_a_failed_check(repo: Path, out: Path) -> None:
    code = "open('marker', 'w').write('ran')"
    manifest = generate(repo, out / "m.json", sys.executable, "-c", code)
    git(repo, "commit", "-q", "--allow-empty", "-m", "moved on")
    done = expdna("rerun", manifest, "--confirm", cwd=repo)
    assert done.returncode == 1
    assert "check FAILs on code.proj.commit" in done.stderr
    assert not (repo / "marker").exists()


def test_rerun_dry_run_script(repo: Path, out: Path) -> None:
    # Another size as well as other bytes: a same-size rewrite within the index's mtime
    # tick can be missed by the git collector (reported separately).
    (repo / "train.py").write_text("print('dirty work')\n")
    manifest = generate(repo, out / "m.json", "python", "train.py", "--name", "a b $(x)")
    done = expdna("rerun", manifest, "--dry-run", cwd=repo)
    assert done.returncode == 0
    assert "# expected: proj at " in done.stdout, done.stdout
    assert "dirty: patch blake3:" in done.stdout, done.stdout
    assert "#| +print('dirty work')" in done.stdout
    assert done.stdout.rstrip("\n").splitlines()[-1] == "python train.py --name 'a b $(x)'"


# --- bad input ------------------------------------------------------------------------

HEADER = '{"schema_version": "1.0", "run_id": "r", "generated_at": "2026-08-05T14:30:25Z"'
BAD_INPUTS: dict[str, tuple[bytes | None, str]] = {
    "malformed": (b'{"schema_version": "1.0",', "invalid JSON"),
    "huge": (None, "larger than"),
    "deep": (b'{"schema_version": "1.0", "x": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
             "nested deeper"),
    "utf8": (HEADER.encode() + b', "metrics": {"x": "\xff\xfe"}}', "not valid UTF-8"),
    "major": (b'{"schema_version": "2.0", "run_id": "r"}', "not supported"),
    "no-version": (b'{"run_id": "r", "generated_at": "x"}', "no schema_version"),
    "nan": (HEADER.encode() + b', "metrics": {"loss": NaN}}', "NaN is not valid JSON"),
    "duplicate": (HEADER.encode() + b', "run_id": "s"}', "duplicate key 'run_id'"),
    "missing": (None, "no such file"),
}  # fmt: skip
COMMANDS = {"check": ["check"], "diff": ["diff", "GOOD"], "rerun": ["rerun", "--dry-run"]}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_manifest_is_one_error_line_exit_2(tmp_path: Path, case: str, command: str) -> None:
    content, reason = BAD_INPUTS[case]
    bad = tmp_path / f"{case}.json"
    if case == "huge":
        with bad.open("wb") as fh:
            fh.write(HEADER.encode() + b', "metrics": {"pad": "')
            fh.write(b"x" * 50_000_000)
            fh.write(b'"}}')
    elif content is not None:
        bad.write_bytes(content)
    good = tmp_path / "good.json"
    good.write_text(HEADER + "}")
    args = [str(good) if word == "GOOD" else word for word in COMMANDS[command]]
    before = sorted(p.name for p in tmp_path.iterdir())

    done = expdna(*args, bad, cwd=tmp_path)

    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"expdna: error: {bad}: ")
    assert reason in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_check_fails_a_manifest_edited_after_it_was_written(repo: Path, out: Path) -> None:
    manifest = out / "m.json"
    argv = ["python", "train.py"]
    done = expdna("generate", "--deadline", "60", "--output", manifest, "--", *argv, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert expdna("check", manifest, cwd=repo).returncode == 0
    doc = json.loads(manifest.read_text())
    doc["environment"]["python_version"] = "3.0.0"  # edited; its DNA block left as written
    manifest.write_text(json.dumps(doc))
    edited = expdna("check", manifest, cwd=repo)
    assert edited.returncode == 1, edited.stdout
    [line] = [ln for ln in edited.stdout.splitlines() if ln.startswith("FAIL dna:")]
    assert line.endswith("(edited after it was written)")
    assert doc["dna"]["value"][:12] in line
