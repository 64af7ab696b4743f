"""hash_file, the one way expdna hashes a file: with and without the stat-keyed cache."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from blake3 import blake3

from expdna.digest import hashing, hex_of, ref_of
from expdna.digest.cache import FILE_NAME, DigestCache, open_cache, stat_key


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[DigestCache]:
    opened = DigestCache.open(tmp_path / "cache")
    assert opened is not None
    yield opened
    opened.close()


def test_bytes_and_references() -> None:
    assert hex_of(b"abc") == blake3(b"abc").hexdigest()
    assert ref_of(b"abc") == "blake3:" + blake3(b"abc").hexdigest()


@pytest.mark.parametrize("size", [0, 5, hashing.SMALL_FILE_BYTES + 3])
def test_a_file_hashes_to_its_bytes(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert hashing.hash_file(tmp_path / "f") == (blake3(data).hexdigest(), size)


def test_large_files_report_progress_per_slice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hashing, "CHUNK_BYTES", 1 << 20)
    data = os.urandom(3 * (1 << 20) + 11)
    (tmp_path / "f").write_bytes(data)
    seen: list[int] = []
    assert hashing.hash_file(tmp_path / "f", on_bytes=seen.append) == (
        blake3(data).hexdigest(),
        len(data),
    )
    assert seen == [1 << 20] * 3 + [11]


def test_without_mmap_the_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Some FUSE mounts refuse mmap: the same digest comes from plain reads."""
    monkeypatch.setattr(hashing, "CHUNK_BYTES", 1 << 20)
    data = os.urandom(2 * (1 << 20) + 7)
    (tmp_path / "f").write_bytes(data)
    seen: list[int] = []
    with open(tmp_path / "f", "rb") as fh:
        hexd, n = hashing._hash_reading(fh, blake3(max_threads=blake3.AUTO), seen.append)
    assert (hexd, n) == (blake3(data).hexdigest(), len(data)) and sum(seen) == len(data)


def test_with_a_cache_an_unchanged_file_is_answered_by_its_stat(
    tmp_path: Path, cache: DigestCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file just written is racy and never vouched for: shrink the window, not wait it out
    monkeypatch.setattr("expdna.digest.cache.RACY_WINDOW_NS", 0)
    path = tmp_path / "f"
    path.write_bytes(b"checkpoint")
    real = blake3(b"checkpoint").hexdigest()
    assert hashing.hash_file(path, cache) == (real, 10)
    assert cache.lookup([stat_key(os.stat(path))]) == [real]
    # the answer comes from the cache, not the bytes: poison the row and ask again
    conn = sqlite3.connect(cache.path)
    conn.execute("UPDATE digests SET hex = ?", ("0" * 64,))
    conn.commit()
    conn.close()
    assert hashing.hash_file(path, cache) == ("0" * 64, 10)
    assert hashing.hash_file(path) == (real, 10)  # no cache: the bytes
    # any change to the file (its ctime at least) makes it hashed again
    os.utime(path, (1, 1))
    assert hashing.hash_file(path, cache) == (real, 10)


def test_a_racy_file_is_hashed_but_not_vouched_for(tmp_path: Path, cache: DigestCache) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"just written")  # its ctime is now: inside the racy window
    assert hashing.hash_file(path, cache)[0] == blake3(b"just written").hexdigest()
    assert cache.lookup([stat_key(os.stat(path))]) == [None]


def test_a_missing_file_is_an_os_error_with_or_without_a_cache(
    tmp_path: Path, cache: DigestCache
) -> None:
    for given in (None, cache):
        with pytest.raises(FileNotFoundError):
            hashing.hash_file(tmp_path / "absent", given)


def test_stat_keys_fit_sqlite_integers(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    st = os.stat(tmp_path / "f")
    key = stat_key(st)
    assert key[0] == st.st_dev and key[2:] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    assert -(1 << 63) <= key[1] < 1 << 63
    assert key[1] % (1 << 64) == st.st_ino


def test_open_cache_follows_the_environment(tmp_path: Path) -> None:
    assert open_cache(False, {"EXPDNA_CACHE_DIR": str(tmp_path / "c")}) is None
    assert not (tmp_path / "c").exists()
    opened = open_cache(True, {"EXPDNA_CACHE_DIR": str(tmp_path / "c")})
    assert opened is not None
    opened.close()
    assert (tmp_path / "c" / FILE_NAME).is_file()


def test_importing_the_digest_layer_opens_no_cache_and_no_orm() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, expdna.digest; "
            "print(sorted(m for m in ('expdna.digest.cache', 'sqlalchemy') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
