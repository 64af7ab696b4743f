"""The session-end detect-secrets scan finds a leak, and passes what redaction wrote."""

from __future__ import annotations

import json
import random
import string
import tempfile
from pathlib import Path

from expdna.manifest.redact import redact_tree
from tests.secret_scan import produced_files, scan

_RNG = random.Random(5)


def _token(prefix: str, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return prefix + "".join(_RNG.choice(alphabet) for _ in range(n))


def _doc() -> dict[str, object]:
    return {
        "command": {"argv": ["train.py", "--remote", _token("ghp_", 36)]},
        "config": {
            "selected_env": {
                "AWS_ACCESS_KEY_ID": _token("AKIA", 16, string.ascii_uppercase + string.digits),
                "HF_TOKEN": _token("hf_", 34),
            }
        },
        "dna": {"value": "".join(_RNG.choice("0123456789abcdef") for _ in range(64))},
    }


def test_a_leaked_manifest_and_store_object_are_found() -> None:
    # Outside pytest's temporary directory, which the session-end scan reads.
    with tempfile.TemporaryDirectory() as tmp:
        _leak_and_scan(Path(tmp))


def _leak_and_scan(tmp_path: Path) -> None:
    store = tmp_path / "store" / "objects" / "ab"
    store.mkdir(parents=True)
    (tmp_path / "manifest.json").write_text(json.dumps(_doc(), indent=1))
    (store / ("c" * 62)).write_text(json.dumps(_doc(), indent=1))
    (tmp_path / "notes.txt").write_text(json.dumps(_doc()))  # neither: not scanned
    files = list(produced_files(tmp_path))
    assert sorted(f.name for f in files) == ["c" * 62, "manifest.json"]
    kinds = {(f.path.name, f.kind) for f in scan(files)}
    assert ("manifest.json", "GitHub Token") in kinds
    assert ("manifest.json", "AWS Access Key") in kinds
    # (detect-secrets reports a GitHub token by its prefix, so once for both files)
    assert ("c" * 62, "AWS Access Key") in kinds


def test_a_redacted_manifest_passes(tmp_path: Path) -> None:
    redacted, paths = redact_tree(_doc())
    assert len(paths) == 3
    (tmp_path / "manifest.json").write_text(json.dumps(redacted, indent=1))
    assert scan(produced_files(tmp_path)) == []
