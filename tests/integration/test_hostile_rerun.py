"""rerun on anyone's manifest: text is data in the script, loader variables are never
applied, a smuggled ``sitecustomize.py`` does not run; through the installed command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from expdna.compare.rerun import render_script
from expdna.errors import ManifestError
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, write_manifest
from tests.integration.test_compare_cli import committed, expdna, generate
from tests.integration.test_compare_cli import out as out  # the fixture

BASH = shutil.which("bash")
ESC = "\x1b"


def resealed(path: Path, edit: Any) -> Path:
    """The manifest at ``path`` after ``edit(doc)``, its DNA recomputed as an attacker would."""
    doc = json.loads(path.read_text())
    edit(doc)
    doc.pop("dna", None)
    manifest = manifest_from_dict(doc)
    manifest.dna = compute_dna(manifest)
    return write_manifest(manifest, path)


def test_a_smuggled_sitecustomize_does_not_run(repo: Path, out: Path, tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "PWNED"
    (evil / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    code = "import os; print(os.environ.get('NCCL_ALGO'), os.environ.get('PYTHONPATH'))\n"
    manifest = generate(repo, out / "m.json", "python3", committed(repo, "show.py", code))

    def smuggle(doc: dict[str, Any]) -> None:
        doc["config"]["selected_env"].update(
            {"PYTHONPATH": str(evil), "LD_PRELOAD": str(evil / "x.so"), "NCCL_ALGO": "Tree"}
        )

    resealed(manifest, smuggle)
    ours = str(tmp_path / "ours")  # the caller's own PYTHONPATH stays as it was
    done = expdna(
        "rerun", manifest, "--confirm", "--trust-command", cwd=repo, env={"PYTHONPATH": ours}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Tree", ours]  # allowed applied; loaders never
    applied = next(line for line in done.stderr.splitlines() if "did not apply" in line)
    assert "PYTHONPATH" in applied and "LD_PRELOAD" in applied, done.stderr
    assert not marker.exists()
    script = expdna("rerun", manifest, "--dry-run", cwd=repo).stdout
    assert (
        "# NOT APPLIED: PYTHONPATH is in the manifest, but it changes what code loads; "
        "set it by hand" in script
    )
    assert f"#   only if you trust it: export PYTHONPATH={evil}" in script
    assert "\nexport NCCL_ALGO=Tree\n" in script and "\nexport PYTHONPATH" not in script


@pytest.mark.parametrize("name", ["A=B", "NCCL_\x00X"])
def test_an_environment_name_no_process_can_hold_is_one_line(
    repo: Path, out: Path, name: str
) -> None:
    manifest = generate(repo, out / "m.json", "true")
    if "\x00" in name:  # the escaped form is how a NUL is written at all
        name = "bytes:NCCL_%00X"
    resealed(manifest, lambda doc: doc["config"]["selected_env"].update({name: "1"}))
    done = expdna("rerun", manifest, "--confirm", cwd=repo)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"expdna: error: config.selected_env: {name!r} is not an environment variable name "
        "(empty, or holds '=' or NUL)"
    ]


def test_an_edited_manifest_is_refused_by_its_dna(repo: Path, out: Path) -> None:
    manifest = generate(repo, out / "m.json", "python", committed(repo, "noop.py", "pass\n"))
    doc = json.loads(manifest.read_text())
    doc["config"]["selected_env"]["NCCL_ALGO"] = "Tree"  # edited, not resealed
    manifest.write_text(json.dumps(doc))
    done = expdna("rerun", manifest, "--confirm", cwd=repo)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("the manifest was corrupted or edited")


def test_a_newline_in_a_digest_is_refused_by_the_schema(tmp_path: Path) -> None:
    from tests.factories import synthetic

    doc = synthetic(900).to_dict()
    doc["code"]["train"]["patch"]["digest"] += "\ntouch PWNED"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    done = expdna("rerun", path, "--dry-run", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"expdna: error: {path}: invalid manifest: code.train.patch.digest: String should "
        "match pattern '^blake3:[0-9a-f]{64}$'"
    ]


NEWLINE = "x\ntouch PWNED\n"


def hostile_doc() -> dict[str, Any]:
    """Every manifest text the script shows, each trying to leave its comment or quote."""
    return {
        "schema_version": "1.1",
        "run_id": "20260805_143025_1c8e2fb_k3f9",
        "generated_at": "2026-08-05T14:30:25Z",  # with NEWLINE: refused (below)
        "command": {
            "argv": ["printf", "%s|", f"red {ESC}[31mRED{ESC}[0m", "a\rb", "new\nline", "'"],
            "cwd": "/w" + NEWLINE,
        },
        "code": {
            "repo" + NEWLINE: {
                "commit": "c" * 40 + NEWLINE,
                "branch": "main" + NEWLINE,
                "remote": "https://example.com/r.git" + NEWLINE,
                "dirty": True,
                "submodules": [{"path": "sub" + NEWLINE, "commit": "d" * 40 + NEWLINE}],
                "patch": {
                    "digest": "blake3:" + "e" * 64,
                    "size": 9,
                    "text": f"+ok\n+{ESC}[2K{ESC}[1Ahidden\n",
                    "binary_files": [{"path": "b.bin" + NEWLINE}],
                },
            }
        },
        "config": {"selected_env": {"NCCL_X": "v" + NEWLINE + f"{ESC}]0;title\a"}},
    }


@pytest.mark.skipif(BASH is None, reason="$'...' words need bash, zsh or ksh")
def test_no_manifest_text_leaves_its_comment_or_quote(tmp_path: Path) -> None:
    doc = hostile_doc()
    for field in ("generated_at", "run_id"):  # not text to show: refused as the store does
        with pytest.raises(ManifestError, match=f"invalid manifest: {field}: .* is not"):
            manifest_from_dict({**doc, field: doc[field] + NEWLINE})
    manifest = manifest_from_dict(doc)
    manifest.dna = compute_dna(manifest)
    script = render_script(manifest)
    assert script.startswith("#!/bin/bash\n")
    # no control character but newline and tab reaches the terminal or the pipe
    assert all(ch.isprintable() or ch in "\n\t" for ch in script)
    assert "'red '$'\\x1b'" not in script and "$'red \\x1b[31mRED\\x1b[0m'" in script
    path = tmp_path / "rerun.sh"
    path.write_text(script)
    assert BASH is not None
    done = subprocess.run(
        [BASH, str(path)], cwd=tmp_path, capture_output=True, check=True, timeout=30
    )
    assert not (tmp_path / "PWNED").exists()
    argv = doc["command"]["argv"]
    assert done.stdout == "".join(f"{word}|" for word in argv[2:]).encode()
    # through the command, to a pipe: the escapes are still there, as escapes
    file = write_manifest(manifest, tmp_path / "m.json")
    piped = expdna("rerun", file, "--dry-run", cwd=tmp_path)
    assert piped.returncode == 0 and piped.stdout == script
    assert sys.executable  # the interpreter ran the command under test, not a stand-in
