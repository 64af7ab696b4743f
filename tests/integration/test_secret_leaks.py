"""Secrets that escaped redaction through a side door, each planted as a user would and
looked for, as bytes, in the manifest, every file of the store and stderr.

The doors: a ``--data`` URL folded by ``Path`` before redaction (``s3://k:s@b`` read as
``s3:/k:s@b``), a metric's *name*, and the checkout's directory name (``code.<name>``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.factories import git, run

GITHUB_TOKEN = "ghp_" + "f" * 36


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    (root / "train.py").write_text("print(1)\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


def _holders(*roots: Path) -> Iterable[Path]:
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)


def assert_nowhere(secrets: Iterable[str], *roots: Path, stderr: str = "") -> None:
    """No secret in any file under ``roots`` (bytes: SQLite pages too) nor in ``stderr``."""
    for secret in secrets:
        assert secret not in stderr, f"{secret!r} in stderr"
        for path in _holders(*roots):
            assert secret.encode() not in path.read_bytes(), f"{secret!r} in {path}"


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("https://u:Pa55w0rdXYZ@example.com/ds", "Pa55w0rdXYZ"),
        ("s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI@b/x", "wJalrXUtnFEMI"),
    ],
)
def test_credentials_of_a_missing_data_url_are_hidden(
    url: str, secret: str, tmp_path: Path
) -> None:
    repo, store, out = _repo(tmp_path / "repo"), tmp_path / "store", tmp_path / "m.json"
    done = run(
        store,
        "generate",
        "--record",
        "-o",
        str(out),
        "--data",
        url,
        "--",
        "python",
        "train.py",
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr
    assert "no such file or directory" in out.read_text()  # the warning is still there
    assert_nowhere([secret], out, store, stderr=done.stderr + done.stdout)
