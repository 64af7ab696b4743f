"""The git collector against real git repositories in temp directories (git is not mocked)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from blake3 import blake3

from expdna.collectors.context import CollectContext, NotAvailable, Partial
from expdna.collectors.git import collect_git, strip_credentials

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

REAL_HOME = Path(os.path.expanduser("~"))
KEYS = {"commit", "branch", "detached", "dirty", "remote", "shallow", "patch", "submodules"}


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user or system git config leaks in; commits get a fixed identity."""
    home = tmp_path / "home"
    home.mkdir()
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test Person")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
    return home


def git(*args: str, cwd: Path, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True, text=True)
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, bytes | str] | None = None) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    for name, content in (files or {"README.md": "hello\n"}).items():
        write(path / name, content)
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "initial", cwd=path)
    return path


def write(path: Path, content: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)


def collect(cwd: Path, **kwargs: object) -> dict[str, dict[str, object]]:
    return collect_git(CollectContext(cwd=cwd, **kwargs))  # type: ignore[arg-type]


def files_of(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every working-tree file: bytes and executable bit, .git excluded."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), os.access(p, os.X_OK))
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def user_state(repo: Path) -> tuple[bytes, str]:
    return (repo / ".git" / "index").read_bytes(), git("status", "--porcelain", cwd=repo)


def apply_in_clone(repo: Path, text: str, dest: Path) -> Path:
    git("clone", "-q", str(repo), str(dest), cwd=repo.parent)
    (dest.parent / "change.patch").write_bytes(text.encode())
    git("apply", str(dest.parent / "change.patch"), cwd=dest)
    return dest


def test_clean_repo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    section = collect(repo)
    assert list(section) == ["proj"]
    state = section["proj"]
    assert set(state) == KEYS
    assert state == {
        "commit": git("rev-parse", "HEAD", cwd=repo),
        "branch": "main",
        "detached": False,
        "dirty": False,
        "remote": None,
        "shallow": False,
        "patch": None,
        "submodules": [],
    }


def test_dirty_patch_rebuilds_the_working_tree_and_leaves_the_index_alone(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "proj",
        {
            "unstaged.txt": "one\ntwo\nthree\n",
            "staged.txt": "alpha\n",
            "both.txt": "x\n",
            "deleted.txt": "bye\n",
            "run.sh": "echo hi\n",
            "pkg/mod.py": "A = 1\n",
        },
    )
    write(repo / "unstaged.txt", "one\n2\nthree\nfour\n")
    write(repo / "staged.txt", "alpha\nbeta\n")
    git("add", "staged.txt", cwd=repo)
    write(repo / "both.txt", "x\ny\n")
    git("add", "both.txt", cwd=repo)
    write(repo / "both.txt", "x\ny\nz\n")
    (repo / "deleted.txt").unlink()
    write(repo / "new_staged.txt", "staged new\n")
    git("add", "new_staged.txt", cwd=repo)
    write(repo / "untracked.txt", "loose\n")
    write(repo / "deep/er/untracked with space.py", "B = 2\n")
    write(repo / "*.txt", "a file named like a glob\n")
    write(repo / ":(odd)magic.txt", "a file named like pathspec magic\n")
    (repo / "run.sh").chmod(0o755)
    (repo / ".git" / "index.lock").write_bytes(b"someone else's git is busy")
    before = user_state(repo)

    state = collect(repo)["proj"]

    assert user_state(repo) == before
    assert (repo / ".git" / "index.lock").read_bytes() == b"someone else's git is busy"
    (repo / ".git" / "index.lock").unlink()
    assert state["dirty"] is True
    patch = state["patch"]
    assert isinstance(patch, dict)
    text = patch["text"]
    assert patch["digest"] == "blake3:" + blake3(text.encode()).hexdigest()
    assert patch["size"] == len(text.encode())
    assert patch["binary_files"] == []
    clone = apply_in_clone(repo, text, tmp_path / "clone" / "proj")
    assert files_of(clone) == files_of(repo)


def test_collecting_never_rewrites_the_index(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.txt": "a\n", "b.txt": "b\n"})
    write(repo / "c.txt", "untracked\n")
    os.utime(repo / "a.txt", (1_000_000_000, 1_000_000_000))  # stale stat info, same content
    index = (repo / ".git" / "index").read_bytes()
    state = collect(repo)["proj"]
    assert (repo / ".git" / "index").read_bytes() == index
    assert state["dirty"] is True


def test_untracked_embedded_repository_is_skipped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    (repo / "vendor" / "other").mkdir(parents=True)
    git("init", "-q", cwd=repo / "vendor" / "other")
    write(repo / "vendor/other/inner.txt", "INNER\n")
    write(repo / "mine.txt", "mine\n")
    patch = collect(repo)["proj"]["patch"]
    assert isinstance(patch, dict)
    assert "+++ b/mine.txt" in patch["text"]
    assert "INNER" not in patch["text"]


def test_patch_ignores_the_users_diff_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.txt": "".join(f"line {i}\n" for i in range(40))})
    write(repo / "a.txt", "".join(f"line {i}\n" for i in range(40) if i % 7) + "end\n")
    write(repo / "b.txt", "new\n")
    plain = collect(repo)["proj"]["patch"]
    for key, value in [
        ("diff.noprefix", "true"),
        ("diff.algorithm", "patience"),
        ("diff.context", "7"),
        ("color.ui", "always"),
        ("diff.renames", "copies"),
        ("core.abbrev", "12"),
        ("status.showUntrackedFiles", "no"),
        ("diff.external", "false"),
    ]:
        git("config", key, value, cwd=repo)
    configured = collect(repo)["proj"]
    assert configured["dirty"] is True
    assert configured["patch"] == plain


def test_ignored_files_stay_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {".gitignore": "*.log\ncache/\n"})
    write(repo / "debug.log", "IGNORED-CONTENT\n")
    write(repo / "cache/blob.txt", "IGNORED-CACHE\n")
    assert collect(repo)["proj"]["dirty"] is False
    assert collect(repo)["proj"]["patch"] is None

    write(repo / "notes.txt", "kept\n")
    patch = collect(repo)["proj"]["patch"]
    assert isinstance(patch, dict)
    assert "notes.txt" in patch["text"]
    assert "debug.log" not in patch["text"]
    assert "IGNORED" not in patch["text"]


def test_binary_files_are_listed_by_digest_not_inlined(tmp_path: Path) -> None:
    old = b"\x00\x01OLDBIN\xff" * 50
    repo = make_repo(tmp_path / "proj", {"weights.bin": old, "gone.bin": old, "a.txt": "a\n"})
    new = b"\x00\x02UNTRACKEDBIN\xfe" * 200
    changed = b"\x00\x03CHANGEDBIN\xfd" * 100
    write(repo / "data/new.bin", new)
    write(repo / "weights.bin", changed)
    (repo / "gone.bin").unlink()

    patch = collect(repo)["proj"]["patch"]

    assert isinstance(patch, dict)
    assert patch["binary_files"] == [
        {"path": "data/new.bin", "digest": "blake3:" + blake3(new).hexdigest(), "size": len(new)},
        {"path": "gone.bin", "digest": None, "size": None},
        {
            "path": "weights.bin",
            "digest": "blake3:" + blake3(changed).hexdigest(),
            "size": len(changed),
        },
    ]
    text = patch["text"]
    assert "GIT binary patch" not in text
    assert "Binary files /dev/null and b/data/new.bin differ" in text
    assert "BIN" not in text


def test_detached_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    first = git("rev-parse", "HEAD", cwd=repo)
    write(repo / "b.txt", "b\n")
    git("add", "b.txt", cwd=repo)
    git("commit", "-q", "-m", "second", cwd=repo)
    git("checkout", "-q", "--detach", first, cwd=repo)

    state = collect(repo)["proj"]

    assert state["commit"] == first
    assert state["branch"] is None
    assert state["detached"] is True
    assert state["dirty"] is False


def test_repo_without_commits(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git("init", "-q", "-b", "trunk", cwd=repo)
    write(repo / "staged.txt", "staged\n")
    git("add", "staged.txt", cwd=repo)
    write(repo / "loose/untracked.txt", "untracked\n")
    before = user_state(repo)

    state = collect(repo)["fresh"]

    assert user_state(repo) == before
    assert state["commit"] is None
    assert state["branch"] == "trunk"
    assert state["detached"] is False
    assert state["dirty"] is True
    patch = state["patch"]
    assert isinstance(patch, dict)
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "fresh.patch").write_bytes(patch["text"].encode())
    git("apply", str(tmp_path / "fresh.patch"), cwd=empty)
    assert files_of(empty) == files_of(repo)


def test_repo_without_commits_or_index(tmp_path: Path) -> None:
    repo = tmp_path / "bare-start"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    assert collect(repo)["bare-start"]["patch"] is None
    write(repo / "a.txt", "a\n")
    patch = collect(repo)["bare-start"]["patch"]
    assert isinstance(patch, dict)
    assert "+++ b/a.txt" in patch["text"]
    assert not (repo / ".git" / "index").exists()


def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotAvailable, match="not a git repository"):
        collect(plain)


