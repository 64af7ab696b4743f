"""Which filesystem holds a path, and whether SQLite's WAL can work there.

The one mount lookup for both SQLite files expdna keeps: the store refuses an SQLite index
on a network filesystem, and the digest cache uses a rollback journal there instead of WAL.

SQLite's WAL keeps its index in shared memory (``-shm``, mmap); on a network filesystem
with clients on several machines that cannot work, and ``PRAGMA journal_mode=WAL`` may
still answer "wal" and fail at the first write (sqlite.org wal.html).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

#: fstype globs where an SQLite index is refused.
NETWORK_FSTYPES: tuple[str, ...] = (
    "nfs",
    "nfs4",
    "nfs*",
    "cifs",
    "smb*",
    "lustre",
    "gpfs",
    "ceph",
    "glusterfs",
    "beegfs",
    "afs",
    "9p",
    "fuse.*",
)
#: FUSE filesystems that are local (overlays in rootless containers).
LOCAL_FUSE: tuple[str, ...] = ("fuse.fuse-overlayfs", "fuse.overlayfs", "fuse.lxcfs")

DEFAULT_MOUNTS = Path("/proc/mounts")
_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    point: str
    fstype: str


def _unescape(field: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as \040, \011, \012, \134
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def read_mounts(mounts_file: Path = DEFAULT_MOUNTS) -> list[Mount]:
    try:
        text = mounts_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            mounts.append(Mount(_unescape(fields[1]), fields[2]))
    return mounts


def mount_of(path: Path, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path``: the longest mount point above it (the last one wins)."""
    target = os.path.realpath(path)
    best: Mount | None = None
    for mount in mounts:
        point = mount.point.rstrip("/") or "/"
        inside = target == point or target.startswith(point + "/") or point == "/"
        if inside and (best is None or len(point) >= len(best.point.rstrip("/") or "/")):
            best = mount
    return best


def is_network_fstype(fstype: str) -> bool:
    if fstype in LOCAL_FUSE:
        return False
    return any(fnmatch.fnmatchcase(fstype, pattern) for pattern in NETWORK_FSTYPES)


def network_fstype(path: Path, mounts_file: Path = DEFAULT_MOUNTS) -> str | None:
    """The fstype of ``path`` when it is a network filesystem, else None."""
    mount = mount_of(path, read_mounts(mounts_file))
    if mount is not None and is_network_fstype(mount.fstype):
        return mount.fstype
    return None
