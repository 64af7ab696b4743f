"""Shared fixtures: the public conformance data and real git repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

_DEFAULT_TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "testdata"


def testdata_dir() -> Path:
    return Path(os.environ.get("EXPDNA_TESTDATA", _DEFAULT_TESTDATA))


@pytest.fixture(scope="session")
def testdata() -> Path:
    """``../shared/testdata`` (or $EXPDNA_TESTDATA); skips, saying why, where it is absent."""
    path = testdata_dir()
    if not path.is_dir():
        pytest.skip(f"conformance data not found at {path} (set EXPDNA_TESTDATA)")
    return path


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