def test_several_repos_same_basename(tmp_path: Path) -> None:
    first = make_repo(tmp_path / "a" / "proj")
    second = make_repo(tmp_path / "b" / "proj", {"x.txt": "x\n"})
    third = make_repo(tmp_path / "c" / "proj", {"y.txt": "y\n"})
    (first / "sub").mkdir()
    tool = make_repo(tmp_path / "tool", {"train.py": "print()\n"})

    section = collect(
        first / "sub",
        caller_file=tool / "train.py",
        repos=(second, Path("../../../c/proj"), first, first / "sub"),
    )

    assert list(section) == ["tool", "proj", "proj-2", "proj-3"]
    for name, repo in [("tool", tool), ("proj", first), ("proj-2", second), ("proj-3", third)]:
        assert section[name]["commit"] == git("rev-parse", "HEAD", cwd=repo)


def test_a_repo_argument_that_is_no_repo_gives_a_partial_section(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(Partial) as caught:
        collect(repo, repos=(plain,))
    assert list(caught.value.section) == ["proj"]
    assert str(plain) in caught.value.reason


def _two_commit_lib(path: Path) -> tuple[Path, str, str]:
    lib = make_repo(path, {"lib.py": "V = 1\n"})
    first = git("rev-parse", "HEAD", cwd=lib)
    write(lib / "lib.py", "V = 2\n")
    git("commit", "-q", "-am", "v2", cwd=lib)
    return lib, first, git("rev-parse", "HEAD", cwd=lib)


def _with_submodule(tmp_path: Path) -> tuple[Path, str, str]:
    lib, first, second = _two_commit_lib(tmp_path / "lib")
    repo = make_repo(tmp_path / "proj")
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "libs/lib",
        cwd=repo)  # fmt: skip
    git("commit", "-q", "-m", "add lib", cwd=repo)
    return repo, first, second


