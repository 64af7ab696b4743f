"""Canonical JSON bytes (RFC 8785), with expdna's rules for values JSON cannot carry.

Non-finite floats become ``"<non-finite:inf>"``, ``"<non-finite:-inf>"`` or
``"<non-finite:nan>"``; integers outside the exactly-representable range (|n| > 2^53 - 1)
become their decimal string, so nothing is silently rounded by an IEEE-754 reader.

The ``rfc8785`` package is the authority. It is pure Python, and a manifest is hashed on
every start, so most documents take a fast path instead: the C ``json`` encoder writes
exactly the RFC 8785 bytes when every key sorts the same by code point as by UTF-16 code
unit (no key holds a character at or above U+D800) and every float prints the same in
Python and ECMAScript (no exponent; integral floats are written as integers). Anything
else goes to ``rfc8785``.
tests/unit/test_canonical.py holds the two paths equal on the published vectors and on
randomly generated documents.
"""

from __future__ import annotations

import json
import json.encoder
import math
from collections.abc import Callable, Mapping
from typing import Any

import rfc8785

MAX_SAFE_INTEGER = 2**53 - 1
_FAST_KEY_LIMIT = "\ud800"


def _refuse(value: Any) -> Any:
    raise TypeError(f"cannot canonicalise a value of type {type(value).__name__}")


def make_encoder(
    *, sort_keys: bool = True, separators: tuple[str, str] = (",", ":"), allow_nan: bool = False
) -> Callable[[Any], str]:
    """JSON (by default compact: no spaces; UTF-8 text, no NaN/Infinity) through the C
    encoder, built once (``JSONEncoder.encode`` builds one on every call, which costs more
    than encoding a small document). Other types raise TypeError, non-finite floats
    ValueError unless ``allow_nan``."""
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(
            ensure_ascii=False, allow_nan=allow_nan, sort_keys=sort_keys, separators=separators
        ).encode
    item, key = separators
    iterencode = c_make_encoder(
        None, _refuse, json.encoder.encode_basestring, None, key, item, sort_keys, False, allow_nan
    )
    return lambda value: "".join(iterencode(value, 0))


_encode = make_encoder()


class _Slow(Exception):
    """The document needs the reference encoder."""


def _float(value: float) -> Any:
    if not math.isfinite(value):
        if math.isnan(value):
            return "<non-finite:nan>"
        return "<non-finite:inf>" if value > 0 else "<non-finite:-inf>"
    return value


def _int(value: int) -> int | str:
    return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else str(value)


def normalise(value: Any) -> Any:
    """``value`` with non-finite floats and unsafe integers replaced, tuples as lists."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, Mapping):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    raise TypeError(f"cannot canonicalise a value of type {type(value).__name__}")


def _fast(value: Any, drop_none: bool) -> Any:
    """Like :func:`normalise`, raising :class:`_Slow` where the C encoder would differ."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return _int(value)
    if kind is float:
        if not math.isfinite(value):
            return _float(value)
        if value.is_integer():
            if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
                return int(value)  # ECMAScript prints 2.0 as 2, and -0.0 as 0
            # Beyond 2^53 the C encoder writes 9007199254740992.0 (no exponent below 1e16)
            # where ECMAScript writes 9007199254740992: found by spec/js, a second encoder.
            raise _Slow
        if "e" in repr(value):
            raise _Slow
        return value
    if kind is dict:
        result = {}
        for k, v in value.items():
            if v is None and drop_none:
                continue
            if type(k) is not str or (not k.isascii() and max(k) >= _FAST_KEY_LIMIT):
                raise _Slow
            result[k] = _fast(v, drop_none)
        return result
    if kind is list or kind is tuple:
        return [_fast(v, drop_none) for v in value]
    raise _Slow


def drop_none(value: Any) -> Any:
    """``value`` without ``None`` dict values, at any depth."""
    if isinstance(value, Mapping):
        return {k: drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [drop_none(v) for v in value]
    return value


def canonical_bytes(value: Any, *, drop_none_values: bool = False) -> bytes:
    """RFC 8785 bytes of ``value`` after :func:`normalise`.

    With ``drop_none_values``, dict entries whose value is ``None`` are left out first (the
    DNA reads ``null`` and absent as the same fact).
    """
    try:
        return _encode(_fast(value, drop_none_values)).encode("utf-8")
    except (_Slow, UnicodeEncodeError):
        return reference_bytes(drop_none(value) if drop_none_values else value)


def reference_bytes(value: Any) -> bytes:
    """RFC 8785 bytes through the reference implementation alone."""
    return bytes(rfc8785.dumps(normalise(value)))
