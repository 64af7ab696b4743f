"""Hostile input through the installed ``expdna`` command: one line, exit 2, nothing written.

Every subprocess has a timeout: a FIFO given as a manifest used to block ``open`` forever.
Device nodes are made with ``mknod`` in a temp directory (the tests run as root).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, write_manifest
from tests.factories import EXPDNA, synthetic

TIMEOUT_S = 60


def expdna(store: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    return subprocess.run(
        [EXPDNA, *args], capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=cwd
    )


def one_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("expdna: error: "), done.stderr
    for word in words:
        assert word in lines[0]


def null_device(path: Path) -> Path:
    """A character device like /dev/null (1, 3), made in a temp directory."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


@pytest.fixture()
def good(tmp_path: Path) -> Path:
    return write_manifest(synthetic(700), tmp_path / "good.json")


@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "manifest_fifo.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
@pytest.mark.parametrize(
    "command",
    [
        ("check", "{bad}"),
        ("record", "{bad}"),
        ("diff", "{bad}", "{good}"),
        ("data", "verify", "{bad}"),
        ("twins", "{bad}"),
    ],
    ids=lambda c: "-".join(p for p in c if not p.startswith("{")),
)
def test_a_non_regular_manifest_is_refused_without_reading(
    tmp_path: Path, good: Path, kind: str, command: tuple[str, ...]
) -> None:
    bad = tmp_path / f"manifest_{kind}.json"
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "directory":
        bad.mkdir()
    else:
        null_device(bad)
    store = tmp_path / "store"
    args = [a.format(bad=bad, good=good) for a in command]
    done = expdna(store, *args, cwd=tmp_path)
    reason = "is a directory" if kind == "directory" else "not a regular file"
    one_error(done, str(bad), reason)
    assert not store.exists()  # nothing written, not even an empty store


def test_scan_passes_over_a_fifo_and_records_the_rest(tmp_path: Path, fifo: Path) -> None:
    write_manifest(synthetic(701), tmp_path / "manifest_good.json")
    done = expdna(tmp_path / "store", "record", "--scan", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "recorded 1, skipped 0, failed 0"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("target", ["device", "fifo", "symlink"])
def test_generate_never_replaces_a_device_or_fifo(tmp_path: Path, target: str) -> None:
    if target == "fifo":
        path = tmp_path / "out"
        os.mkfifo(path)
    elif target == "device":
        path = null_device(tmp_path / "out")
    else:
        path = tmp_path / "link"
        path.symlink_to(null_device(tmp_path / "null"))
    done = expdna(tmp_path / "store", "generate", "--output", str(path), cwd=tmp_path)
    one_error(done, str(path), "not a regular file", "refusing to replace it")
    mode = os.stat(path).st_mode
    assert stat.S_ISFIFO(mode) if target == "fifo" else stat.S_ISCHR(mode)
    if target == "symlink":
        assert path.is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_generate_still_writes_a_regular_file_and_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old")
    done = expdna(tmp_path / "store", "generate", "--output", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text())["run_id"]


def test_export_never_replaces_a_device(tmp_path: Path, good: Path) -> None:
    pytest.importorskip("pyarrow")
    store = tmp_path / "store"
    assert expdna(store, "record", str(good), cwd=tmp_path).returncode == 0
    device = null_device(tmp_path / "runs.parquet")
    done = expdna(store, "export", "--parquet", str(device), cwd=tmp_path)
    one_error(done, str(device), "not a regular file (a character device)")
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []
    written = tmp_path / "ok.parquet"
    ok = expdna(store, "export", "--parquet", str(written), cwd=tmp_path)
    assert ok.returncode == 0 and written.is_file(), ok.stderr


def _edited(good: Path, path: Path, edit: str) -> Path:
    """``good`` with ``edit`` applied to its JSON text (escapes stay escapes)."""
    doc = json.loads(good.read_text())
    if edit == "surrogate-value":
        doc["command"]["argv"].append("\ud800")
    elif edit == "surrogate-key":
        doc["config"]["resolved_args"]["\udfff"] = 1
    else:
        doc["generated_at"] = "0001-01-01T00:00:00+01:00"
    # ensure_ascii writes the lone surrogate as the six characters \ud800
    path.write_text(json.dumps(doc, ensure_ascii=True))
    return path


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ("surrogate-value", ["lone surrogate in command.argv.", "not valid Unicode"]),
        ("surrogate-key", ["lone surrogate in config.resolved_args.\\udfff"]),
    ],
)
@pytest.mark.parametrize("command", ["record", "diff", "check"])
def test_a_lone_surrogate_is_one_line(
    tmp_path: Path, good: Path, edit: str, words: list[str], command: str
) -> None:
    bad = _edited(good, tmp_path / "bad.json", edit)
    args = [command, str(bad)] + ([str(good)] if command == "diff" else [])
    store = tmp_path / "store"
    one_error(expdna(store, *args, cwd=tmp_path), str(bad), *words)
    assert not store.exists()


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("run_id", "../../x;rm -rf ~", "run id '../../x;rm -rf ~' is not usable"),
        ("generated_at", "yesterday\ntouch PWNED", "'yesterday\\ntouch PWNED' is not an ISO"),
    ],
)
@pytest.mark.parametrize("command", ["record", "diff", "check", "rerun"])
def test_every_reader_refuses_what_the_store_refuses(
    tmp_path: Path, good: Path, field: str, value: str, said: str, command: str
) -> None:
    """check, rerun and diff once showed a run id or time that record refused."""
    doc = json.loads(good.read_text())
    doc[field] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    args = {"diff": [str(good)], "rerun": ["--dry-run"]}.get(command, [])
    store = tmp_path / "store"
    before = sorted(tmp_path.iterdir())
    one_error(expdna(store, command, str(bad), *args, cwd=tmp_path), str(bad), f"{field}: {said}")
    assert sorted(tmp_path.iterdir()) == before and not store.exists()


