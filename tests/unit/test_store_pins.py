"""Pins through the Store API on a real SQLite index: a checkpoint's digest bound to a run,
and ``which`` answering by content, by digest and by name."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from blake3 import blake3

from expdna.digest import SMALL_FILE_BYTES
from expdna.errors import InvalidInputError
from expdna.store import Store
from expdna.store.checkpoints import FileDigests, local_path
from expdna.store.errors import InvalidDigestError, InvalidRunRefError, RunNotFoundError
from tests.factories import synthetic


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A digest cache of this test's own (never the user's)."""
    path = tmp_path / "cache"
    monkeypatch.setenv("EXPDNA_CACHE_DIR", str(path))
    return path


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "store") as opened:
        opened.record_many([synthetic(i, setup=i // 2) for i in range(4)])
        yield opened


def _run(i: int) -> str:
    return synthetic(i).run_id


def _checkpoint(path: Path, data: bytes = b"weights-1") -> Path:
    path.write_bytes(data)
    return path


def test_pin_binds_digest_name_run_and_dna(store: Store, tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path / "model.pt")
    pin = store.pin_file(checkpoint, run=_run(1), name="best")
    assert pin.digest == blake3(b"weights-1").hexdigest()
    assert (pin.run_id, pin.name, pin.size, pin.matches) == (_run(1), "best", 9, True)
    assert pin.dna == store.get(_run(1)).dna
    assert pin.path == str(checkpoint.resolve())
    assert pin.to_dict()["digest"] == f"blake3:{pin.digest}"
    # the name defaults to the file name; pinning again adds nothing
    assert store.pin_file(checkpoint, run=_run(1)).name == "model.pt"
    store.pin_file(checkpoint, run=_run(1), name="best")
    assert len(store.which(str(checkpoint))) == 2  # "best" and "model.pt"


def test_which_finds_a_renamed_and_a_copied_checkpoint(store: Store, tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path / "model.pt")
    store.pin_file(checkpoint, run=_run(0), name="best")
    copy = tmp_path / "elsewhere" / "copy.bin"
    copy.parent.mkdir()
    shutil.copy(checkpoint, copy)
    renamed = checkpoint.rename(tmp_path / "renamed.pt")
    for target in (copy, renamed):
        [found] = store.which(str(target))
        assert (found.run_id, found.name, found.matches) == (_run(0), "best", True)
    # by name: the pinned path is gone, so whether it still matches is unknown
    [by_name] = store.which("best")
    assert by_name.run_id == _run(0) and by_name.matches is None
    assert store.which(f"blake3:{by_name.digest}")[0].run_id == _run(0)


def test_identical_bytes_pinned_by_two_runs_return_both_newest_first(
    store: Store, tmp_path: Path
) -> None:
    first = _checkpoint(tmp_path / "a.pt", b"same bytes")
    second = _checkpoint(tmp_path / "b.pt", b"same bytes")
    store.pin_file(first, run=_run(2), name="a")
    time.sleep(0.002)  # pinned_at orders the answer
    store.pin_file(second, run=_run(3), name="b")
    found = store.which(str(first))
    assert [(p.run_id, p.name) for p in found] == [(_run(3), "b"), (_run(2), "a")]
    assert found[0].pinned_at >= found[1].pinned_at


def test_which_by_name_says_whether_the_file_still_matches(store: Store, tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path / "last.pt")
    store.pin_file(checkpoint, run=_run(0), name="last")
    assert store.which("last")[0].matches is True
    checkpoint.write_bytes(b"overwritten by a later epoch")
    assert store.which("last")[0].matches is False
    assert store.which(str(checkpoint)) == []  # the new bytes were never pinned


def test_pin_by_digest_as_the_hook_calls_it(store: Store) -> None:
    digest = "blake3:" + blake3(b"x").hexdigest()
    pin = store.pin(run_id=_run(0), digest=digest, name="ckpt", path="<HOME>/gone.pt", size=1)
    assert pin.digest == digest.removeprefix("blake3:") and pin.path == "<HOME>/gone.pt"
    [found] = store.which("ckpt")
    assert found.matches is None and found.size == 1
    # a pin through a DNA prefix binds the newest run of that DNA
    by_prefix = store.pin(run_id=store.get(_run(2)).dna[:8], digest=digest, name="ckpt")
    assert by_prefix.run_id == _run(3)


def test_pin_refuses_bad_input_and_unknown_runs(store: Store, tmp_path: Path) -> None:
    digest = blake3(b"x").hexdigest()
    with pytest.raises(RunNotFoundError):
        store.pin(run_id="20990101_000000_nogit_none", digest=digest)
    with pytest.raises(InvalidRunRefError):
        store.pin(run_id="../etc", digest=digest)
    for bad in ("blake3:../../etc/passwd", digest[:-1], digest.upper(), "md5:" + digest):
        with pytest.raises(InvalidDigestError):
            store.pin(run_id=_run(0), digest=bad)
    for name in ("", "   ", "two\nlines"):
        with pytest.raises(InvalidInputError):
            store.pin(run_id=_run(0), digest=digest, name=name)
    with pytest.raises(InvalidInputError, match="directory"):
        store.which(str(tmp_path))
    with pytest.raises(InvalidInputError, match="cannot read"):
        store.pin_file(tmp_path / "absent.pt", run=_run(0))
    with pytest.raises(InvalidInputError, match="byte count"):
        store.pin(run_id=_run(0), digest=digest, size=-1)
    assert store.which("never-pinned") == []


def test_large_checkpoint_digests_come_from_the_stat_keyed_cache(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file changed within the racy window is never vouched for; this one was just
    # written, so the window is shrunk rather than waited out.
    monkeypatch.setattr("expdna.digest.cache.RACY_WINDOW_NS", 0)
    big = tmp_path / "big.pt"
    big.write_bytes(os.urandom(SMALL_FILE_BYTES + 1))
    old = time.time() - 60
    os.utime(big, (old, old))
    with FileDigests() as digests:
        first = digests.digest(big)
    assert first == (blake3(big.read_bytes()).hexdigest(), SMALL_FILE_BYTES + 1)
    rows = (
        sqlite3.connect(cache_dir / "digests.sqlite").execute("SELECT hex FROM digests").fetchall()
    )
    assert rows == [(first[0],)]
    # an answer from the cache, not from the bytes: poison the row and ask again
    conn = sqlite3.connect(cache_dir / "digests.sqlite")
    conn.execute("UPDATE digests SET hex = ?", ("0" * 64,))
    conn.commit()
    conn.close()
    with FileDigests() as digests:
        assert digests.digest(big)[0] == "0" * 64
    with FileDigests(use_cache=False) as digests:
        assert digests.digest(big)[0] == first[0]
    # any change to the file (its ctime at least) makes the cache hash it again
    os.utime(big, (old, old + 1))
    with FileDigests() as digests:
        assert digests.digest(big)[0] == first[0]


def test_a_redacted_home_is_read_as_this_users_home() -> None:
    assert local_path("<HOME>/ckpt/a.pt") == Path.home() / "ckpt" / "a.pt"
    assert local_path("/data/a.pt") == Path("/data/a.pt")