def test_submodules(tmp_path: Path) -> None:
    repo, first, second = _with_submodule(tmp_path)
    sub = {"path": "libs/lib", "commit": second, "checked_out": second, "state": "clean"}
    state = collect(repo)["proj"]
    assert state["submodules"] == [sub]
    assert state["dirty"] is False

    git("checkout", "-q", first, cwd=repo / "libs" / "lib")
    state = collect(repo)["proj"]
    assert state["submodules"] == [{**sub, "checked_out": first, "state": "modified"}]
    assert state["dirty"] is True

    clone = tmp_path / "clone"
    git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
    state = collect(clone)["clone"]
    assert state["submodules"] == [{**sub, "checked_out": None, "state": "uninitialized"}]


def test_shallow_clone_and_its_remote(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "b.txt", "b\n")
    git("add", "b.txt", cwd=repo)
    git("commit", "-q", "-m", "second", cwd=repo)
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", f"file://{repo}", str(shallow), cwd=tmp_path)

    state = collect(shallow)["shallow"]
    assert state["shallow"] is True
    assert state["remote"] == f"file://{repo}"
    assert state["commit"] == git("rev-parse", "HEAD", cwd=repo)
    assert collect(repo)["proj"]["shallow"] is False


def test_remote_credentials_are_stripped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    git("remote", "add", "aaa", "https://ghp_abcdef123456@github.com/o/first.git", cwd=repo)
    assert collect(repo)["proj"]["remote"] == "https://github.com/o/first.git"
    git("remote", "add", "origin", "https://user:s3cret@example.com:8443/x/y.git", cwd=repo)
    remote = collect(repo)["proj"]["remote"]
    assert remote == "https://example.com:8443/x/y.git"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:tok@host/x", "https://host/x"),
        ("https://tok@host/x?a=b@c", "https://host/x?a=b@c"),
        ("ssh://git@host/x.git", "ssh://git@host/x.git"),
        ("ssh://me:pw@host/x.git", "ssh://host/x.git"),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
        ("/srv/git/repo.git", "/srv/git/repo.git"),
        ("https://host/path/with@sign", "https://host/path/with@sign"),
    ],
)
def test_strip_credentials(url: str, expected: str) -> None:
    assert strip_credentials(url) == expected


