"""``expdna generate --data`` and ``expdna data verify`` through the installed command."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.factories import EXPDNA


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXPDNA, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "EXPDNA_CACHE_DIR": str(cwd / "cache"), **(env or {})},
    )


def generate(cwd: Path, *data: str, name: str = "m.json") -> dict[str, Any]:
    args = [a for d in data for a in ("--data", d)]
    done = run(cwd, "generate", "--output", name, "--json", *args)
    assert done.returncode == 0, done.stderr
    return dict(json.loads((cwd / name).read_text()))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    ds = tmp_path / "ds"
    (ds / "sub").mkdir(parents=True)
    (ds / "keep.txt").write_text("keep")
    (ds / "edit.txt").write_text("before")
    (ds / "sub" / "gone.txt").write_text("gone")
    pq.write_table(pa.table({"x": [1, 2, 3]}), ds / "t.parquet")
    return tmp_path


def test_unchanged_data_verifies(work: Path) -> None:
    doc = generate(work, "ds")
    [dataset] = doc["data"]["datasets"]
    assert dataset["files"] == 4 and dataset["tables"][0]["rows"] == 3
    done = run(work, "data", "verify", "m.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "verdict: OK (1 dataset match)"
    assert done.stdout.startswith(f"ok           {work / 'ds'}: 4 files")


def test_every_changed_file_is_named(work: Path) -> None:
    generate(work, "ds")
    (work / "ds" / "edit.txt").write_text("after!")
    (work / "ds" / "sub" / "gone.txt").unlink()
    (work / "ds" / "new.txt").write_text("new")
    done = run(work, "data", "verify", "m.json")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "  changed  edit.txt" in lines
    assert "  missing  sub/gone.txt" in lines
    assert "  new      new.txt" in lines
    assert lines[-1] == "verdict: MISMATCH (1 of 1 datasets)"
    report = json.loads(run(work, "data", "verify", "m.json", "--json").stdout)
    assert report["ok"] is False
    [check] = report["datasets"]
    assert (check["status"], check["detail"]) == ("changed", "files")
    assert (check["changed"], check["missing"], check["new"]) == (
        ["edit.txt"],
        ["sub/gone.txt"],
        ["new.txt"],
    )


def test_verify_with_a_fresh_cache_and_no_cache(work: Path) -> None:
    generate(work, "ds")
    other = {"EXPDNA_CACHE_DIR": str(work / "other-cache")}
    assert run(work, "data", "verify", "m.json", env=other).returncode == 0
    assert run(work, "data", "verify", "m.json", "--no-cache").returncode == 0
    (work / "ds" / "keep.txt").write_text("KEEP")
    done = run(work, "data", "verify", "m.json", "--no-cache", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["datasets"][0]["changed"] == ["keep.txt"]


def test_large_dataset_without_its_listing_reports_counts(tmp_path: Path) -> None:
    ds = tmp_path / "big"
    ds.mkdir()
    for i in range(201):  # one more than the manifest embeds
        (ds / f"f{i:03d}").write_text(str(i))
    doc = generate(tmp_path, "big")
    assert "listing" not in doc["data"]["datasets"][0]
    (ds / "f000").write_text("changed")
    cached = run(tmp_path, "data", "verify", "m.json", "--json")
    assert cached.returncode == 1
    assert json.loads(cached.stdout)["datasets"][0]["changed"] == ["f000"]
    bare = run(
        tmp_path,
        "data",
        "verify",
        "m.json",
        env={
            "EXPDNA_CACHE_DIR": str(tmp_path / "empty"),
            "EXPDNA_STORE": str(tmp_path / "no-store"),
        },
    )
    assert bare.returncode == 1
    assert "201 files, " in bare.stdout and "per-file detail needs" in bare.stdout


def test_listing_from_the_store_names_files(tmp_path: Path) -> None:
    from expdna.collectors.data import listing_for
    from expdna.store.objects.directory import ObjectDir

    ds = tmp_path / "big"
    ds.mkdir()
    for i in range(201):
        (ds / f"f{i:03d}").write_text(str(i))
    generate(tmp_path, "big")
    store = tmp_path / "store"
    ObjectDir(store / "objects").put(listing_for(ds, use_cache=False))  # as `record` keeps it
    (ds / "f007").unlink()
    done = run(
        tmp_path,
        "data",
        "verify",
        "m.json",
        "--json",
        env={"EXPDNA_CACHE_DIR": str(tmp_path / "empty"), "EXPDNA_STORE": str(store)},
    )
    assert done.returncode == 1
    [check] = json.loads(done.stdout)["datasets"]
    assert (check["detail"], check["missing"]) == ("files", ["f007"])


def test_moved_root_with_data_root(work: Path) -> None:
    generate(work, "ds")
    (work / "ds").rename(work / "elsewhere")
    missing = run(work, "data", "verify", "m.json")
    assert missing.returncode == 1
    assert missing.stdout.startswith(f"missing      {work / 'ds'}")
    moved = run(
        work, "data", "verify", "m.json", "--data-root", f"{work / 'ds'}={work / 'elsewhere'}"
    )
    assert moved.returncode == 0, moved.stdout
    assert f"(at {work / 'elsewhere'})" in moved.stdout


def test_bad_input_exits_2(work: Path) -> None:
    (work / "bad.json").write_text("{not json")
    done = run(work, "data", "verify", "bad.json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("expdna: error: bad.json: invalid JSON")
    assert len(done.stderr.strip().splitlines()) == 1
    assert run(work, "data", "verify", "missing.json").returncode == 2
    generate(work, "ds")
    bad_root = run(work, "data", "verify", "m.json", "--data-root", "no-equals-sign")
    assert bad_root.returncode == 2 and "OLD=NEW" in bad_root.stderr


def test_generate_no_cache_flag(work: Path) -> None:
    assert run(work, "generate", "-o", "a.json", "--data", "ds").returncode == 0
    done = run(work, "generate", "-o", "b.json", "--no-cache", "--data", "ds")
    assert done.returncode == 0, done.stderr
    a, b = (json.loads((work / n).read_text())["data"] for n in ("a.json", "b.json"))
    assert a == b


def test_progress_line_on_a_terminal_only(tmp_path: Path) -> None:
    ds = tmp_path / "many"
    ds.mkdir()
    for i in range(1001):  # over the 1,000-file threshold
        (ds / f"f{i}").write_text(str(i))
    args = [EXPDNA, "data", "verify", "m.json"]
    generate(tmp_path, "many")
    piped = run(tmp_path, "data", "verify", "m.json", "--no-cache")
    assert "hashing" not in piped.stderr
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [*args, "--no-cache"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=secondary,
        env={**os.environ, "EXPDNA_CACHE_DIR": str(tmp_path / "cache")},
    )
    os.close(secondary)
    seen = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # EIO once the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert b"expdna: hashing " in seen and b" files, " in seen
    assert seen.endswith(b"\r\x1b[K")  # the line is cleared when done
