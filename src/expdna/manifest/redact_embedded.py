"""JSON, YAML and TOML stored as a string inside a manifest value: parsed and walked like a
file.

A resolved argument, an environment value or a config file's text may hold a whole document
(``DOCKER_AUTH_CONFIG='{"auths": {"reg": {"auth": "..."}}}'``, a kubeconfig in a variable,
a TOML table in a JSON string). Its text is redacted as text; the parsed document is also
walked by name, as a config file's values are, and each string the walk changed is changed
the same way where the text writes it, so text and structure never disagree.

Look-alike guards: a YAML or TOML document is looked for only in a string of several lines
whose first line opens one (``name:``, ``- item``, ``name = value``, ``[table]``), that is not
a patch and is at most :data:`MAX_DOCUMENT` characters, and only a document of mappings or
lists counts (``note: fine`` on one line is text). Loaders are safe only (PyYAML's safe
loader, ``tomllib``/``tomli``); a missing PyYAML or tomli means the text rules alone apply.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from typing import Any

from expdna.manifest.redact_rules import REDACTED_MARK

_MAX_EMBEDDED = 1 << 20
#: YAML and TOML are parsed only up to this size: larger strings are logs and patches.
MAX_DOCUMENT = 64 * 1024
# Parsed nodes walked at most: YAML aliases can expand a small document exponentially.
_MAX_NODES = 20_000

Document = dict[str, Any] | list[Any]


def embedded_json(text: str) -> Document | None:
    """The JSON object or array ``text`` holds, or None when it holds none."""
    head = text.lstrip()[:1]
    if head not in ("{", "[") or len(text) > _MAX_EMBEDDED:
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


# The first line of a document: a TOML table or key, a YAML key or list item.
_TOML_START = re.compile(
    r"""[ \t]*(?:\[{1,2}[\w.\-"' ]+\]{1,2}|[\w.\-"']+[ \t]*=[ \t]*\S.*)[ \t]*(?:\#.*)?"""
)
_YAML_START = re.compile(
    r"""[ \t]*(?:-[ \t]+\S|---|(?:[\w.\-/]+|"[^"]*"|'[^']*')[ \t]*:(?:[ \t]|$))"""
)
_PATCH = re.compile(r"diff --git |--- |Index: |From [0-9a-f]{40} |@@ ")


def _first_line(text: str) -> str | None:
    for line in text.split("\n", 64)[:64]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return line
    return None


def _module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _toml(text: str) -> Any:
    toml = _module("tomllib", "tomli")  # tomli on Python 3.10
    if toml is None:
        return None
    try:
        return toml.loads(text)
    except (toml.TOMLDecodeError, ValueError, RecursionError):
        return None


def _yaml(text: str) -> Any:
    yaml = _module("yaml")  # PyYAML is optional in a core install
    if yaml is None:
        return None
    # A safe loader only: the full loader would build any Python object the text names.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.load_all(text, Loader=loader))
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    return documents[0] if len(documents) == 1 else documents


def _bounded(value: Any) -> bool:
    """Whether ``value`` has at most :data:`_MAX_NODES` nodes (aliases counted each time)."""
    budget = _MAX_NODES
    stack = [value]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _structured(parsed: Any) -> bool:
    if isinstance(parsed, dict):
        return bool(parsed)
    return isinstance(parsed, list) and any(isinstance(v, (dict, list)) for v in parsed)


def embedded_document(text: str) -> tuple[str, Document] | None:
    """``(format, document)`` for the JSON, TOML or YAML document ``text`` holds, or None."""
    parsed = embedded_json(text)
    if parsed is not None:
        return "json", parsed
    if "\n" not in text.strip() or len(text) > MAX_DOCUMENT:
        return None
    first = _first_line(text)
    if first is None or _PATCH.match(first):
        return None
    for fmt, start, load in (("toml", _TOML_START, _toml), ("yaml", _YAML_START, _yaml)):
        if start.fullmatch(first) if fmt == "toml" else start.match(first):
            doc = load(text)
            if _structured(doc) and _bounded(doc):
                return fmt, doc
    return None


def changed_strings(old: Any, new: Any, key: str = "") -> Iterator[tuple[str, str, str]]:
    """``(key, before, after)`` for every string leaf of ``old`` that ``new`` holds changed
    (``new`` is ``old`` after a redaction walk: the same shape, keys unchanged); ``key`` is
    the name the leaf is stored under (a list's items: the list's)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for name, value in old.items():
            if name in new:
                yield from changed_strings(value, new[name], str(name))
    elif isinstance(old, list) and isinstance(new, list):
        for a, b in zip(old, new, strict=False):
            yield from changed_strings(a, b, key)
    elif isinstance(old, str) and isinstance(new, str) and old != new:
        yield key, old, new


# Values this long are replaced wherever they are written as a value; shorter ones only on
# the line of their own key (`user = "ci"` hidden in a table is not every `ci` of the file).
# The same length as the tree's spread of hidden secrets (redact._MIN_SPREAD).
_ANYWHERE = 8


def _bare(text: str, key: str, before: str, after: str) -> str:
    """``before`` replaced where it is written as a value: plain or single-quoted (YAML,
    TOML literal strings), after its key's ``:`` or ``=``, and when long enough also after a
    ``,``, ``[``, ``{`` or a list's ``-``, or as a line of its own (a block scalar's)."""
    if not before.strip():
        return text
    body = re.escape(before)
    end = r"""(?=['"]?[ \t]*(?:[,\]}#]|$))"""
    name = rf"""(?:^|[\s{{,])["']?{re.escape(key)}["']?[ \t]*[:=]"""
    patterns = [rf"""(?m)({name}[ \t]*['"]?){body}{end}"""] if key else []
    if len(before) >= _ANYWHERE:
        patterns += [
            rf"""(?m)((?:[:=,\[{{]|^[ \t]*-)[ \t]*['"]?){body}{end}""",
            rf"(?m)^([ \t]*){body}(?=[ \t]*$)",
        ]
    for pattern in patterns:
        text = re.sub(pattern, lambda m: m.group(1) + after, text)
    return text


def rewrite(text: str, changes: Iterator[tuple[str, str, str]], fmt: str = "json") -> str:
    """``text`` (a document in ``fmt``) with each changed string replaced where it is
    written: quoted as JSON writes it (JSON, TOML basic strings, YAML double quotes), and in
    YAML and TOML also plain or single-quoted, line by line for a multi-line value."""
    for key, before, after in changes:
        if fmt == "json" or json.dumps(before)[1:-1] != before:  # written with escapes
            text = text.replace(json.dumps(before), json.dumps(after))
            text = text.replace(json.dumps(before, ensure_ascii=False), json.dumps(after))
        if fmt == "json":
            continue
        if "\n" not in before.strip("\n"):
            text = _bare(text, key, before.strip("\n"), after.strip("\n"))
            continue
        old_lines, new_lines = before.split("\n"), after.split("\n")
        if len(old_lines) != len(new_lines):  # hidden whole: every line of it goes
            new_lines = [REDACTED_MARK if line.strip() else line for line in old_lines]
        for old, new in zip(old_lines, new_lines, strict=True):  # a block scalar
            if old != new:
                text = _bare(text, key, old.strip(), new.strip())
    return text
