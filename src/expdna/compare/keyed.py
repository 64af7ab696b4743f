"""Lists of named things, compared by name instead of by position.

A dataset listing that lacks one file would, compared by index, change every later entry
(``listing.0.0: input.txt -> meta.pkl``, …). Each list named in :data:`KEYED_LISTS` is
turned into a :class:`Items` mapping from the items' names, so ``diff`` pairs items by
name and says "input.txt missing". :func:`unkeyed` turns such a document back into the
manifest's own shape (for the DNA).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any


class Name(str):
    """A path segment that names a list item (shown as ``[name]``, not ``.name``)."""

    __slots__ = ()


class Items(dict[Name, Any]):
    """A list of named items, by name, in the list's order."""


class Row(dict[str, Any]):
    """A list-shaped item (``[name, size, digest]``) by field name; compared whole."""


@dataclass(frozen=True)
class KeyedList:
    #: Glob over the dotted path of the list (``*`` spans segments, a name shows as ``[x]``).
    pattern: str
    #: The name of an item, or ``None`` when it has none (then the list keeps its order).
    key: Callable[[Any], str | None]
    #: Field names of a list-shaped item; such an item is one :class:`Row`.
    fields: tuple[str, ...] = ()


def _field(*names: str) -> Callable[[Any], str | None]:
    def key(item: Any) -> str | None:
        if not isinstance(item, Mapping):
            return None
        return next((str(item[n]) for n in names if isinstance(item.get(n), (str, int))), None)

    return key


def _first(item: Any) -> str | None:
    return item[0] if isinstance(item, list) and item and isinstance(item[0], str) else None


def _root_name(item: Any) -> str | None:
    root = item.get("root") if isinstance(item, Mapping) else None
    if not isinstance(root, str):
        return None
    return posixpath.basename(root.rstrip("/")) or root


#: Every list of named things in a manifest; the rest compare by position.
KEYED_LISTS: tuple[KeyedList, ...] = (
    KeyedList("data.datasets", _root_name),
    KeyedList("data.datasets*.listing", _first, fields=("name", "size", "digest")),
    KeyedList("code.*.submodules", _field("path")),
    KeyedList("code.*.patch.binary_files", _field("path")),
    KeyedList("runtime.nodes", _field("hostname", "node_id", "node_ip")),
)


def dotted(keys: tuple[str | int, ...]) -> str:
    """A path as text: ``data.datasets[cifar].listing[train.bin]``."""
    text = ""
    for key in keys:
        if isinstance(key, Name):
            text += f"[{key}]"
        else:
            text += f".{key}" if text else str(key)
    return text


def _rule(path: str) -> KeyedList | None:
    return next((rule for rule in KEYED_LISTS if fnmatchcase(path, rule.pattern)), None)


def keyed(value: Any, keys: tuple[str | int, ...] = ()) -> Any:
    """``value`` with every list of :data:`KEYED_LISTS` as :class:`Items`.

    A list whose items do not all have distinct names stays a list.
    """
    if isinstance(value, Mapping):
        return {k: keyed(v, (*keys, str(k))) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    rule = _rule(dotted(keys)) if keys else None
    names = [rule.key(item) for item in value] if rule else []
    if rule is None or None in names or len(set(names)) != len(names):
        return [keyed(item, (*keys, i)) for i, item in enumerate(value)]
    items = Items()
    for name, item in zip(names, value, strict=True):
        segment = Name(name)
        if rule.fields and isinstance(item, list) and len(item) == len(rule.fields):
            items[segment] = Row(zip(rule.fields, item, strict=True))
        else:
            items[segment] = keyed(item, (*keys, segment))
    return items


def unkeyed(value: Any) -> Any:
    """The manifest's own shape of a :func:`keyed` document."""
    if isinstance(value, Row):
        return list(value.values())
    if isinstance(value, Items):
        return [unkeyed(v) for v in value.values()]
    if isinstance(value, Mapping):
        return {str(k): unkeyed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unkeyed(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """A keyed value as plain JSON data (a :class:`Row` as an object)."""
    if isinstance(value, Items):
        return [plain(v) for v in value.values()]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
