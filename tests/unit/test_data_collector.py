"""The data collector on real files, real Parquet and Arrow IPC files written by pyarrow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from blake3 import blake3

from expdna.collectors import data as data_mod
from expdna.collectors import tabular
from expdna.collectors.context import CollectContext, Partial
from expdna.collectors.data import (
    Progress,
    collect_data,
    digest_root,
    listing_bytes,
    listing_for,
    parse_listing,
)
from expdna.compare.data import DataCheck, resolve_root, verify_data
from expdna.digest import hashing, ref_of
from expdna.digest.cache import DigestCache, stat_key


def later() -> int:
    """The clock of "a later run": every file written so far is past the racy window."""
    return time.time_ns() + 60 * 10**9


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("EXPDNA_CACHE_DIR", str(path))
    return path


def write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def collect(tmp_path: Path, *paths: str | Path, **kw: Any) -> dict[str, Any]:
    ctx = CollectContext(
        cwd=tmp_path, data=tuple(Path(p) for p in paths), environ=dict(os.environ), **kw
    )
    return collect_data(ctx)


def table(n: int = 10) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([f"n{i}" for i in range(n)]),
            "tags": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32())),
            "point": pa.array(
                [{"x": float(i), "y": None} for i in range(n)],
                pa.struct([("x", pa.float64()), ("y", pa.string())]),
            ),
        }
    )


# -- the listing ------------------------------------------------------------------------


def test_listing_format_and_digest(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    files = {"b.txt": b"bee", "a/z.bin": os.urandom(300), "a/b/c": b"", "a.txt": b"a"}
    write(root, files)
    blob = listing_for(root)
    expected = "".join(
        f"{rel}\t{len(files[rel])}\tblake3:{blake3(files[rel]).hexdigest()}\n"
        for rel in sorted(files)
    ).encode()
    assert blob == expected
    [entry] = collect(tmp_path, "ds")["datasets"]
    assert entry["digest"] == ref_of(blob)
    assert (entry["files"], entry["bytes"]) == (4, sum(map(len, files.values())))
    assert entry["root"] == str(root)  # absolute, made from cwd + the path given
    assert entry["listing"] == [
        [rel, len(files[rel]), f"blake3:{blake3(files[rel]).hexdigest()}"] for rel in sorted(files)
    ]


def test_single_file_dataset(tmp_path: Path) -> None:
    (tmp_path / "one.bin").write_bytes(b"12345")
    [entry] = collect(tmp_path, "one.bin")["datasets"]
    line = f"one.bin\t5\tblake3:{blake3(b'12345').hexdigest()}\n".encode()
    assert entry["digest"] == ref_of(line) and entry["files"] == 1


def test_the_walk_keys_files_as_the_cache_does(tmp_path: Path) -> None:
    """The walk inlines stat_key; a directory's files and a lone file get the same key."""
    write(tmp_path / "ds", {"a": b"a", "sub/b": b"bb"})
    scan = digest_root(tmp_path / "ds")
    assert [item[1:] for item in scan.items] == [
        stat_key(os.stat(tmp_path / "ds" / rel)) for rel in ("a", "sub/b")
    ]
    lone = digest_root(tmp_path / "ds" / "a")
    assert lone.items == [("a", *stat_key(os.stat(tmp_path / "ds" / "a")))]


def test_large_file_in_slices_matches_b3sum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hashing, "CHUNK_BYTES", 1 << 20)
    data = os.urandom(3 * (1 << 20) + 12345)
    (tmp_path / "big.bin").write_bytes(data)
    seen: list[Progress] = []
    scan = digest_root(tmp_path / "big.bin", progress=seen.append)
    assert scan.rows == [("big.bin", len(data), blake3(data).hexdigest())]
    assert seen[-1].done and seen[-1].bytes_done == len(data) == seen[-1].bytes_total
    assert seen[-1].files_done == 1


