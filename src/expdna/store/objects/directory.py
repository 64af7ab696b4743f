"""The object directory: immutable blobs named by the BLAKE3 of their bytes.

Layout ``objects/<2 hex>/<62 hex>`` as git and DVC lay out loose objects. An object is
written to a temporary file in its fan-out directory, made read-only, synced and renamed
into place, so a reader sees the whole object or none; once present it is never rewritten.
``b3sum objects/ab/cdef...`` prints ``abcdef...``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from blake3 import blake3

from expdna.digest import hex_of
from expdna.digest.refs import parse_digest, ref
from expdna.regular import NotRegularFileError, kind, open_regular
from expdna.store.errors import CorruptObjectError, MissingObjectError, UnreadableObjectError

if TYPE_CHECKING:
    from expdna.store.objects.interface import Stat
    from expdna.store.objects.log import StoreLog

log = logging.getLogger(__name__)

READ_ONLY = 0o444
TEMP_PREFIX = ".tmp-"
TRASH = "trash"
_HEX = frozenset("0123456789abcdef")
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
_TEMP_COUNTER = itertools.count()
#: Bytes hashed at a time by :meth:`ObjectDir.verify`: memory stays flat for any object.
VERIFY_CHUNK = 1 << 20


@dataclass(frozen=True)
class _Pending:
    """A temporary file written and closed, waiting to be synced and renamed."""

    temp: str
    final: str


def fsync_path(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _syncfs(directory: Path) -> bool:
    """Flush the whole filesystem holding ``directory`` in one call (Linux ``syncfs``).

    One syncfs costs about as much as a few fsyncs, so a batch of hundreds of objects pays
    it twice instead of one fsync per file. Returns False where it is not available.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # loaded by writers only: a read never syncs

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(directory, os.O_RDONLY)
    try:
        return int(syncfs(fd)) == 0
    finally:
        os.close(fd)


