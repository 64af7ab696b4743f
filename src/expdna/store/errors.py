"""The store's errors, each a subclass of expdna's error tree so the CLI maps its exit code."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from expdna.digest.refs import ref
from expdna.errors import ExpdnaError, InvalidInputError, NotFoundError

# Raised by the digest layer (below the store), so it lives in expdna's error tree; the
# store's callers keep importing and catching it from here.
from expdna.errors import InvalidDigestError as InvalidDigestError


class StoreError(ExpdnaError):
    """Base of the store's own errors (exit 2 unless a subclass says otherwise)."""

    exit_code = 2


class InvalidRunRefError(InvalidInputError):
    """A run reference that is neither a run id nor a DNA prefix of at least 6 hex."""


class AmbiguousPrefixError(InvalidInputError):
    """A DNA prefix that matches several DNAs; carries the candidates, as git does."""

    def __init__(self, prefix: str, candidates: Sequence[str]) -> None:
        listed = ", ".join(candidates)
        super().__init__(f"DNA prefix {prefix!r} is ambiguous; candidates: {listed}")
        self.prefix = prefix
        self.candidates = list(candidates)


class RunNotFoundError(NotFoundError):
    """No recorded run answers to the reference (exit 1)."""


class MissingObjectError(NotFoundError):
    """An object the index references is not in the object directory."""

    def __init__(self, digest: str, directory: Path | None = None) -> None:
        where = f" {directory}" if directory is not None else ""
        super().__init__(f"object {ref(digest)} is missing from the object directory{where}")
        self.digest = digest
        self.directory = directory


class CorruptObjectError(StoreError):
    """An object whose bytes no longer hash to its name."""

    exit_code = 1

    def __init__(self, digest: str, actual: str, directory: Path | None = None) -> None:
        where = f" (object directory {directory})" if directory is not None else ""
        super().__init__(f"object {ref(digest)} is corrupt: its bytes hash to {ref(actual)}{where}")
        self.digest = digest
        self.actual = actual


class DnaMismatchError(InvalidInputError):
    """A manifest whose stored DNA does not match its recomputed DNA."""


class RunConflictError(InvalidInputError):
    """A run id already recorded with other content."""


class NetworkFilesystemError(StoreError):
    """An SQLite index on a filesystem where SQLite's WAL cannot work."""


class IndexUnavailableError(StoreError):
    """The index database cannot be opened or answered with an error."""


class IndexRevisionError(StoreError):
    """The index schema is not at the revision this expdna needs."""


class StoreIdentityError(StoreError):
    """An index and an object directory that are not the same store's (exit 2)."""


class IndexLostError(StoreError):
    """The index looks lost or behind the object directory: ``expdna reindex`` (exit 1)."""

    exit_code = 1


class IndexMissingError(StoreError):
    """A store's objects are there and its SQLite index is not (``expdna reindex``)."""


class UnreadableObjectError(StoreError):
    """An entry at an object's path that is not a regular file (a FIFO, a directory), or an
    object larger than what may be loaded as it: reported, never opened or read whole."""

    exit_code = 1


def unwritable(root: Path, exc: OSError) -> StoreError:
    """The one line a write into a store the filesystem refuses (read-only, full) gives."""
    where = f" ({exc.filename})" if exc.filename else ""
    return StoreError(f"store {root} cannot be written: {exc.strerror or exc}{where}")