def _config_files(home: Path) -> dict[Path, bytes | None]:
    paths = [
        Path("/etc/gitconfig"),
        REAL_HOME / ".gitconfig",
        REAL_HOME / ".config" / "git" / "config",
        home / ".gitconfig",
        home / ".config" / "git" / "config",
    ]
    return {p: p.read_bytes() if p.exists() else None for p in paths}


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root to chown a repository to another uid (dubious ownership)",
)
def test_dubious_ownership_is_read_without_changing_config(
    tmp_path: Path, isolated_git: Path
) -> None:
    repo, _, second = _with_submodule(tmp_path)
    write(repo / "README.md", "changed\n")
    configs = _config_files(isolated_git)
    repo_config = (repo / ".git" / "config").read_bytes()
    subprocess.run(["chown", "-R", "12345:12345", str(repo)], check=True)
    refused = subprocess.run(["git", "status"], cwd=repo, capture_output=True, text=True)
    assert refused.returncode != 0
    assert "dubious ownership" in refused.stderr

    state = collect(repo)["proj"]

    assert state["commit"] == git("-c", f"safe.directory={repo}", "rev-parse", "HEAD", cwd=repo)
    assert state["dirty"] is True
    patch = state["patch"]
    assert isinstance(patch, dict)
    assert "+changed" in patch["text"]
    assert state["submodules"] == [
        {"path": "libs/lib", "commit": second, "checked_out": second, "state": "clean"}
    ]
    assert _config_files(isolated_git) == configs
    assert (repo / ".git" / "config").read_bytes() == repo_config
    still = subprocess.run(["git", "status"], cwd=repo, capture_output=True, text=True)
    assert still.returncode != 0


