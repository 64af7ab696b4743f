"""The bodies of ``pin`` and ``metrics`` log entries, checked without the index.

The training process writes these entries itself (:mod:`expdna.store.deferred`) and must
not import SQLAlchemy, so the checks a pin name and a metrics mapping get live here, away
from the modules that apply them to the index (``pins``, ``metrics``).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from expdna.digest.refs import parse_digest
from expdna.errors import InvalidInputError

MAX_NAME_CHARS = 1024


def check_name(name: str | None) -> str | None:
    """A pin name: any non-empty text on one line (exit 2 otherwise)."""
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("a pin name must be a non-empty string")
    if len(name) > MAX_NAME_CHARS or any(not ch.isprintable() for ch in name):
        raise InvalidInputError(
            f"pin name {name[:40]!r}: at most {MAX_NAME_CHARS} printable characters"
        )
    return name


def pin_body(
    run_id: str, digest: str, name: str | None, path: str | None, size: int | None
) -> dict[str, Any]:
    """A ``pin`` entry's body, every field checked (exit 2 on a bad one)."""
    hex_digest = parse_digest(digest)
    checked = check_name(name)
    if size is not None and (not isinstance(size, int) or size < 0):
        raise InvalidInputError(f"pin size {size!r} is not a byte count")
    return {"run_id": run_id, "digest": hex_digest, "name": checked, "path": path, "size": size}


def plain_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics`` as plain JSON values (numpy scalars become int/float); bad input is exit 2."""
    if not isinstance(metrics, Mapping):
        raise InvalidInputError(
            f"metrics must be a mapping of names to values, not {type(metrics).__name__}"
        )
    return {_name(key): _plain(value, str(key)) for key, value in metrics.items()}


def _name(key: Any) -> str:
    if not isinstance(key, str) or not key or key.startswith(".") or key.endswith("."):
        raise InvalidInputError(f"metric name {key!r} is not usable (a non-empty string)")
    return key


def _plain(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        return {_name(k): _plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    raise InvalidInputError(
        f"metric {where}: {type(value).__name__} is not a number, string, list or mapping"
    )