def test_names_with_tabs_newlines_and_backslashes_round_trip(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    names = ["tab\there", "new\nline", "back\\slash", "plain", "cr\rname"]
    write(root, {n: n.encode() for n in names})
    blob = listing_for(root)
    assert blob.count(b"\n") == len(names)
    assert b"tab\\there\t" in blob and b"new\\nline\t" in blob and b"back\\\\slash\t" in blob
    rows = parse_listing(blob)
    assert [r[0] for r in rows] == sorted(names)
    assert listing_bytes(rows) == blob


def test_non_utf8_names_are_listed_but_not_embedded(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    (root / os.fsdecode(b"caf\xe9.bin")).write_bytes(b"x")
    blob = listing_for(root)
    assert blob.startswith(b"caf\xe9.bin\t1\t")
    assert parse_listing(blob)[0][0] == os.fsdecode(b"caf\xe9.bin")
    [entry] = collect(tmp_path, "ds")["datasets"]
    assert entry["digest"] == ref_of(blob) and "listing" not in entry


def test_symlinks_followed_cycles_and_special_files_skipped(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write(root, {"real/a.txt": b"a"})
    (tmp_path / "outside.txt").write_bytes(b"outside")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    os.symlink(root, root / "real" / "loop")  # a cycle back to the root
    os.symlink(tmp_path / "gone", root / "broken")
    os.mkfifo(root / "fifo")
    with pytest.raises(Partial) as caught:
        collect(tmp_path, "ds")
    [entry] = caught.value.section["datasets"]  # type: ignore[misc]
    rels = [row[0] for row in entry["listing"]]
    assert "link.txt" in rels and "real/a.txt" in rels
    assert "broken" not in rels and "fifo" not in rels
    assert entry["digest"] is not None  # skipped entries are named, the digest stands
    assert "broken: broken symlink" in caught.value.reason
    assert "fifo: not a regular file" in caught.value.reason


def test_unreadable_file_leaves_no_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ds"
    write(root, {"a": b"a", "b": b"b"})
    real = hashing.hash_file

    def vanish(path: str, cache: Any = None, *, on_bytes: Any = None) -> tuple[str, int]:
        if path.endswith("/b"):  # removed between the walk and the read
            os.unlink(path)
        return real(path, cache, on_bytes=on_bytes)

    monkeypatch.setattr(data_mod, "hash_file", vanish)
    scan = digest_root(root)
    assert not scan.complete and scan.digest() is None
    assert any(p.startswith("b: cannot read") for p in scan.problems)
    assert scan.counts() == {"files": 2, "bytes": 2}


def test_missing_path_is_partial(tmp_path: Path) -> None:
    write(tmp_path / "ds", {"a": b"a"})
    with pytest.raises(Partial) as caught:
        collect(tmp_path, "ds", "nope")
    assert "nope: no such file or directory" in caught.value.reason
    assert len(caught.value.section["datasets"]) == 1  # type: ignore[arg-type]


def test_no_data_is_an_empty_section(tmp_path: Path, cache_dir: Path) -> None:
    assert collect(tmp_path) == {"datasets": []}
    assert not cache_dir.exists()  # the cache is not even opened


def test_listing_embedded_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_mod, "EMBED_LISTING_FILES", 3)
    write(tmp_path / "a", {"1": b"1", "2": b"2"})
    write(tmp_path / "b", {"1": b"1", "2": b"2"})
    write(tmp_path / "c", {"1": b"1"})
    a, b, c = collect(tmp_path, "a", "b", "c")["datasets"]
    assert "listing" in a and "listing" not in b and "listing" in c


def test_deadline_stops_hashing_and_the_next_run_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write(root, {f"f{i}": os.urandom(10) for i in range(5)})
    cache = DigestCache.open(tmp_path / "cache")
    assert cache is not None
    stopped = digest_root(root, cache=cache, stop_at=time.monotonic(), now_ns=later())
    assert not stopped.complete and stopped.digest() is None
    assert stopped.hashed == 1  # the deadline is checked after each file
    assert "stopped at the collection deadline after hashing 1 of 5" in stopped.problems[0]
    assert stopped.counts() == {"files": 5, "bytes": 50}
    done = digest_root(root, cache=cache, now_ns=later())
    assert (done.hashed, done.cached) == (4, 1) and done.digest() == digest_root(root).digest()
    cache.close()


def test_collector_reports_a_deadline_stop_as_partial(tmp_path: Path) -> None:
    write(tmp_path / "ds", {f"f{i}": b"x" for i in range(3)})
    with pytest.raises(Partial) as caught:
        collect(tmp_path, "ds", timeout_s=0.0)
    [entry] = caught.value.section["datasets"]  # type: ignore[misc]
    assert entry["digest"] is None and entry["files"] == 3
    assert "deadline" in caught.value.reason


def test_progress_reports_what_needs_hashing(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write(root, {f"f{i}": b"abc" for i in range(4)})
    seen: list[Progress] = []
    collect(tmp_path, "ds", progress=seen.append)
    assert seen[-1] == Progress(str(root), 4, 4, 12, 12, True)
    seen.clear()
    collect(tmp_path, "ds", progress=seen.append)  # racy files: hashed again, reported again
    assert seen and seen[-1].files_total == 4


def test_no_cache_rehashes_a_poisoned_cache(tmp_path: Path, cache_dir: Path) -> None:
    root = tmp_path / "ds"
    write(root, {"a": b"aaa"})
    cache = DigestCache.open(cache_dir)
    assert cache is not None
    st = os.stat(root / "a")
    cache.store(
        [((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), "cd" * 32)], later()
    )
    cache.close()
    poisoned = collect(tmp_path, "ds")["datasets"][0]["listing"][0][2]
    fresh = collect(tmp_path, "ds", use_cache=False)["datasets"][0]["listing"][0][2]
    assert poisoned == "blake3:" + "cd" * 32
    assert fresh == "blake3:" + blake3(b"aaa").hexdigest()


# -- Parquet and Arrow footers ----------------------------------------------------------


def tables_of(tmp_path: Path, name: str = "ds") -> list[dict[str, Any]]:
    return list(collect(tmp_path, name)["datasets"][0]["tables"])


def test_parquet_footer_facts(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(table(10), root / "part-0.parquet", row_group_size=4)
    [entry] = tables_of(tmp_path)
    assert entry == {
        "path": "part-0.parquet",
        "format": "parquet",
        "rows": 10,
        "row_groups": 3,
        "columns": 4,
        "schema_digest": tabular.schema_digest(table().schema),
    }


def test_table_suffixes_in_any_case_and_names_that_only_look_like_tables(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(table(3), root / "UPPER.PARQUET")
    (root / "notes.parquet\nreally.txt").write_bytes(b"text")  # a newline in the name
    (root / "parquet").write_bytes(b"no suffix")
    [entry] = tables_of(tmp_path)
    assert (entry["path"], entry["format"], entry["rows"]) == ("UPPER.PARQUET", "parquet", 3)
    assert collect(tmp_path, "ds")["datasets"][0]["files"] == 3  # and no warning raised


def test_schema_digest_ignores_metadata_and_sees_types(tmp_path: Path) -> None:
    plain = table()
    with_meta = plain.replace_schema_metadata({"writer": "someone else", "run": "42"})
    retyped = plain.set_column(0, "id", pa.array(range(10), pa.int32()))
    not_null = plain.cast(
        pa.schema([pa.field("id", pa.int64(), nullable=False), *list(plain.schema)[1:]])
    )
    nested = plain.set_column(
        3,
        "point",
        pa.array(
            [{"x": 1.0, "y": 2} for _ in range(10)],
            pa.struct([("x", pa.float64()), ("y", pa.int64())]),
        ),
    )
    for name, t in {
        "plain": plain,
        "meta": with_meta,
        "retyped": retyped,
        "not_null": not_null,
        "nested": nested,
    }.items():
        (tmp_path / name).mkdir()
        pq.write_table(t, tmp_path / name / "t.parquet")
    digests = {
        name: tables_of(tmp_path, name)[0]["schema_digest"]
        for name in ("plain", "meta", "retyped", "not_null", "nested")
    }
    datasets = {
        name: collect(tmp_path, name)["datasets"][0]["digest"] for name in ("plain", "meta")
    }
    assert digests["meta"] == digests["plain"]
    assert datasets["meta"] != datasets["plain"]  # the bytes differ, the schema does not
    assert len({digests[n] for n in ("plain", "retyped", "not_null", "nested")}) == 4


def test_parquet_facts_come_from_the_footer_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Overwrite every data page with garbage: the footer values are still read."""
    root = tmp_path / "ds"
    root.mkdir()
    path = root / "t.parquet"
    pq.write_table(table(1000), path, row_group_size=300, compression="none")
    raw = bytearray(path.read_bytes())
    footer_len = int.from_bytes(raw[-8:-4], "little")
    data_end = len(raw) - 8 - footer_len
    raw[4:data_end] = os.urandom(data_end - 4)
    path.write_bytes(bytes(raw))
    with pytest.raises(Exception):  # noqa: B017 - the data really is unreadable now
        pq.read_table(path)

    def no_data(*args: Any, **kw: Any) -> None:
        raise AssertionError("data read")

    monkeypatch.setattr(pq, "read_table", no_data)
    monkeypatch.setattr(pq.ParquetFile, "read", no_data)
    [entry] = tables_of(tmp_path)
    assert (entry["rows"], entry["row_groups"], entry["columns"]) == (1000, 4, 4)
    assert entry["schema_digest"] == tabular.schema_digest(table().schema)


def test_arrow_ipc_and_feather(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    t = table(7)
    feather.write_feather(t, root / "t.feather", chunksize=3)
    with pa.OSFile(str(root / "t.arrow"), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t, max_chunksize=2)
    pq.write_table(t, root / "t.parquet")
    entries = {e["path"]: e for e in tables_of(tmp_path)}
    assert entries["t.feather"]["format"] == entries["t.arrow"]["format"] == "arrow"
    assert entries["t.feather"]["record_batches"] == 3
    assert entries["t.arrow"]["record_batches"] == 4
    assert {e["rows"] for e in entries.values()} == {7}
    # one schema, one fingerprint, whichever format holds it
    assert len({e["schema_digest"] for e in entries.values()}) == 1
    assert list(entries) == ["t.arrow", "t.feather", "t.parquet"]


@pytest.mark.filterwarnings("ignore:Feather V1 files are deprecated")
def test_unreadable_footers_are_warnings(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    (root / "fake.parquet").write_bytes(b"not parquet at all")
    feather.write_feather(table(2).drop_columns(["tags", "point"]), root / "v1.feather", version=1)
    with pytest.raises(Partial) as caught:
        collect(tmp_path, "ds")
    [entry] = caught.value.section["datasets"]  # type: ignore[misc]
    assert "tables" not in entry and entry["digest"] is not None
    assert "fake.parquet: no parquet footer read" in caught.value.reason
    assert "v1.feather: no arrow footer read (Feather V1" in caught.value.reason


def test_many_table_files_are_grouped_by_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tabular, "MAX_TABLE_ENTRIES", 2)
    root = tmp_path / "ds"
    root.mkdir()
    for i in range(3):
        pq.write_table(table(5 + i), root / f"p{i}.parquet", row_group_size=2)
    pq.write_table(table(4).drop_columns(["tags"]), root / "other.parquet")
    [entry] = collect(tmp_path, "ds")["datasets"]
    assert "tables" not in entry
    groups = {g["files"]: g for g in entry["table_groups"]}
    assert groups[3]["rows"] == 18 and groups[3]["row_groups"] == 3 + 3 + 4
    assert groups[1]["rows"] == 4 and groups[1]["columns"] == 3


def test_footer_facts_are_cached_by_file_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(table(), root / "t.parquet")
    first = tables_of(tmp_path)

    def no_reader(path: str) -> dict[str, Any]:
        raise AssertionError("footer read again")

    monkeypatch.setitem(tabular.READERS, "parquet", no_reader)
    assert tables_of(tmp_path) == first


WITHOUT_PYARROW = """
import json, sys
sys.modules["pyarrow"] = None  # as if it were not installed
from pathlib import Path
from expdna.collectors.context import CollectContext, Partial
from expdna.collectors.data import collect_data
try:
    collect_data(CollectContext(data=(Path(sys.argv[1]),), use_cache=False))
except Partial as exc:
    print(json.dumps({"reason": exc.reason, "section": exc.section}))
"""


def test_without_pyarrow_a_warning_and_no_tables(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    pq.write_table(table(), root / "a.parquet")
    pq.write_table(table(), root / "b.parquet")
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYARROW, str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(done.stdout)
    assert "pyarrow is not installed: 2 Parquet/Arrow file(s)" in out["reason"]
    [entry] = out["section"]["datasets"]
    assert "tables" not in entry and entry["digest"] == ref_of(listing_for(root))


# -- verify -----------------------------------------------------------------------------


def recorded(tmp_path: Path, *names: str) -> list[dict[str, Any]]:
    return list(collect(tmp_path, *names)["datasets"])


def test_verify_unchanged_then_every_kind_of_change(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write(root, {"keep": b"k", "edit": b"e", "gone": b"g"})
    datasets = recorded(tmp_path, "ds")
    assert verify_data(datasets).ok
    (root / "edit").write_bytes(b"E")
    (root / "gone").unlink()
    (root / "added").write_bytes(b"a")
    report = verify_data(datasets)
    [check] = report.datasets
    assert not report.ok and check.status == "changed" and check.detail == "files"
    assert (check.changed, check.missing, check.new) == (["edit"], ["gone"], ["added"])


def test_verify_large_dataset_uses_the_cached_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_mod, "EMBED_LISTING_FILES", 1)
    root = tmp_path / "ds"
    write(root, {"a": b"a", "b": b"b"})
    [dataset] = recorded(tmp_path, "ds")
    assert "listing" not in dataset
    (root / "b").write_bytes(b"B")
    [check] = verify_data([dataset]).datasets
    assert check.detail == "files" and check.changed == ["b"]


def test_verify_without_any_listing_reports_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_mod, "EMBED_LISTING_FILES", 1)
    root = tmp_path / "ds"
    write(root, {"a": b"a", "b": b"b"})
    [dataset] = recorded(tmp_path, "ds")
    monkeypatch.setenv("EXPDNA_CACHE_DIR", str(tmp_path / "another-cache"))
    (root / "c").write_bytes(b"cc")
    [check] = verify_data([dataset]).datasets
    assert check.status == "changed" and check.detail == "counts"
    assert (check.recorded["files"], check.current) == (
        2,
        {"digest": check.current["digest"] if check.current else None, "files": 3, "bytes": 4},
    )
    assert "per-file detail needs the recorded listing" in (check.note or "")
    # a store that has the listing blob fills the detail in
    blob = (
        b"a\t1\tblake3:"
        + blake3(b"a").hexdigest().encode()
        + b"\n"
        + b"b\t1\tblake3:"
        + blake3(b"b").hexdigest().encode()
        + b"\n"
    )
    assert ref_of(blob) == dataset["digest"]
    [check] = verify_data([dataset], listing_source={dataset["digest"]: blob}.get).datasets
    assert check.detail == "files" and check.new == ["c"]


def test_verify_ignores_an_embedded_listing_that_does_not_hash_to_the_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ds"
    write(root, {"a": b"a"})
    [dataset] = recorded(tmp_path, "ds")
    dataset["listing"][0][0] = "ghp_***"  # what redaction does to a token-shaped name
    monkeypatch.setenv("EXPDNA_CACHE_DIR", str(tmp_path / "another-cache"))
    (root / "a").write_bytes(b"A")
    [check] = verify_data([dataset]).datasets
    assert check.detail == "counts" and check.changed == []


def test_verify_missing_unverifiable_and_moved_roots(tmp_path: Path) -> None:
    write(tmp_path / "ds", {"a": b"a"})
    [dataset] = recorded(tmp_path, "ds")
    (tmp_path / "ds").rename(tmp_path / "moved")
    [gone] = verify_data([dataset]).datasets
    assert gone.status == "missing" and gone.note == "no such file or directory"
    report = verify_data(
        [dataset],
        data_roots=[
            (str(tmp_path), str(tmp_path / "x")),
            (str(tmp_path / "ds"), str(tmp_path / "moved")),
        ],
    )
    assert report.ok and report.datasets[0].path == str(tmp_path / "moved")
    [unknown] = verify_data([{**dataset, "digest": None}]).datasets
    assert unknown.status == "unverifiable"
    [redacted] = verify_data([{**dataset, "root": "/data/<internal-host>/x"}]).datasets
    assert redacted.status == "missing" and "--data-root" in (redacted.note or "")


def test_resolve_root() -> None:
    home = str(Path.home())
    assert resolve_root("<HOME>/data/x", []) == f"{home}/data/x"
    assert resolve_root("/old/data", [("/old", "/new")]) == "/new/data"
    assert resolve_root("/old/data", [("/old/", "/new/")]) == "/new/data"
    assert resolve_root("/older/data", [("/old", "/new")]) == "/older/data"
    assert resolve_root("/old", [("/old", "/new")]) == "/new"
    assert resolve_root("/a/b", [("/", "/mnt")]) == "/mnt/a/b"
    assert resolve_root("<HOME>/d", [("<HOME>/d", "/srv/d")]) == "/srv/d"
    assert resolve_root("s3://***@host/x", []) is None


def test_check_report_is_plain_json(tmp_path: Path) -> None:
    write(tmp_path / "ds", {"a": b"a"})
    report = verify_data(recorded(tmp_path, "ds"))
    assert isinstance(report, DataCheck)
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["ok"] is True and doc["datasets"][0]["status"] == "ok"