def _gone_or_zombie(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_a_hanging_git_times_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    pid_file = tmp_path / "sleep.pid"
    fake_git = fake_bin / "git"
    fake_git.write_text(f"#!/bin/sh\nsleep 30 &\necho $! > {pid_file}\nwait\n")
    fake_git.chmod(0o755)
    environ = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}"}

    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        collect(repo, environ=environ, timeout_s=0.5)
    elapsed = time.monotonic() - started

    assert 0.4 < elapsed < 2.0
    sleeper = int(pid_file.read_text())
    deadline = time.monotonic() + 2
    while not _gone_or_zombie(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone_or_zombie(sleeper), "the hung git's child survived the timeout"


# --- repository-selecting variables in the environment (git hooks, an exported GIT_DIR) --


def _asked_and_other(tmp_path: Path) -> tuple[Path, Path]:
    """``asked`` with one unstaged change; ``other`` clean, at another commit and content."""
    asked = make_repo(tmp_path / "asked", {"a.txt": "asked\n"})
    write(asked / "a.txt", "asked, edited\n")
    other = make_repo(tmp_path / "other", {"b.txt": "other\n", "c.txt": "more\n"})
    return asked, other


def _expected(repo: Path) -> tuple[str, str]:
    """(HEAD, diff against HEAD) read by a git that is told nothing from the environment."""
    return git("rev-parse", "HEAD", cwd=repo), git("diff", "--full-index", "HEAD", cwd=repo)


@pytest.mark.parametrize(
    "names",
    [
        ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"),
        ("GIT_DIR",),
        ("GIT_INDEX_FILE",),
        ("GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"),
    ],
)
def test_git_variables_of_the_environment_do_not_select_another_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]
) -> None:
    asked, other = _asked_and_other(tmp_path)
    (commit, diff), (other_commit, _) = _expected(asked), _expected(other)
    values = {
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_INDEX_FILE": str(other / ".git" / "index"),
        "GIT_COMMON_DIR": str(other / ".git"),
        "GIT_OBJECT_DIRECTORY": str(other / ".git" / "objects"),
    }
    for name in names:
        monkeypatch.setenv(name, values[name])

    section = collect(asked)

    assert list(section) == ["asked"]
    state = section["asked"]
    assert state["commit"] == commit != other_commit
    assert state["dirty"] is True
    patch = state["patch"]
    assert isinstance(patch, dict)
    assert patch["text"].strip() == diff and "asked, edited" in patch["text"]
    for name in names:  # the user's own environment is left as it was
        assert os.environ[name] == values[name]


def test_a_clean_repository_stays_clean_under_another_repositorys_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = make_repo(tmp_path / "clean")
    other = make_repo(tmp_path / "other", {"b.txt": "other\n"})
    write(other / "b.txt", "other, edited\n")
    git("add", "b.txt", cwd=other)
    commit = _expected(clean)[0]
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    index = (other / ".git" / "index").read_bytes()

    state = collect(clean)["clean"]

    assert state["commit"] == commit
    assert state["dirty"] is False and state["patch"] is None
    assert (other / ".git" / "index").read_bytes() == index


def test_variables_in_the_collect_context_alone_are_dropped_too(tmp_path: Path) -> None:
    asked, other = _asked_and_other(tmp_path)
    environ = {
        **os.environ,
        "GIT_DIR": str(other / ".git"),
        "GIT_WORK_TREE": str(other),
        "GIT_INDEX_FILE": str(other / ".git" / "index"),
    }
    state = collect(asked, environ=environ)["asked"]
    assert state["commit"] == _expected(asked)[0]
    assert state["dirty"] is True and "asked, edited" in state["patch"]["text"]  # type: ignore[index]


def test_every_local_variable_of_the_installed_git_is_dropped() -> None:
    from expdna.collectors.git import REPOSITORY_ENV

    done = subprocess.run(
        ["git", "rev-parse", "--local-env-vars"],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.sep,
    )
    listed = set(done.stdout.split())
    assert "GIT_DIR" in listed
    assert listed <= REPOSITORY_ENV, f"add to REPOSITORY_ENV: {sorted(listed - REPOSITORY_ENV)}"


# --- a run's outputs are not code ------------------------------------------------------


