"""Reading (versions, legacy names, unknown fields, bad input) and writing (atomic, capped)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from expdna.digest import ref_of
from expdna.errors import ManifestError, ManifestTooLargeError
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import (
    MAX_DEPTH,
    MAX_WRITE_BYTES,
    load_manifest,
    manifest_from_dict,
    parse_json,
    write_manifest,
)

BASE = {"schema_version": "1.0", "run_id": "r1", "generated_at": "2026-01-01T00:00:00Z"}


def write(tmp_path: Path, content: bytes | str, name: str = "m.json") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_unknown_fields_survive_a_round_trip(tmp_path: Path) -> None:
    doc = {
        **BASE,
        "future_section": {"x": [1, 2]},
        "hardware": {"gpus": [{"name": "H200", "nvlink": {"links": 18}}], "new_field": "v"},
        "code": {"proj": {"commit": "a" * 40, "lfs": True}},
    }
    manifest = manifest_from_dict(doc)
    out = write_manifest(manifest, tmp_path / "out.json")
    back = json.loads(out.read_text())
    assert back["future_section"] == {"x": [1, 2]}
    assert back["hardware"]["gpus"][0]["nvlink"] == {"links": 18}
    assert back["hardware"]["new_field"] == "v"
    assert back["code"]["proj"]["lfs"] is True
    assert load_manifest(out).to_dict() == manifest.to_dict()


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.7", "1.12.3"])
def test_every_1x_is_read(version: str) -> None:
    assert manifest_from_dict({**BASE, "schema_version": version}).schema_version == version


def test_legacy_cli_args_becomes_command_argv() -> None:
    manifest = manifest_from_dict({**BASE, "cli_args": ["python", "train.py"]})
    assert manifest.command.argv == ["python", "train.py"]
    assert "cli_args" not in manifest.to_dict()


def test_legacy_normalisation_does_not_edit_the_input() -> None:
    doc: dict[str, Any] = {**BASE, "command": {"cli_args": ["a"], "cwd": "/x"}}
    manifest_from_dict(doc)
    assert doc["command"] == {"cli_args": ["a"], "cwd": "/x"}


BAD: list[tuple[str, bytes, str]] = [
    ("malformed", b'{"schema_version": "1.0",', "invalid JSON"),
    ("major 2", json.dumps({**BASE, "schema_version": "2.0"}).encode(), "reads 1.x only"),
    ("no version", json.dumps({"run_id": "x"}).encode(), "no schema_version"),
    ("version not a string", json.dumps({**BASE, "schema_version": 1}).encode(), "MAJOR.MINOR"),
    (
        "nan",
        b'{"schema_version": "1.0", "run_id": "r", "generated_at": "2026-12-01T00:00:00Z", '
        b'"x": NaN}',
        "NaN is not valid JSON",
    ),
    ("infinity", b'{"schema_version": "1.0", "x": -Infinity}', "Infinity is not valid JSON"),
    (
        "duplicate keys",
        b'{"schema_version": "1.0", "run_id": "a", "run_id": "b"}',
        "duplicate key 'run_id'",
    ),
    ("invalid utf-8", b'{"schema_version": "1.0", "run_id": "\xff\xfe"}', "not valid UTF-8"),
    ("deep", b'{"schema_version":"1.0","x":' + b"[" * 20000 + b"]" * 20000 + b"}", "nested deeper"),
    ("array", b"[1, 2]", "expected a JSON object"),
    (
        "wrong type",
        json.dumps({**BASE, "command": {"argv": "not a list"}}).encode(),
        "command.argv",
    ),
    ("bad dna", json.dumps({**BASE, "dna": {"version": 1, "value": "xyz"}}).encode(), "dna.value"),
]


@pytest.mark.parametrize(("label", "content", "reason"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_clear_error(
    tmp_path: Path, label: str, content: bytes, reason: str
) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ManifestError) as err:
        load_manifest(path)
    message = str(err.value)
    assert message.startswith(str(path))
    assert reason in message
    assert "\n" not in message


def test_fifty_megabytes_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as fh:
        fh.write(b'{"schema_version": "1.0", "pad": "')
        fh.write(b"x" * (50 * 1024 * 1024))
        fh.write(b'"}')
    with pytest.raises(ManifestError, match=r"50\.0 MiB is larger than the 4 MiB limit"):
        load_manifest(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no such file"):
        load_manifest(tmp_path / "nope.json")
    with pytest.raises(ManifestError, match="is a directory"):
        load_manifest(tmp_path)


def _with_patch(text: str, extra: dict[str, Any] | None = None) -> Any:
    data = text.encode()
    doc = {
        **BASE,
        "code": {
            "proj": {
                "commit": "a" * 40,
                "dirty": True,
                "patch": {"digest": ref_of(data), "size": len(data), "text": text},
            }
        },
        **(extra or {}),
    }
    manifest = manifest_from_dict(doc)
    manifest.dna = compute_dna(manifest)
    return manifest


def test_small_manifest_keeps_its_patch_inline(tmp_path: Path) -> None:
    manifest = _with_patch("diff --git a/x b/x\n+hello\n")
    back = load_manifest(write_manifest(manifest, tmp_path / "m.json"))
    assert back.code["proj"].patch is not None
    assert back.code["proj"].patch.text == "diff --git a/x b/x\n+hello\n"
    assert back.code["proj"].patch.truncated is False


def test_over_the_cap_the_patch_is_truncated_first_and_dna_still_recomputes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = "".join(f"+line {i} of a very large generated file\n" for i in range(20000))
    manifest = _with_patch(text)
    path = write_manifest(manifest, tmp_path / "m.json")
    assert path.stat().st_size <= MAX_WRITE_BYTES
    back = load_manifest(path)
    patch = back.code["proj"].patch
    assert patch is not None and patch.truncated is True
    assert patch.size == len(text.encode()) and patch.digest == ref_of(text.encode())
    assert patch.text is not None and len(patch.text) > 10_000  # as much as fits stays
    assert back.dna is not None and compute_dna(back).value == back.dna.value
    assert "shortened code.proj.patch.text" in caplog.text


def test_other_free_text_is_shortened_next(tmp_path: Path) -> None:
    manifest = _with_patch("x" * 50_000, {"metrics": {"note": "y" * 120_000}})
    path = write_manifest(manifest, tmp_path / "m.json")
    assert path.stat().st_size <= MAX_WRITE_BYTES
    back = load_manifest(path)
    assert back.metrics["note"].endswith("[truncated by expdna: 120000 chars]")
    assert back.dna is not None and compute_dna(back).value == back.dna.value


def test_argv_is_never_shortened_in_dna_version_3(tmp_path: Path) -> None:
    """Since version 3 argv is identity: cutting it would break the stored DNA."""
    manifest = _with_patch("x" * 50_000, {"command": {"argv": ["y" * 120_000]}})
    with pytest.raises(ManifestTooLargeError):
        write_manifest(manifest, tmp_path / "m.json")


def test_never_a_file_over_the_cap(tmp_path: Path) -> None:
    huge_args = {f"k{i}": "v" * 90 for i in range(2000)}  # identity data: cannot be cut
    manifest = manifest_from_dict({**BASE, "config": {"resolved_args": huge_args}})
    target = tmp_path / "m.json"
    with pytest.raises(ManifestTooLargeError):
        write_manifest(manifest, target)
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_atomic_write_replaces_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "m.json"
    target.write_text("old")
    old_umask = os.umask(0o022)
    try:
        write_manifest(manifest_from_dict(dict(BASE)), target)
    finally:
        os.umask(old_umask)
    assert json.loads(target.read_text())["run_id"] == "r1"
    assert sorted(os.listdir(tmp_path)) == ["m.json"]
    assert target.stat().st_mode & 0o777 == 0o644  # readable by the team, as files are


def test_non_finite_and_big_numbers_are_written_as_standard_json(tmp_path: Path) -> None:
    manifest = manifest_from_dict({**BASE, "metrics": {"loss": float("nan"), "n": 2**64}})
    manifest.dna = compute_dna(manifest)
    path = write_manifest(manifest, tmp_path / "m.json")
    raw = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(c))
    assert raw["metrics"] == {"loss": "<non-finite:nan>", "n": str(2**64)}
    assert load_manifest(path).dna == manifest.dna


@pytest.mark.parametrize(("levels", "accepted"), [(MAX_DEPTH, True), (MAX_DEPTH + 1, False)])
def test_the_depth_limit_counts_containers(levels: int, accepted: bool) -> None:
    # the object itself is level 1; a leaf adds no level
    text = b'{"x":' + b"[" * (levels - 1) + b"1" + b"]" * (levels - 1) + b"}"
    if accepted:
        assert parse_json(text, "t.json")["x"]
    else:
        with pytest.raises(ManifestError, match="nested deeper"):
            parse_json(text, "t.json")
