"""Shared fixtures: the public conformance data and real git repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

#: The public data the tests read (see data/README.md): part of the repository, so a
#: missing file is a failure, never a skip.
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def testdata() -> Path:
    """``tests/data``: the JCS vectors and nvidia-smi captures (see its README)."""
    return DATA


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository with one commit."""
    path = tmp_path / "proj"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "train.py").write_text("print('train')\n")
    git(path, "add", "train.py")
    git(path, "commit", "-q", "-m", "first")
    return path