def test_untracked_files_under_this_runs_output_roots_are_not_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "out" / "ckpt.pt", b"\0weights")
    write(repo / "logs" / "run.txt", "step 1\n")
    write(repo / "store" / "objects" / "ab" / "cd", b"blob")
    section = collect(
        repo,
        argv=("python", "train.py", "--log-dir", "logs"),
        output_roots=(repo / "out",),
        environ={"EXPDNA_STORE": str(repo / "store")},
    )
    assert section["proj"]["dirty"] is False
    assert section["proj"]["patch"] is None


MANIFEST_TEXT = '{\n  "schema_version": "1.1",\n  "run_id": "20260805_143025_1c8e2fb_k3f9"\n}\n'


def test_a_manifest_in_the_checkout_root_hides_no_code(tmp_path: Path) -> None:
    """The README's default ``expdna generate`` writes its manifest here: new code still counts."""
    repo = make_repo(tmp_path / "proj", {"mylib/layers.py": "W = 1\n"})
    write(repo / "manifest_20260805_143025_1c8e2fb_k3f9.json", MANIFEST_TEXT)
    assert collect(repo)["proj"]["dirty"] is False
    write(repo / "newmod.py", "x = 1\n")
    state = collect(repo)["proj"]
    assert state["dirty"] is True
    assert "newmod.py" in state["patch"]["text"]  # type: ignore[index]
    write(repo / "mylib/layers.py", "W = 2\n")
    assert "mylib/layers.py" in collect(repo)["proj"]["patch"]["text"]  # type: ignore[index]


def test_manifests_are_recognised_by_content_wherever_they_are(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "mine.json", MANIFEST_TEXT)  # expdna generate -o mine.json
    write(repo / "results" / "deep" / "run7.json", MANIFEST_TEXT)
    section = collect_git(CollectContext(cwd=repo))
    assert section["proj"]["dirty"] is False
    assert section.notes == ["left out as outputs: expdna manifests (2 files)"]
    write(repo / "params.json", '{"lr": 0.1}\n')  # a JSON file of the user's is code
    assert collect(repo)["proj"]["dirty"] is True


def test_a_folder_holding_a_manifest_is_not_outputs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "runs" / "a" / "manifest_20260805_143025_1c8e2fb_k3f9.json", MANIFEST_TEXT)
    write(repo / "runs" / "a" / "notes.py", "LR = 3\n")
    state = collect(repo)["proj"]
    assert state["dirty"] is True
    assert "runs/a/notes.py" in state["patch"]["text"]  # type: ignore[index]
    assert "manifest_" not in state["patch"]["text"]  # type: ignore[index]


def test_tool_outputs_are_not_code_and_each_group_is_named_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"src/train.py": "x = 1\n"})
    for i in range(3):
        write(repo / "wandb" / f"run-2026_{i}" / "files" / "config.yaml", f"i: {i}\n")
    write(repo / "wandb" / "debug.log", "log\n")
    write(repo / "mlruns" / "0" / "meta.yaml", "name: Default\n")
    write(repo / "mlflow.db", b"SQLite format 3\0")
    write(repo / "lightning_logs" / "version_0" / "hparams.yaml", "lr: 0.1\n")
    write(repo / "logs" / "tb" / "events.out.tfevents.1.host", b"\0\1")
    write(repo / "outputs" / "2026-08-05" / "14-30-25" / ".hydra" / "config.yaml", "a: 1\n")
    write(repo / "outputs" / "2026-08-05" / "14-30-25" / "train.log", "step\n")
    write(repo / "src" / "__pycache__" / "train.cpython-311.pyc", b"\0")
    section = collect_git(CollectContext(cwd=repo))
    assert section["proj"]["dirty"] is False
    assert section.notes == [
        "left out as outputs: events.out.tfevents.* (1 file)",
        "left out as outputs: lightning_logs/ (1 entry)",
        "left out as outputs: mlflow.db (1 file)",
        "left out as outputs: mlruns/ (1 entry)",
        "left out as outputs: outputs/ (2 files)",
        "left out as outputs: src/__pycache__/ (1 entry)",
        "left out as outputs: wandb/ (4 entries)",
    ]


