"""One error tree for expdna; each class carries the CLI exit code it maps to."""

from __future__ import annotations

from typing import Any

#: The most characters of a value one error line quotes: a manifest may come from anyone,
#: and a value in it may be of any length.
QUOTED_CHARS = 80


def cut(text: str, limit: int = QUOTED_CHARS) -> str:
    """``text`` for an error line: at most ``limit`` characters, a cut one ending in ``…``
    and its length."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(text)} characters)"


def quoted(value: Any, limit: int = QUOTED_CHARS) -> str:
    """``repr(value)`` for an error line, cut as :func:`cut` cuts (a long string is cut
    before it is quoted, so its repr is never built whole)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[: limit - 1]!r}… ({len(value)} characters)"
    return cut(repr(value), limit)


class ExpdnaError(Exception):
    """Base of every error expdna raises on purpose."""

    exit_code = 2


class InvalidInputError(ExpdnaError):
    """The user gave something unusable: a bad path, a malformed manifest, a bad flag value."""

    exit_code = 2


class InvalidDigestError(InvalidInputError):
    """A digest given by a user is not ``[blake3:]<64 lowercase hex>``."""

    def __init__(self, value: str) -> None:
        shown = value if len(value) <= 80 else value[:77] + "..."
        super().__init__(
            f"not a digest: {shown!r} (expected 64 lowercase hex characters, "
            "optionally prefixed 'blake3:')"
        )


class ManifestError(InvalidInputError):
    """A manifest file cannot be read: unreadable, malformed, wrong version, too large."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class ManifestTooLargeError(ExpdnaError):
    """A manifest cannot be brought under the size cap; nothing was written."""

    exit_code = 2


class WriteError(ExpdnaError):
    """An output file cannot be written (permissions, a full disk); the old one is kept."""

    exit_code = 2


class NotFoundError(ExpdnaError):
    """A negative answer: the thing asked for does not exist."""

    exit_code = 1


class RefusedError(ExpdnaError):
    """A command declined to act (for example `rerun --confirm` after a FAIL)."""

    exit_code = 1
