"""Secrets that escaped redaction through a side door, each planted as a user would and
looked for, as bytes, in the manifest, every file of the store and stderr.

The doors: a ``--data`` URL folded by ``Path`` before redaction (``s3://k:s@b`` read as
``s3:/k:s@b``), a metric's *name*, and the checkout's directory name (``code.<name>``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.factories import EXPDNA, git, run

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


def run_env(
    store: Path, env: dict[str, str], *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``expdna ARGS`` as a process with ``env`` (an ``EXPDNA_METRICS_FILE``) on ``store``."""
    env = {**env, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    return subprocess.run(
        [EXPDNA, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


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


def test_a_metric_named_with_a_secret_is_hidden(tmp_path: Path) -> None:
    repo, store = _repo(tmp_path / "repo"), tmp_path / "store"
    script = (
        "import expdna\n"
        f"with expdna.track({{'lr': 1}}, output_dir={str(tmp_path / 'out')!r}) as run:\n"
        f"    run.log_final(**{{'acc/https://bob:Pa55w0rd@h/ds': 0.9, {GITHUB_TOKEN!r}: 0.5}})\n"
    )
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=repo
    )
    assert done.returncode == 0, done.stderr
    manifests = list((tmp_path / "out").glob("manifest_*.json"))
    assert manifests and "acc/https://***@h/ds" in manifests[0].read_text()
    assert_nowhere(["Pa55w0rd", GITHUB_TOKEN[4:]], tmp_path / "out", store, stderr=done.stderr)


def test_a_metrics_file_name_with_a_secret_is_hidden(tmp_path: Path) -> None:
    repo, store, out = _repo(tmp_path / "repo"), tmp_path / "store", tmp_path / "out"
    metrics = tmp_path / "final_metrics"  # not *.json: the session scan reads those
    script = (
        f"import json; json.dump({{{GITHUB_TOKEN!r}: 0.5, 'acc': 1}}, open({str(metrics)!r}, 'w'))"
    )
    env = {**os.environ, "EXPDNA_METRICS_FILE": str(metrics)}
    done = run_env(
        store, env, "run", "--output-dir", str(out), "--", sys.executable, "-c", script, cwd=repo
    )
    assert done.returncode == 0, done.stderr
    assert '"acc"' in "".join(p.read_text() for p in out.glob("*.json"))
    assert_nowhere([GITHUB_TOKEN[4:]], out, store, stderr=done.stderr)


def test_a_checkout_named_like_a_token_is_hidden(tmp_path: Path) -> None:
    repo, store, out = _repo(tmp_path / GITHUB_TOKEN), tmp_path / "store", tmp_path / "m.json"
    done = run(store, "generate", "--record", "-o", str(out), "--", "python", "train.py", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert_nowhere([GITHUB_TOKEN[4:]], out, store, stderr=done.stderr)


def test_a_metric_name_handed_to_the_store_directly_is_hidden(tmp_path: Path) -> None:
    from expdna.store import Store
    from tests.factories import manifest_of, synthetic_doc

    manifest = manifest_of(synthetic_doc(1))
    with Store.open(tmp_path / "store") as store:
        store.record(manifest)
        now = store.record_metrics(manifest.run_id, {f"acc/{GITHUB_TOKEN}": 0.9})
    assert now["acc/ghp_***"] == 0.9 and not any(GITHUB_TOKEN in name for name in now)
    assert_nowhere([GITHUB_TOKEN], tmp_path / "store")