def _umask_keeps_read_only() -> bool:
    """Whether the process umask leaves every bit of READ_ONLY (Linux reports it in
    /proc/self/status; reading it with os.umask would set it, racing other threads)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8) & READ_ONLY == 0
    except (OSError, ValueError, IndexError):
        pass
    return False


class ObjectDir:
    """Content-addressed blobs under ``root`` (``<store>/objects``)."""

    def __init__(self, root: Path, *, durable: bool = True) -> None:
        self.root = root
        #: False: no syncs (a staging area a process's death cannot lose; a spool)
        self.durable = durable
        self._fans: set[str] = set()  # fan-out directories known to exist
        #: whether open's mode needs no fchmod (the umask, read per batch, keeps 0o444)
        self._exact_mode = False

    @property
    def location(self) -> str:
        return str(self.root)

    def path(self, digest: str) -> Path:
        """Where the object ``digest`` lives; the digest is validated first."""
        hex_digest = parse_digest(digest)
        return self.root / hex_digest[:2] / hex_digest[2:]

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def put(self, data: bytes) -> str:
        """Store ``data`` durably; returns its 64-hex digest. Present already: nothing written."""
        return self.put_many([data])[0]

    def put_many(self, blobs: Iterable[bytes]) -> list[str]:
        """Store every blob durably with two filesystem syncs in all; returns their digests.

        Order: every temporary file is written, then synced, then renamed into place, then
        the renames are synced. A crash at any point leaves whole objects or stray
        temporary files (which ``gc`` removes), never a short object under a final name.
        """
        digests: list[str] = []
        pending: list[_Pending] = []
        seen: set[str] = set()
        self._exact_mode = _umask_keeps_read_only()
        with _discarded_on_error(pending):
            for data in blobs:
                digest = hex_of(data)
                digests.append(digest)
                if digest in seen:
                    continue
                seen.add(digest)
                fan = os.path.join(self.root, digest[:2])
                final = os.path.join(fan, digest[2:])
                try:
                    present = os.stat(final).st_size == len(data)
                except FileNotFoundError:
                    present = False
                if present:
                    self._touch(final)
                    continue
                # absent, or cut short (a damaged disk): written afresh and renamed over it
                pending.append(_Pending(self._write_temp(fan, digest, data), final))
            if pending:
                self._commit(pending)
        return digests

    def _write_temp(self, directory: str, digest: str, data: bytes) -> str:
        if directory not in self._fans:
            os.makedirs(directory, exist_ok=True)
            self._fans.add(directory)
        # Named without tempfile's random sequence (this is the per-object cost of
        # recording): unique per process and call, and O_EXCL settles a clash with a
        # leftover of a dead process that had our pid. fchmod where the umask may have
        # taken bits off the mode given to open (other users read a shared store); with
        # the usual umask (022) open's mode is exact and the call is saved.
        name = os.path.join(
            directory, f"{TEMP_PREFIX}{digest[2:18]}-{os.getpid()}-{next(_TEMP_COUNTER)}"
        )
        exact = self._exact_mode
        try:
            fd = os.open(name, _CREATE, READ_ONLY)
        except FileNotFoundError:  # the fan-out directory was removed behind our back
            os.makedirs(directory, exist_ok=True)
            fd = os.open(name, _CREATE, READ_ONLY)
        except FileExistsError:
            import tempfile

            fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
            exact = False  # created 0o600
        try:
            if not exact:
                os.fchmod(fd, READ_ONLY)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return name

    def _commit(self, pending: list[_Pending]) -> None:
        if not self.durable:
            for item in pending:
                os.replace(item.temp, item.final)
            return
        bulk = len(pending) > 4 and _syncfs(self.root)
        if not bulk:
            for item in pending:
                fsync_path(item.temp)
        for item in pending:
            os.replace(item.temp, item.final)
        if bulk and _syncfs(self.root):
            return
        if os.name == "posix":  # a rename is durable once its directory is synced
            for directory in {os.path.dirname(item.final) for item in pending}:
                fsync_path(directory)

    @staticmethod
    def _touch(path: str) -> None:
        # A fresh mtime keeps gc's grace period from removing an unreferenced object that a
        # recorder is about to reference. Another user's object cannot be touched; then its
        # age decides, and gc only removes objects no index row references.
        with contextlib.suppress(OSError):
            os.utime(path)

    def _open(self, digest: str) -> int:
        """A descriptor on the object, refused unless it is a regular file (the object
        directory is read as untrusted: a FIFO there must not block a reader)."""
        path = self.path(digest)
        try:
            return open_regular(str(path))
        except FileNotFoundError:
            raise MissingObjectError(parse_digest(digest), self.root) from None
        except NotRegularFileError as exc:
            raise UnreadableObjectError(
                f"object {ref(parse_digest(digest))} in {self.root} is {exc.kind}, not a file"
            ) from None

    def read(self, digest: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes; :class:`MissingObjectError` when absent (not re-hashed).
        ``max_bytes``: a larger object is :class:`UnreadableObjectError`, not loaded."""
        fd = self._open(digest)
        with open(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise UnreadableObjectError(
                    f"object {ref(parse_digest(digest))} holds {size} bytes, over the "
                    f"{max_bytes}-byte cap for what it is read as; not loaded"
                )
            data = handle.read(size + 1 if max_bytes is None else max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:  # it grew since the fstat
            raise UnreadableObjectError(
                f"object {ref(parse_digest(digest))} is over the {max_bytes}-byte cap; not loaded"
            )
        return data

    def read_verified(self, digest: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes after checking they still hash to ``digest``."""
        data = self.read(digest, max_bytes=max_bytes)
        expected = parse_digest(digest)
        actual = hex_of(data)
        if actual != expected:
            raise CorruptObjectError(expected, actual, self.root)
        return data

    def verify(self, digest: str) -> None:
        """Re-hash one object in bounded chunks: :class:`CorruptObjectError`,
        :class:`MissingObjectError` or :class:`UnreadableObjectError`."""
        expected = parse_digest(digest)
        hasher = blake3()
        with open(self._open(digest), "rb") as handle:
            while chunk := handle.read(VERIFY_CHUNK):
                hasher.update(chunk)
        actual = hasher.hexdigest()
        if actual != expected:
            raise CorruptObjectError(expected, actual, self.root)

    def irregular(self) -> Iterator[tuple[str, str]]:
        """(digest, what it is) of each entry named as an object that is not a regular
        file: reported by fsck, reindex and gc, and never opened."""
        if not self.root.is_dir():
            return
        for fan in sorted(os.scandir(self.root), key=lambda e: e.name):
            if len(fan.name) != 2 or not _HEX.issuperset(fan.name) or not fan.is_dir():
                continue
            for entry in os.scandir(fan.path):
                if len(entry.name) != 62 or not _HEX.issuperset(entry.name):
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
                if not stat.S_ISREG(mode):
                    what = "a symbolic link" if stat.S_ISLNK(mode) else kind(mode)
                    yield fan.name + entry.name, what

    def __iter__(self) -> Iterator[str]:
        """Every object's digest (temporary files, foreign names and entries that are not
        regular files left out)."""
        if not self.root.is_dir():
            return
        for fan in sorted(os.scandir(self.root), key=lambda e: e.name):
            if len(fan.name) != 2 or not _HEX.issuperset(fan.name) or not fan.is_dir():
                continue
            for entry in os.scandir(fan.path):
                if (
                    len(entry.name) == 62
                    and _HEX.issuperset(entry.name)
                    and entry.is_file(follow_symlinks=False)  # others: irregular()
                ):
                    yield fan.name + entry.name

    def temp_files(self) -> Iterator[Path]:
        """Temporary files left by writers that stopped before renaming them."""
        if not self.root.is_dir():
            return
        for fan in os.scandir(self.root):
            if fan.is_dir():
                for entry in os.scandir(fan.path):
                    if entry.name.startswith(TEMP_PREFIX):
                        yield Path(entry.path)

    def rewrite(self, blobs: Iterable[bytes]) -> None:
        """Write ``blobs`` even where an object of that name exists: repairs a missing or
        corrupt object (the new file is renamed over the old one)."""
        pending: list[_Pending] = []
        self._exact_mode = _umask_keeps_read_only()
        with _discarded_on_error(pending):
            for digest, raw in {hex_of(b): b for b in blobs}.items():
                fan = os.path.join(self.root, digest[:2])
                pending.append(_Pending(self._write_temp(fan, digest, raw), self._final(digest)))
            if pending:
                self._commit(pending)

    def _final(self, digest: str) -> str:
        return os.path.join(self.root, digest[:2], digest[2:])

    def holds(self, digest: str, data: bytes) -> bool:
        """Whether the object ``digest`` is present with exactly ``data`` (verify on skip)."""
        try:
            with open(open_regular(self._final(digest)), "rb") as handle:
                return handle.read(len(data) + 1) == data
        except (FileNotFoundError, NotRegularFileError):  # not there, or not an object
            return False

    def present(self, digest: str, size: int) -> bool:
        """Whether the object is present with ``size`` bytes. Opened, not just stat'ed: an
        NFS client revalidates a file on open (close-to-open consistency), while a stat may
        answer from attributes cached before another machine removed it."""
        try:
            fd = os.open(self._final(digest), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return False
        try:
            st = os.fstat(fd)
            return stat.S_ISREG(st.st_mode) and st.st_size == size
        finally:
            os.close(fd)

    def present_many(self, wanted: Mapping[str, int]) -> set[str]:
        return {digest for digest, size in wanted.items() if self.present(digest, size)}

    def remove(self, digest: str) -> None:
        """Delete one object (gc only). A read-only file is removable: the directory decides."""
        with contextlib.suppress(FileNotFoundError):
            self.path(digest).unlink()

    def stat(self, digest: str) -> Stat | None:
        from expdna.store.objects.interface import Stat

        try:
            found = os.stat(self._final(parse_digest(digest)))
        except FileNotFoundError:
            return None
        return Stat(size=found.st_size, mtime=found.st_mtime)

    def listing(self, fan: str) -> dict[str, Stat]:
        from expdna.store.objects.interface import Stat

        directory = self.root / fan
        if not directory.is_dir():
            return {}
        found: dict[str, Stat] = {}
        for entry in os.scandir(directory):
            # regular files only: anything else there is named by irregular(), never opened
            if len(entry.name) != 62 or not entry.is_file(follow_symlinks=False):
                continue
            try:
                info = entry.stat()
            except FileNotFoundError:  # removed while we looked
                continue
            found[fan + entry.name] = Stat(size=info.st_size, mtime=info.st_mtime)
        return found

    # gc's trash: one atomic rename out of place, and one back (expdna.store.maintenance)
    def trash(self, digest: str) -> str | None:
        where = self.root / TRASH / f"{digest}.{os.getpid()}"
        where.parent.mkdir(exist_ok=True)
        try:
            os.replace(self.path(digest), where)
        except FileNotFoundError:
            return None
        return str(where)

    def untrash(self, digest: str, where: str) -> None:
        final = self.path(digest)
        final.parent.mkdir(exist_ok=True)
        os.replace(where, final)

    def purge(self, where: str) -> None:
        Path(where).unlink(missing_ok=True)

    def trashed(self) -> dict[str, str]:
        directory = self.root / TRASH
        if not directory.is_dir():
            return {}
        left = {}
        for entry in os.scandir(directory):
            digest = entry.name.split(".", 1)[0]
            if len(digest) == 64:
                left[digest] = entry.path
        return left

    # the store's id and log (imported on use: the blob-writing helper needs neither)
    def read_id(self) -> str | None:
        from expdna.store.objects.idfile import read_directory_id

        return read_directory_id(self.root)

    def create_id(self) -> str:
        from expdna.store.objects.idfile import create_directory_id

        return create_directory_id(self.root)

    def holds_objects(self) -> bool:
        from expdna.store.objects.idfile import holds_objects

        return holds_objects(self.root)

    def exists(self) -> bool:
        return self.root.is_dir()

    def ensure(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def open_log(self) -> StoreLog:
        from expdna.store.objects.log import StoreLog

        return StoreLog(self.root)


@contextlib.contextmanager
def _discarded_on_error(pending: list[_Pending]) -> Iterator[None]:
    """On any error (Ctrl-C included), remove the temporary files of ``pending`` so far."""
    try:
        yield
    except BaseException:
        for item in pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(item.temp)
        raise