def test_an_outputs_folder_without_hydra_is_code(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "outputs" / "heads.py", "x = 1\n")
    assert collect(repo)["proj"]["dirty"] is True


def test_wandb_dir_and_mlflow_tracking_uri_name_output_places(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "trackers" / "wandb" / "run-1" / "x.txt", "1\n")
    write(repo / "store" / "ml" / "0" / "meta.yaml", "a: 1\n")
    write(repo / "db" / "runs.db", b"SQLite format 3\0")
    environ = {"WANDB_DIR": "trackers", "MLFLOW_TRACKING_URI": f"file:{repo / 'store' / 'ml'}"}
    assert collect(repo, environ=environ)["proj"]["dirty"] is True  # db/runs.db is unnamed
    environ["MLFLOW_TRACKING_URI"] = "sqlite:///db/runs.db"
    write(repo / "store" / "ml" / "0" / "meta.yaml", "a: 1\n")
    (repo / "store" / "ml" / "0" / "meta.yaml").unlink()
    assert collect(repo, environ=environ)["proj"]["dirty"] is False


def test_expdnaignore_leaves_out_what_the_user_names(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "runs" / "a" / "data" / "tiny.parquet", b"PAR1")
    write(repo / "scratch.txt", "x\n")
    assert collect(repo)["proj"]["dirty"] is True
    write(repo / ".expdnaignore", "runs/\n*.txt\n")
    git("add", ".expdnaignore", cwd=repo)
    git("commit", "-q", "-m", "ignore", cwd=repo)
    assert collect(repo)["proj"]["dirty"] is False
    write(repo / "runs" / "keep.py", "x = 1\n")  # "runs/" covers it: gitignore syntax
    assert collect(repo)["proj"]["dirty"] is False
    write(repo / "model.py", "x = 1\n")
    assert collect(repo)["proj"]["dirty"] is True


def test_what_expdnaignore_leaves_out_is_named_once_per_group(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {".gitignore": ".venv/\n*.log\n"})
    write(repo / ".expdnaignore", "ckpts/\n*.ckpt\n!keep.ckpt\nscratch.txt\n*.log\n")
    git("add", ".expdnaignore", cwd=repo)
    git("commit", "-q", "-m", "ignore", cwd=repo)
    for name in ("ckpts/a.pt", "ckpts/b.pt", "ckpts/c/d.pt", "sub/x.ckpt", "y.ckpt", "scratch.txt"):
        write(repo / name, "x\n")
    write(repo / "train.log", "gitignored: not code to begin with, so never named\n")
    write(repo / ".venv" / "bin" / "python", "#!\n")
    write(repo / "wandb" / "run-1" / "x.txt", "1\n")
    section = collect_git(CollectContext(cwd=repo))
    assert section["proj"]["dirty"] is False
    assert section.notes == [
        "left out as outputs: wandb/ (1 entry)",
        "left out by .expdnaignore: *.ckpt (2 files)",
        "left out by .expdnaignore: ckpts/ (3 entries)",
        "left out by .expdnaignore: scratch.txt (1 file)",
    ]
    write(repo / "keep.ckpt", "a negated pattern: code\n")
    state = collect(repo)["proj"]
    assert state["dirty"] is True
    assert "keep.ckpt" in state["patch"]["text"]  # type: ignore[index]


def test_an_output_root_that_is_the_checkout_itself_excludes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    write(repo / "new.py", "x = 1\n")
    state = collect(repo, argv=("python", "t.py", "--output-dir", "."))["proj"]
    assert state["dirty"] is True


# --- large and binary untracked files ------------------------------------------------


