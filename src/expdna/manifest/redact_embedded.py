"""JSON stored as a string inside a manifest value: parsed and walked like a file.

A resolved argument or an environment value may hold a whole JSON document
(``DOCKER_AUTH_CONFIG='{"auths": {"reg": {"auth": "..."}}}'``). Its text is redacted as
text; the parsed document is also walked by name, as a config file's values are, and each
string the walk hid is hidden in the text too, so text and structure never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

_MAX_EMBEDDED = 1 << 20


def embedded_json(text: str) -> dict[str, Any] | list[Any] | None:
    """The JSON object or array ``text`` holds, or None when it holds none."""
    head = text.lstrip()[:1]
    if head not in ("{", "[") or len(text) > _MAX_EMBEDDED:
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def changed_strings(old: Any, new: Any) -> Iterator[tuple[str, str]]:
    """``(before, after)`` for every string leaf of ``old`` that ``new`` holds changed
    (``new`` is ``old`` after a redaction walk: the same shape, keys unchanged)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            if key in new:
                yield from changed_strings(value, new[key])
    elif isinstance(old, list) and isinstance(new, list):
        for a, b in zip(old, new, strict=False):
            yield from changed_strings(a, b)
    elif isinstance(old, str) and isinstance(new, str) and old != new:
        yield old, new


def rewrite(text: str, changes: Iterator[tuple[str, str]]) -> str:
    """``text`` (a JSON document) with each changed string replaced where it is written."""
    for before, after in changes:
        text = text.replace(json.dumps(before), json.dumps(after))
        text = text.replace(json.dumps(before, ensure_ascii=False), json.dumps(after))
    return text
