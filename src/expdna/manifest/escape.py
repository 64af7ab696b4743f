"""Bytes that are not UTF-8, written losslessly as text.

On POSIX, argv, environment values and paths are bytes; Python hands undecodable ones over
as lone surrogates (PEP 383, ``surrogateescape``), which JSON and RFC 8785 cannot carry.
Such a string is recorded in the *escaped form*::

    bytes:<text>

where ``<text>`` is the original bytes with every valid UTF-8 character kept as it is,
``%`` written ``%25``, and every other byte written ``%XX`` (two upper-case hex digits).
NUL, valid UTF-8 that no index text column and no C string can hold, is written ``%00``.
``b"caf\\xe9 100%"`` is recorded as ``"bytes:caf%E9 100%25"``. A string that happens to
start with ``bytes:`` is escaped too, so the form is a bijection: :func:`to_bytes` gives
back the exact bytes of every recorded word, and ``rerun`` passes those to the program.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

PREFIX = "bytes:"
_ESCAPED_LOW, _ESCAPED_HIGH = 0xDC80, 0xDCFF  # what surrogateescape makes of bytes 0x80-0xFF


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def needs_escape(text: str) -> bool:
    """True for a string that JSON cannot carry as is, or that looks escaped already."""
    return text.startswith(PREFIX) or "\x00" in text or _has_surrogate(text)


def _raw(text: str) -> bytes:
    """The bytes ``text`` stands for: surrogateescape'd bytes back to bytes."""
    out = bytearray()
    for ch in text:
        code = ord(ch)
        if _ESCAPED_LOW <= code <= _ESCAPED_HIGH:
            out.append(code - 0xDC00)
        else:  # any other lone surrogate keeps its (invalid) UTF-8 bytes
            out += ch.encode("utf-8", "surrogatepass")
    return bytes(out)


def escape_bytes(raw: bytes) -> str:
    """``raw`` in the escaped form (always with the ``bytes:`` prefix)."""
    parts = [PREFIX]
    for ch in raw.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if _ESCAPED_LOW <= code <= _ESCAPED_HIGH:
            parts.append(f"%{code - 0xDC00:02X}")
        elif ch == "%":
            parts.append("%25")
        elif ch == "\x00":
            parts.append("%00")
        else:
            parts.append(ch)
    return "".join(parts)


def escape(text: str) -> str:
    """``text`` as recorded: unchanged unless :func:`needs_escape`."""
    return escape_bytes(_raw(text)) if needs_escape(text) else text


def is_escaped(text: str) -> bool:
    return text.startswith(PREFIX)


def to_bytes(text: str) -> bytes:
    """The original bytes of a recorded string (escaped or not)."""
    if not is_escaped(text):
        return text.encode("utf-8", "surrogateescape")
    body = text[len(PREFIX) :]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "%" and _is_hex(body[i + 1 : i + 3]):
            out.append(int(body[i + 1 : i + 3], 16))
            i += 3
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return bytes(out)


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789ABCDEFabcdef" for c in pair)


def to_os_str(text: str) -> str:
    """A recorded string as the OS string it was (``os.fsdecode`` of its bytes)."""
    return os.fsdecode(to_bytes(text)) if is_escaped(text) else text


def escape_tree(value: Any) -> Any:
    """``value`` with every string, keys included, in its recorded form.

    Returns the same objects where nothing needed escaping, so the common case copies
    nothing it does not have to.
    """
    if isinstance(value, str):
        return escape(value) if needs_escape(value) else value
    if isinstance(value, Mapping):
        items = [(escape_tree(k), escape_tree(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list):
        escaped = [escape_tree(v) for v in value]
        if all(a is b for a, b in zip(escaped, value, strict=True)):
            return value
        return escaped
    return value
