"""One mount lookup for both callers that care: the store's SQLite index (refused on a
network file system) and the digest cache (journal DELETE instead of WAL there).

The cases are where the two used to disagree: local FUSE overlays, octal escapes in
/proc/mounts mount points, and nested mounts.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from expdna.digest.cache import FILE_NAME, DigestCache
from expdna.filesystems import Mount, mount_of, network_fstype, read_mounts
from expdna.store.errors import NetworkFilesystemError
from expdna.store.index.engine import open_index


def _mounts(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "mounts"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _escaped(path: Path) -> str:
    # as the kernel writes a mount point into /proc/mounts
    table = {" ": "\\040", "\t": "\\011", "\n": "\\012", "\\": "\\134"}
    return "".join(table.get(ch, ch) for ch in str(path))


def _journal(directory: Path, mounts: Path) -> str:
    cache = DigestCache.open(directory, mounts_file=mounts)
    assert cache is not None
    cache.close()
    conn = sqlite3.connect(directory / FILE_NAME)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def _index_refused(store_dir: Path, mounts: Path) -> bool:
    try:
        index = open_index(store_dir, None, mounts_file=mounts)
    except NetworkFilesystemError:
        return True
    index.dispose()
    return False


def test_octal_escapes_in_mount_points_are_decoded(tmp_path: Path) -> None:
    odd = tmp_path / "a b\tc\\d"
    odd.mkdir()
    mounts = _mounts(tmp_path, "/dev/vda / ext4 rw 0 0", f"srv:/x {_escaped(odd)} nfs4 rw 0 0")
    assert [m.point for m in read_mounts(mounts)] == ["/", str(odd)]
    assert network_fstype(odd / "store", mounts) == "nfs4"
    assert _journal(odd / "cache", mounts) == "delete"
    assert _index_refused(odd / "store", mounts)
    # a sibling whose name is the escaped text is not inside that mount
    literal = tmp_path / "a b\\011c\\134d"
    literal.mkdir()
    assert network_fstype(literal, mounts) is None
    assert _journal(literal / "cache", mounts) == "wal"


@pytest.mark.parametrize("fstype", ["fuse.fuse-overlayfs", "fuse.overlayfs", "fuse.lxcfs"])
def test_a_local_fuse_overlay_is_local(tmp_path: Path, fstype: str) -> None:
    mounts = _mounts(tmp_path, f"fuse-overlayfs {tmp_path} {fstype} rw 0 0")
    assert network_fstype(tmp_path / "store", mounts) is None
    assert _journal(tmp_path / "cache", mounts) == "wal"
    assert not _index_refused(tmp_path / "store", mounts)


def test_a_remote_fuse_mount_is_remote(tmp_path: Path) -> None:
    mounts = _mounts(tmp_path, f"me@host: {tmp_path} fuse.sshfs rw 0 0")
    assert _journal(tmp_path / "cache", mounts) == "delete"
    assert _index_refused(tmp_path / "store", mounts)


@pytest.mark.parametrize("order", [1, -1])
def test_the_longest_mount_point_wins(tmp_path: Path, order: int) -> None:
    local = tmp_path / "local"
    lines = [
        "/dev/vda / ext4 rw 0 0",
        f"srv:/x {tmp_path} nfs rw 0 0",
        f"/dev/vdb {local} ext4 rw 0 0",
    ]
    mounts = _mounts(tmp_path, *lines[::order])
    assert network_fstype(tmp_path / "remote", mounts) == "nfs"
    assert network_fstype(local / "store", mounts) is None
    assert _journal(tmp_path / "remote", mounts) == "delete"
    assert _journal(local / "cache", mounts) == "wal"
    # a mount point is a path prefix by whole components, not by characters
    assert network_fstype(Path(f"{tmp_path}-other"), mounts) is None


def test_a_later_mount_on_the_same_point_hides_the_earlier(tmp_path: Path) -> None:
    mounts = [Mount(str(tmp_path), "nfs"), Mount(str(tmp_path) + "/", "ext4")]
    found = mount_of(tmp_path / "x", mounts)
    assert found is not None and found.fstype == "ext4"


def test_without_a_mounts_file_nothing_is_remote(tmp_path: Path) -> None:
    absent = tmp_path / "no-such-mounts"
    assert network_fstype(tmp_path, absent) is None
    assert _journal(tmp_path / "cache", absent) == "wal"