def test_a_surrogate_pair_is_still_a_character(tmp_path: Path) -> None:
    doc = synthetic(702).to_dict()
    doc["command"]["argv"].append("\U0001f600")
    doc["dna"] = compute_dna(manifest_from_dict(doc)).model_dump()  # argv is identity (DNA v3)
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(doc, ensure_ascii=True))  # "\ud83d\ude00"
    assert "\\ud83d\\ude00" in path.read_text()
    done = expdna(tmp_path / "store", "record", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_time_before_year_one_in_utc_is_one_line(tmp_path: Path, good: Path) -> None:
    store = tmp_path / "store"
    bad = _edited(good, tmp_path / "old.json", "time")
    one_error(expdna(store, "record", str(bad), cwd=tmp_path), str(bad), "out of range")
    assert expdna(store, "record", str(good), cwd=tmp_path).returncode == 0
    since = "0001-01-01T00:00:00+01:00"
    one_error(expdna(store, "runs", "--since", since, cwd=tmp_path), "--since", "out of range")
    late = expdna(store, "runs", "--since", "0001-01-01T00:00:00-01:00", cwd=tmp_path)
    assert late.returncode == 0 and synthetic(700).run_id in late.stdout


HUGE = 50_000


@pytest.mark.parametrize(
    ("field", "said"),
    [
        ("run_id", "run id"),
        ("parent", "lineage parent"),
        ("generated_at", "generated_at"),
        ("nul_key", "NUL character in config.resolved_args."),
        ("duplicate_key", "duplicate key"),
    ],
)
def test_an_error_line_quotes_a_hostile_value_cut_short(
    tmp_path: Path, good: Path, field: str, said: str
) -> None:
    doc = json.loads(good.read_text())
    doc.pop("dna")
    text = json.dumps(doc)
    if field == "run_id":
        doc["run_id"] = "x" * HUGE
    elif field == "parent":
        doc["lineage"] = [{"relation": "derived_from", "parent": "p" * HUGE}]
    elif field == "generated_at":
        doc["generated_at"] = "2" * HUGE
    elif field == "nul_key":
        doc["config"]["resolved_args"]["k" * HUGE] = "a\x00b"
    if field == "duplicate_key":  # the same long key twice in one object
        key = json.dumps("d" * HUGE)
        text = text[:-1] + f", {key}: 1, {key}: 2}}"
    else:
        text = json.dumps(doc)
    bad = tmp_path / "hostile.json"
    bad.write_text(text)
    done = expdna(tmp_path / "store", "record", str(bad), cwd=tmp_path)
    one_error(done, str(bad), said, "… (", " characters)")
    assert len(done.stderr) < 400
