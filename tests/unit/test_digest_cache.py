"""The persistent digest cache: real SQLite files, real files, real stat results.

Limits (by design, documented in expdna.digest.cache): a digest is trusted
while (device, inode, size, mtime_ns, ctime_ns) are unchanged. An edit that keeps all
five (which needs the clock set back, or writing the block device directly) is not seen;
a file system without real ctime (some FUSE mounts) only has size + mtime to go by.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from blake3 import blake3

from expdna.collectors.data import digest_root
from expdna.digest import cache as digest_cache
from expdna.digest.cache import FILE_NAME, DigestCache


def later() -> int:
    """The clock of "a later run": every file written so far is past the racy window."""
    return time.time_ns() + 60 * 10**9


def make_files(root: Path, count: int = 5) -> dict[str, bytes]:
    contents = {}
    for i in range(count):
        rel = f"d{i % 2}/f{i}.bin"
        data = os.urandom(50 + i)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        contents[rel] = data
    return contents


def rows_of(root: Path, cache: DigestCache | None, now_ns: int | None = None) -> dict[str, str]:
    scan = digest_root(root, cache=cache, now_ns=now_ns)
    assert scan.complete, scan.problems
    return {rel: hexd for rel, _, hexd in scan.rows}


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[DigestCache]:
    opened = DigestCache.open(tmp_path / "cache")
    assert opened is not None
    yield opened
    opened.close()


def test_second_run_hashes_nothing(tmp_path: Path, cache: DigestCache) -> None:
    root = tmp_path / "ds"
    contents = make_files(root)
    first = digest_root(root, cache=cache, now_ns=later())
    assert (first.hashed, first.cached) == (5, 0)
    second = digest_root(root, cache=cache)
    assert (second.hashed, second.cached) == (5 - 5, 5)
    assert second.digest() == first.digest()
    assert {r: h for r, _, h in second.rows} == {
        rel: blake3(data).hexdigest() for rel, data in contents.items()
    }


def test_per_file_digests_come_from_the_cache(tmp_path: Path, cache: DigestCache) -> None:
    """Poison one cached digest: a hit returns the poisoned value, --no-cache the truth."""
    root = tmp_path / "ds"
    contents = make_files(root)
    rows_of(root, cache, later())
    st = os.stat(root / "d0/f0.bin")
    conn = sqlite3.connect(cache.path)
    with conn:
        conn.execute("DELETE FROM trees")  # leave only the per-file layer
        conn.execute("UPDATE digests SET hex = ? WHERE ino = ?", ("ab" * 32, st.st_ino))
    conn.close()
    assert rows_of(root, cache)["d0/f0.bin"] == "ab" * 32
    assert rows_of(root, None)["d0/f0.bin"] == blake3(contents["d0/f0.bin"]).hexdigest()


def test_whole_tree_answered_from_one_row(tmp_path: Path, cache: DigestCache) -> None:
    root = tmp_path / "ds"
    make_files(root)
    digest = digest_root(root, cache=cache, now_ns=later()).digest()
    conn = sqlite3.connect(cache.path)
    [(stored,)] = conn.execute("SELECT digest FROM trees WHERE root = ?", (str(root),))
    assert stored == digest
    # Point the tree row at another (stored) listing: the scan reports that one.
    fake = b"x\t1\tblake3:" + b"0" * 64 + b"\n"
    cache.keep_listing("blake3:fake", fake)
    with conn:
        conn.execute("UPDATE trees SET digest = 'blake3:fake'")
    conn.close()
    scan = digest_root(root, cache=cache)
    assert scan.digest() == "blake3:fake" and scan.hashed == 0
    assert scan.rows == [("x", 1, "0" * 64)]


def test_any_stat_change_misses_the_tree(tmp_path: Path, cache: DigestCache) -> None:
    root = tmp_path / "ds"
    make_files(root)
    before = digest_root(root, cache=cache, now_ns=later()).digest()
    (root / "d1/new.bin").write_bytes(b"new")
    scan = digest_root(root, cache=cache, now_ns=later())
    assert (scan.hashed, scan.cached) == (1, 5)
    assert scan.digest() != before


@pytest.mark.parametrize("where", ["nested", "behind a symlinked directory"])
def test_an_in_place_edit_anywhere_misses_the_tree(
    tmp_path: Path, cache: DigestCache, where: str
) -> None:
    """Same size, same name, deep down or reached through a symlink: the tree row misses
    and that one file, and only it, is hashed again."""
    root = tmp_path / "ds"
    make_files(root)
    if where == "nested":
        path = root / "d0/deep/er/f.bin"
        path.parent.mkdir(parents=True)
    else:
        (tmp_path / "outside").mkdir()
        os.symlink(tmp_path / "outside", root / "d1/linked")
        path = tmp_path / "outside/f.bin"
    path.write_bytes(b"A" * 64)
    before = digest_root(root, cache=cache, now_ns=later())
    assert before.complete and digest_root(root, cache=cache).hashed == 0
    time.sleep(0.01)  # the edit must move mtime_ns (nanosecond stamps here)
    path.write_bytes(b"B" * 64)
    after = digest_root(root, cache=cache, now_ns=later())
    assert (after.hashed, after.cached) == (1, 5)
    assert after.digest() != before.digest()
    assert blake3(b"B" * 64).hexdigest() in {h for _, _, h in after.rows}


#: Digests a tree in a fresh interpreter (own string interning, own object identities)
#: after the per-file rows were deleted: only the whole-tree row can answer it.
OTHER_PROCESS = """
import sys
from pathlib import Path
from expdna.collectors.data import digest_root
from expdna.digest.cache import DigestCache
cache = DigestCache.open(Path(sys.argv[1]))
scan = digest_root(Path(sys.argv[2]), cache=cache)
print(scan.hashed, scan.cached, scan.digest())
"""


def test_another_process_is_answered_by_the_tree_row(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    make_files(root, 6)
    for rel in ("a", "d0/a", "d1/a", "x" * 200):  # short, repeated and long names
        (root / rel).write_bytes(rel.encode())
    cache = DigestCache.open(tmp_path / "cache")
    assert cache is not None
    digest = digest_root(root, cache=cache, now_ns=later()).digest()
    cache.close()
    with sqlite3.connect(tmp_path / "cache" / FILE_NAME) as conn:
        conn.execute("DELETE FROM digests")
    conn.close()
    out = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(tmp_path / "cache"), str(root)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert out == ["0", "10", str(digest)]


def test_racy_files_are_not_trusted_on_the_next_run(tmp_path: Path, cache: DigestCache) -> None:
    """A file written within the racy window of the scan is hashed again next time."""
    root = tmp_path / "ds"
    make_files(root, 3)
    first = digest_root(root, cache=cache)  # real "now": every file is racy
    assert first.hashed == 3
    assert cache.lookup([_key(root / "d0/f0.bin")]) == [None]
    # Rewritten within the same granule (same size, mtime forced back): still re-hashed.
    st = os.stat(root / "d0/f0.bin")
    (root / "d0/f0.bin").write_bytes(b"Z" * st.st_size)
    os.utime(root / "d0/f0.bin", ns=(st.st_atime_ns, st.st_mtime_ns))
    second = digest_root(root, cache=cache, now_ns=later())
    assert second.hashed == 3
    assert (
        dict((r, h) for r, _, h in second.rows)["d0/f0.bin"]
        == blake3(b"Z" * st.st_size).hexdigest()
    )
    third = digest_root(root, cache=cache, now_ns=later())
    assert third.hashed == 0


def _key(path: Path) -> tuple[int, int, int, int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_same_size_edit_with_restored_mtime_is_caught_by_ctime(
    tmp_path: Path, cache: DigestCache
) -> None:
    root = tmp_path / "ds"
    make_files(root, 2)
    path = root / "d0/f0.bin"
    rows_of(root, cache, later())
    st = os.stat(path)
    time.sleep(0.01)  # ctime must move on (nanosecond stamps here)
    path.write_bytes(b"E" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert rows_of(root, cache, later())["d0/f0.bin"] == blake3(b"E" * st.st_size).hexdigest()


def test_corrupt_cache_warns_hashes_and_is_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "ds"
    contents = make_files(root)
    directory = tmp_path / "cache"
    directory.mkdir()
    (directory / FILE_NAME).write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.WARNING, logger="expdna.digest.cache"):
        opened = DigestCache.open(directory)
    assert "corrupt" in caplog.text
    assert opened is not None  # rebuilt in place
    rows = rows_of(root, opened, later())
    assert rows == {rel: blake3(data).hexdigest() for rel, data in contents.items()}
    assert digest_root(root, cache=opened).hashed == 0
    opened.close()


def test_malformed_pages_are_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "ds"
    contents = make_files(root)
    directory = tmp_path / "cache"
    opened = DigestCache.open(directory)
    assert opened is not None
    rows_of(root, opened, later())
    opened.close()
    # Clobber the pages after the header: SQLite opens it, then finds it malformed.
    path = directory / FILE_NAME
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]);"
            "c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()",
            str(path),
        ],
        check=True,
    )
    data = bytearray(path.read_bytes())
    data[200:] = b"\xff" * (len(data) - 200)
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="expdna.digest.cache"):
        again = DigestCache.open(directory)
        rows = rows_of(root, again, later())
        if again is not None:
            again.close()
    assert rows == {rel: blake3(data).hexdigest() for rel, data in contents.items()}
    assert "malformed" in caplog.text


def test_cache_error_mid_run_never_fails_the_scan(
    tmp_path: Path, cache: DigestCache, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "ds"
    contents = make_files(root)
    conn = sqlite3.connect(cache.path)
    conn.execute("DROP TABLE digests")  # another process broke it after we opened
    conn.close()
    with caplog.at_level(logging.WARNING, logger="expdna.digest.cache"):
        rows = rows_of(root, cache, later())
    assert rows == {rel: blake3(data).hexdigest() for rel, data in contents.items()}
    assert "lookup failed" in caplog.text
    assert cache.lookup([_key(root / "d0/f0.bin")]) == [None]  # off for the rest of the run


def test_unusable_cache_directory_warns_and_hashes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger="expdna.digest.cache"):
        assert DigestCache.open(blocker / "cache") is None
    assert "unusable" in caplog.text


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPDNA_CACHE_DIR", str(tmp_path / "c"))
    assert digest_cache.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("EXPDNA_CACHE_DIR")
    assert digest_cache.cache_dir().name == "expdna"


def test_wal_and_schema_version(cache: DigestCache) -> None:
    conn = sqlite3.connect(cache.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == digest_cache.SCHEMA_VERSION
    conn.close()


def test_another_schema_version_is_rebuilt(tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir()
    conn = sqlite3.connect(directory / FILE_NAME)
    conn.execute("CREATE TABLE digests (x)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    opened = DigestCache.open(directory)
    assert opened is not None
    root = tmp_path / "ds"
    make_files(root, 2)
    assert len(rows_of(root, opened, later())) == 2
    assert digest_root(root, cache=opened).hashed == 0
    opened.close()


def test_listings_are_kept_and_pruned(cache: DigestCache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "LISTINGS_KEPT", 2)
    for i in range(3):
        cache.keep_listing(f"blake3:{i}", f"listing {i}\n".encode())
    assert cache.listing("blake3:0") is None
    assert cache.listing("blake3:2") == b"listing 2\n"


CONCURRENT = """
import sys, time
from pathlib import Path
from expdna.collectors.data import digest_root
from expdna.digest.cache import DigestCache
later = time.time_ns() + 60 * 10**9
for _ in range(5):
    cache = DigestCache.open(Path(sys.argv[1]))
    assert cache is not None
    scan = digest_root(Path(sys.argv[2]), cache=cache, now_ns=later)
    assert scan.complete
    cache.close()
print(scan.digest())
"""


def test_concurrent_processes_share_one_cache(tmp_path: Path) -> None:
    roots = []
    for i in range(3):
        root = tmp_path / f"ds{i}"
        make_files(root, 40)
        roots.append(root)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(tmp_path / "cache"), str(r)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in roots
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "WARNING" not in err, err
    for root, (out, _) in zip(roots, outputs, strict=True):
        assert out.strip() == digest_root(root).digest()
    cache = DigestCache.open(tmp_path / "cache")
    assert cache is not None
    assert all(digest_root(r, cache=cache).hashed == 0 for r in roots)
    cache.close()