def test_large_and_binary_untracked_files_are_recorded_by_digest_not_inlined(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "proj")
    big = os.urandom(3 << 20)  # over the inline limit, text or not
    write(repo / "weights.txt", big.hex().encode()[: (2 << 20)])
    write(repo / "tiny.bin", b"ab\0cd")
    write(repo / "notes.py", "x = 1\n")
    os.mkfifo(repo / "pipe")  # opening it would block: it must be left alone
    state = collect(repo, environ={"EXPDNA_CACHE_DIR": str(tmp_path / "cache")})["proj"]
    patch = state["patch"]
    assert isinstance(patch, dict)
    assert "notes.py" in patch["text"]
    assert "weights.txt" not in patch["text"] and "pipe" not in patch["text"]
    # A small binary goes through git's diff as before, and is listed by digest there.
    assert "Binary files /dev/null and b/tiny.bin differ" in patch["text"]
    by_path = {b["path"]: b for b in patch["binary_files"]}
    assert set(by_path) == {"tiny.bin", "weights.txt"}
    text = (repo / "weights.txt").read_bytes()
    assert by_path["weights.txt"] == {
        "path": "weights.txt",
        "digest": "blake3:" + blake3(text).hexdigest(),
        "size": len(text),
    }
    assert by_path["tiny.bin"]["digest"] == "blake3:" + blake3(b"ab\0cd").hexdigest()


def test_a_large_untracked_file_changes_the_dna_when_its_bytes_change(tmp_path: Path) -> None:
    from expdna.manifest.dna import compute_dna

    repo = make_repo(tmp_path / "proj")
    env = {"EXPDNA_CACHE_DIR": str(tmp_path / "cache")}
    write(repo / "data.bin", b"\1" * (2 << 20))
    first = compute_dna({"code": collect(repo, environ=env)}).sections["code"]
    assert compute_dna({"code": collect(repo, environ=env)}).sections["code"] == first
    write(repo / "data.bin", b"\2" * (2 << 20))
    assert compute_dna({"code": collect(repo, environ=env)}).sections["code"] != first


def test_outside_git_the_entry_folder_is_recorded_by_digest(tmp_path: Path) -> None:
    from expdna.collectors.context import Partial

    folder = tmp_path / "scripts"
    write(folder / "train.py", "lr = 0.1\n")
    write(folder / "lib" / "layers.py", "W = 1\n")
    write(folder / "wandb" / "run-1" / "x.py", "# output\n")
    ctx = CollectContext(cwd=folder, argv=("python", "train.py"), use_cache=False)
    with pytest.raises(Partial) as raised:
        collect_git(ctx)
    assert "not a git repository" in raised.value.reason
    entry = raised.value.section["scripts"]
    assert entry["unversioned"] is True
    assert [name for name, _ in entry["tree"]["files"]] == ["lib/layers.py", "train.py"]
    before = entry["tree"]["digest"]
    write(folder / "train.py", "lr = 0.2\n")  # an edit outside git changes the code
    with pytest.raises(Partial) as again:
        collect_git(ctx)
    assert again.value.section["scripts"]["tree"]["digest"] != before


def test_without_git_the_code_is_unknown_not_empty(tmp_path: Path) -> None:
    from expdna.collectors.context import Unknown

    repo = make_repo(tmp_path / "proj")
    ctx = CollectContext(cwd=repo, environ={"PATH": str(tmp_path / "no-bin")})
    with pytest.raises(Unknown, match="git is not installed"):
        collect_git(ctx)


def test_generate_outside_the_checkout_records_the_entry_scripts_repository(
    tmp_path: Path,
) -> None:
    # `cd /tmp && expdna generate -- python ~/proj/train.py`: the hook inside train.py finds
    # its repository from its own file; the command line finds the same one.
    repo = make_repo(tmp_path / "proj", {"train.py": "lr = 0.1\n"})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    argv = ("python", str(repo / "train.py"), "--lr", "0.1")
    from_cli = collect_git(CollectContext(cwd=outside, argv=argv, use_cache=False))
    hooked = collect_git(
        CollectContext(cwd=outside, argv=argv, caller_file=repo / "train.py", use_cache=False)
    )
    assert list(from_cli) == ["proj"] and from_cli == hooked
