"""The object directory: BLAKE3 names, atomic read-only writes, verification, bad digests."""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from expdna.digest import hex_of
from expdna.digest.refs import parse_digest
from expdna.errors import InvalidInputError, NotFoundError
from expdna.store.errors import CorruptObjectError, InvalidDigestError, MissingObjectError
from expdna.store.objects import directory as objects_module
from expdna.store.objects.directory import ObjectDir


@pytest.fixture
def objects(tmp_path: Path) -> ObjectDir:
    return ObjectDir(tmp_path / "objects")


def test_put_names_the_object_by_blake3_with_two_hex_fan_out(objects: ObjectDir) -> None:
    data = b"hello store\n"
    digest = objects.put(data)
    assert digest == hex_of(data)
    path = objects.root / digest[:2] / digest[2:]
    assert path.read_bytes() == data
    assert objects.path(digest) == path == objects.path(f"blake3:{digest}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert objects.read_verified(digest) == data
    assert list(objects) == [digest]
    assert list(objects.temp_files()) == []


def test_an_object_present_is_never_rewritten(objects: ObjectDir) -> None:
    digest = objects.put(b"once")
    inode = objects.path(digest).stat().st_ino
    assert objects.put(b"once") == digest
    assert objects.put_many([b"once", b"once"]) == [digest, digest]
    assert objects.path(digest).stat().st_ino == inode


def test_put_many_stores_each_distinct_blob_once(objects: ObjectDir) -> None:
    blobs = [f"blob {i % 7}".encode() for i in range(30)]
    digests = objects.put_many(blobs)
    assert digests == [hex_of(b) for b in blobs]
    assert sorted(objects) == sorted(set(digests))
    assert all(objects.read(d) == b for d, b in zip(digests, blobs, strict=True))
    assert list(objects.temp_files()) == []


def test_a_failing_batch_leaves_no_temporary_file(objects: ObjectDir) -> None:
    def blobs() -> Iterator[bytes]:
        for i in range(10):
            yield f"blob {i}".encode()
        raise RuntimeError("producer died")

    with pytest.raises(RuntimeError):
        objects.put_many(blobs())
    assert list(objects.temp_files()) == []
    assert list(objects) == []


def test_verify_names_a_corrupt_object(objects: ObjectDir) -> None:
    digest = objects.put(b"original bytes")
    path = objects.path(digest)
    os.chmod(path, 0o644)
    path.write_bytes(b"flipped bytes!")
    with pytest.raises(CorruptObjectError) as caught:
        objects.verify(digest)
    assert digest in str(caught.value)
    assert caught.value.actual == hex_of(b"flipped bytes!")


def test_verify_and_read_report_a_missing_object(objects: ObjectDir) -> None:
    digest = hex_of(b"never stored")
    with pytest.raises(MissingObjectError) as caught:
        objects.verify(digest)
    assert isinstance(caught.value, NotFoundError) and digest in str(caught.value)


@pytest.mark.parametrize(
    "bad",
    [
        "../../etc/passwd",
        "ab/" + "c" * 62,
        "A" * 64,
        "a" * 63,
        "a" * 65,
        "sha256:" + "a" * 64,
        "blake3:" + "a" * 63 + "/",
        "",
        "a" * 62 + "\n",
    ],
)
def test_malformed_digests_are_refused_before_the_filesystem(objects: ObjectDir, bad: str) -> None:
    with pytest.raises(InvalidDigestError) as caught:
        objects.path(bad)
    assert isinstance(caught.value, InvalidInputError) and caught.value.exit_code == 2
    with pytest.raises(InvalidDigestError):
        objects.read(bad)
    assert not objects.root.exists()


def test_parse_digest_accepts_the_algorithm_prefix() -> None:
    assert parse_digest("blake3:" + "0f" * 32) == "0f" * 32
    assert parse_digest("0f" * 32) == "0f" * 32


def test_iteration_skips_temporary_and_foreign_files(objects: ObjectDir) -> None:
    digest = objects.put(b"real")
    fan = objects.root / digest[:2]
    (fan / ".tmp-abandoned").write_bytes(b"half")
    (objects.root / "README").write_text("not an object")
    (objects.root / "zz").mkdir()
    assert list(objects) == [digest]
    assert [p.name for p in objects.temp_files()] == [".tmp-abandoned"]
    objects.remove(digest)
    assert list(objects) == []


def test_importing_the_store_package_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, expdna, expdna.store, expdna.store.objects.directory;"
        "import expdna.store.record.prepare;"
        "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported';"
        "expdna.Store;"  # the facade reads through the read layer: still no SQLAlchemy
        "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported by the facade';"
        "import expdna.store.index.engine;"
        "assert 'sqlalchemy' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_leftover_temporary_file_under_our_name_is_left_alone(
    objects: ObjectDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a dead process with our pid left it: the object is written under another name
    monkeypatch.setattr(objects_module, "_TEMP_COUNTER", itertools.count(7))
    digest = hex_of(b"data")
    fan = objects.root / digest[:2]
    fan.mkdir(parents=True)
    leftover = fan / f".tmp-{digest[2:18]}-{os.getpid()}-7"
    leftover.write_bytes(b"someone else's")
    assert objects.put(b"data") == digest
    assert leftover.read_bytes() == b"someone else's"
    assert objects.read_verified(digest) == b"data"
    assert stat.S_IMODE(objects.path(digest).stat().st_mode) == 0o444
    assert list(objects.temp_files()) == [leftover]


def test_objects_are_readable_by_all_whatever_the_umask(objects: ObjectDir) -> None:
    previous = os.umask(0o077)
    try:
        digest = objects.put(b"shared store")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(objects.path(digest).stat().st_mode) == 0o444


def test_a_umask_changed_between_batches_still_gives_readable_objects(
    objects: ObjectDir,
) -> None:
    previous = os.umask(0o022)  # open's mode is exact: no fchmod
    try:
        first = objects.put(b"written under 022")
        os.umask(0o077)
        second = objects.put_many([b"written under 077"])[0]
        objects.rewrite([b"rewritten under 077"])
    finally:
        os.umask(previous)
    for digest in (first, second, hex_of(b"rewritten under 077")):
        assert stat.S_IMODE(objects.path(digest).stat().st_mode) == 0o444
