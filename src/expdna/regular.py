"""Only regular files are read as input or replaced as output.

Reading a FIFO blocks until some writer appears (forever, for a careless user), a device
can stream without end, and ``os.replace`` onto a device node swaps the node itself for a
regular file (as root, ``--output /dev/null`` would destroy ``/dev/null``). Light: stdlib
only, so the query commands can use it without loading the record pipeline.
"""

from __future__ import annotations

import os
import stat

from expdna.errors import InvalidInputError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFileError(InvalidInputError):
    """``path`` exists but is a directory, FIFO, device or socket."""

    def __init__(self, path: str, what: str, action: str = "") -> None:
        super().__init__(f"{path}: not a regular file ({what}){action}")
        self.path = path
        self.kind = what


def kind(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a plain file"


def open_regular(path: str) -> int:
    """A read-only descriptor on ``path``, refused unless it is a regular file.

    The open does not block on a FIFO (``O_NONBLOCK``) nor take a terminal as the
    controlling one (``O_NOCTTY``); the check is on the descriptor, so a path swapped after
    a ``stat`` cannot slip through. ``OSError`` from the open itself is the caller's.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse an output path that exists and is not a regular file (a symlink is followed).

    A missing path is fine: the writer creates it.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InvalidInputError(f"{os.fspath(path)}: cannot write: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(os.fspath(path), kind(mode), "; refusing to replace it")
