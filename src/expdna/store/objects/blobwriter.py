"""A helper process that writes one batch's blobs while the recorder checks the next.

Writing an object is mostly kernel work: creating a temporary file, renaming it, syncing
the filesystem. On the development VM's ext4 a file creation costs from ~10 us to ~500 us
(kernel CPU in inode allocation, varying by directory and minute), up to as much as
checking a manifest. A thread cannot overlap it with checking, since the thread
needs the GIL back after every system call and the checking thread holds it for a whole
switch interval. A process can: the recorder sends a batch's blobs down a pipe (a memory
copy) and checks the next batch on one core while this process writes on the other.

The protocol is strictly one batch at a time: the recorder sends a batch, later reads one
reply line, and only then sends the next. A batch is a count, then each blob as a length
and its bytes (little-endian 64-bit); a count with its top bit set is followed first by
the batch's log entry, its name and its bytes as two such blobs, which the helper writes
durably before the objects (:meth:`expdna.store.objects.log.StoreLog.add`), so the log's
two syncs leave the recorder's path too. The reply is ``ok`` once the entry and every blob
are durable
(:meth:`expdna.store.objects.directory.ObjectDir.put_many`), or ``error <message>``. The helper
hashes each blob itself, so what it names an object is always the BLAKE3 of its bytes.

Any failure (the helper cannot start, dies, or reports an error) makes the recorder write
that batch, and the rest of the call's, itself, which raises the real error where there is
one. The helper exits at
end of input: when the recording call ends, or its process does. It ignores SIGINT so
that Ctrl-C in a terminal does not cut a batch in half.

The helper runs the recorder's own copy of this module (found by file, so that neither an
other installed expdna nor a module in the working directory is picked up) without the
package ``__init__`` modules, which load pydantic: it starts in ~30 ms instead of ~200.
Where the interpreter is not a plain Python (an embedding application), none is started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

_SIZE = struct.Struct("<Q")
#: In a batch's count: the batch's log entry (name, bytes) comes first.
_ENTRY = 1 << 63
_PYTHON = re.compile(r"(python|pypy)[0-9.]*(\.exe)?", re.IGNORECASE)
#: The helper's entry: drop the working directory from the path, make ``expdna`` and
#: ``expdna.store`` bare packages over the recorder's directories, and run :func:`main`.
_BOOT = """
import os, sys, types
if sys.path and sys.path[0] == "":
    del sys.path[0]
package, root = sys.argv[1], sys.argv[2]
for name, path in (
    ("expdna", package),
    ("expdna.store", os.path.join(package, "store")),
    ("expdna.store.objects", os.path.join(package, "store", "objects")),
):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from expdna.store.objects.blobwriter import main
main(root)
"""
#: Seconds :meth:`BlobWriter.close` waits for the helper to finish its batch and exit.
CLOSE_TIMEOUT = 30.0


class BlobWriter:
    """The recorder's side of one helper process writing into ``root``."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._sent: Sequence[bytes] | None = None

    @classmethod
    def start(cls, root: Path) -> BlobWriter | None:
        """A helper writing into ``root``, or None where one cannot be started."""
        if not _PYTHON.fullmatch(os.path.basename(sys.executable or "")):
            log.info("no blob-writing helper: %r is not a Python interpreter", sys.executable)
            return None
        package = str(Path(__file__).resolve().parents[2])  # .../expdna
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, package, str(root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        except OSError as exc:
            log.info("no blob-writing helper (%s); writing blobs in this process", exc)
            return None
        return cls(process)

    #: The helper writes the batch's log entry too (expdna.store.record.recorder).
    takes_entries = True

    def send(self, blobs: Sequence[bytes], entry: tuple[str, bytes] | None = None) -> bool:
        """Hand ``blobs`` to the helper, with the log entry (name, bytes) to write durably
        before them; False (nothing pending) when it cannot take them."""
        assert self._sent is None, "one batch at a time"
        frame = [_SIZE.pack(len(blobs) | (_ENTRY if entry is not None else 0))]
        if entry is not None:
            name = entry[0].encode("ascii")
            frame += (_SIZE.pack(len(name)), name, _SIZE.pack(len(entry[1])), entry[1])
        for data in blobs:
            frame += (_SIZE.pack(len(data)), data)
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(b"".join(frame))
            stdin.flush()
        except OSError as exc:  # the helper is gone
            log.warning("blob-writing helper stopped (%s); writing blobs in this process", exc)
            return False
        self._sent = blobs
        return True

    def wait(self) -> Sequence[bytes]:
        """Wait for the batch sent last; returns the blobs the helper did not write
        (empty when it wrote them all, the whole batch when it failed)."""
        sent, self._sent = self._sent, None
        if sent is None:
            return ()
        stdout = self._process.stdout
        assert stdout is not None
        try:
            reply = stdout.readline()
        except OSError as exc:
            reply = f"error {exc}".encode()
        if reply == b"ok\n":
            return ()
        reason = reply.decode("utf-8", "replace").strip() or "it ended"
        log.warning("blob-writing helper failed (%s); writing the batch in this process", reason)
        return sent

    def close(self) -> None:
        """End the helper after the batch it is writing, if any."""
        with contextlib.suppress(OSError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(CLOSE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


def _read(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    if len(data) != size:
        return None
    return data


def _chunk(stream: BinaryIO) -> bytes | None:
    size = _read(stream, _SIZE.size)
    return None if size is None else _read(stream, _SIZE.unpack(size)[0])


def _batch(stream: BinaryIO) -> tuple[list[bytes], tuple[str, bytes] | None] | None:
    """The next batch and its log entry, or None at end of input (a cut-off batch is
    dropped)."""
    head = _read(stream, _SIZE.size)
    if head is None:
        return None
    count = _SIZE.unpack(head)[0]
    entry = None
    if count & _ENTRY:
        count &= ~_ENTRY
        name, data = _chunk(stream), None
        if name is not None:
            data = _chunk(stream)
        if name is None or data is None:
            return None
        entry = (name.decode("ascii", "replace"), data)
    blobs = []
    for _ in range(count):
        data = _chunk(stream)
        if data is None:
            return None
        blobs.append(data)
    return blobs, entry


def serve(root: Path, source: BinaryIO, replies: BinaryIO) -> None:
    """Write each batch read from ``source`` into ``root``; reply after each."""
    from expdna.store.objects.directory import ObjectDir
    from expdna.store.objects.log import StoreLog

    objects = ObjectDir(root)
    log = StoreLog(root)
    while (batch := _batch(source)) is not None:
        blobs, entry = batch
        try:
            if entry is not None:  # before the objects it names: gc honours it
                log.add(*entry)
            objects.put_many(blobs)
            reply = b"ok\n"
        except (OSError, ValueError) as exc:
            reply = f"error {exc}\n".encode("utf-8", "replace")
        try:
            replies.write(reply)
            replies.flush()
        except BrokenPipeError:  # the recorder is gone; what was written stays whole
            return


def main(root: str) -> None:
    """The helper process: serve stdin into the object directory ``root``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(Path(root), sys.stdin.buffer, sys.stdout.buffer)
