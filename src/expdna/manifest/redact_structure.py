"""Redaction that reads structure: patches as the files they change, and blocks of config.

* A unified diff is read as its content: each hunk line without its ``+``, ``-`` or space
  prefix, so a rule sees ``password X`` rather than ``+password X`` and a ``.netrc`` or a
  PEM block spread over added lines reads as it does in the file. Redaction never adds or
  removes a line, so the redacted patch keeps its hunks' line counts.
* A key whose name says secret and whose value is a block (YAML ``credentials:`` with
  indented lines under it, a block scalar ``private_key: |``, JSON ``"auths": {`` over
  several lines, an INI/TOML section ``[credentials]``) has every value in that block
  redacted, at any depth, whatever its shape.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Sequence
from typing import overload

_PATCH_START = re.compile(r"(?:diff --git |--- |Index: |From [0-9a-f]{40} )")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.MULTILINE)


def is_patch(text: str) -> bool:
    """Whether ``text`` is a unified diff (what ``git diff`` writes)."""
    return bool(_PATCH_START.match(text)) and _HUNK.search(text) is not None


_PREFIX = re.compile(r"^[+\- ]?", re.MULTILINE)
_STRIP = re.compile(r"^[+\- ]", re.MULTILINE)


def patch_view(text: str) -> tuple[list[str], str]:
    """The prefixes of ``text``'s lines and the text without them.

    Every line that starts with ``+``, ``-`` or a space loses that one character; a header
    line (``+++ b/x``) loses it too, harmlessly, and gets it back in :func:`from_view`.
    """
    return _PREFIX.findall(text), _STRIP.sub("", text)


def from_view(prefixes: list[str], view: str) -> str | None:
    """The patch again, or None when redaction changed the number of lines."""
    lines = view.split("\n")
    if len(lines) != len(prefixes):
        return None
    return "\n".join(map(operator.add, prefixes, lines))


# --- blocks under a secret-named key -----------------------------------------------------

# `name:` with nothing after it, a block scalar (`name: |`), or JSON opening an object or
# a list (`"name": {`); or a section header `[name]` / `[[a.name]]`.
_KEY_BLOCK = re.compile(
    r"""(?P<indent>[ \t]*(?:-[ \t]+)?)["']?(?P<name>[^\s:"'=\[\]{}#]+)["']?[ \t]*[:=][ \t]*
        (?P<open>[|>][-+0-9]*|\{|\[)?[ \t]*,?[ \t]*(?:\#.*)?""",
    re.VERBOSE,
)
_SECTION = re.compile(r"[ \t]*\[{1,2}(?P<name>[^\]\[]+)\]{1,2}[ \t]*(?:[#;].*)?")
# The value part of a line inside a block: after `key:` / `key =` / `"key":` / `- `.
_LINE_VALUE = re.compile(
    r"""(?P<head>[ \t]*(?:-[ \t]+)?
          (?:(?:"[^"]*"|'[^']*'|[^\s:="'#\[\]{},]+)[ \t]*[:=](?=[ \t]|$)[ \t]*)?)
        (?P<q>["']?)(?P<value>.*?)(?P=q)(?P<tail>[ \t]*,?[ \t]*)$""",
    re.VERBOSE,
)
_NOT_A_VALUE = re.compile(r"|[{}\[\]|>]|[|>][-+0-9]*|[\]}],?|null|~|\*\*\*")


def _spaces(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _mask_line(line: str, mask: Callable[[str], str]) -> str:
    m = _LINE_VALUE.match(line)
    if m is None:
        return line
    value = m.group("value")
    if _NOT_A_VALUE.fullmatch(value.strip()) or value.startswith(("{", "[")):
        return line
    masked = mask(value)
    if masked == value:
        return line
    return line[: m.start("value")] + masked + line[m.end("value") :]


def _block_end(lines: Sequence[str], start: int, opener: str | None) -> int:
    """The index after the last line of the block that ``lines[start]`` opens."""
    if opener in ("{", "["):
        depth = 0
        for i in range(start, len(lines)):
            line = lines[i]
            depth += line.count("{") + line.count("[") - line.count("}") - line.count("]")
            if depth <= 0:
                return i  # the closing line holds no value of its own
        return len(lines)
    first = lines[start]
    base = _spaces(first)
    item = first.lstrip(" \t").startswith("-")
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if line.strip():
            spaces = _spaces(line)
            # YAML may list a sequence at the key's own indentation
            same_level_list = spaces == base and not item and line.lstrip().startswith("- ")
            if spaces <= base and not same_level_list:
                break
        end += 1
    # trailing blank lines are not part of the block
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return end


# A patch's next file or hunk: a section of one file never runs into the next.
_PATCH_BOUNDARY = ("diff --git ", "@@ ", "Index: ")


def _section_end(lines: Sequence[str], start: int) -> int:
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if line.lstrip().startswith("[") or line.startswith(_PATCH_BOUNDARY):
            break
        end += 1
    return end


class _Unprefixed(Sequence[str]):
    """A patch's lines as the file's lines: each without its ``+``, ``-`` or space."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __len__(self) -> int:
        return len(self.lines)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        line = self.lines[i]
        return line[1:] if line[:1] in ("+", "-", " ") else line

    def put(self, i: int, new: str) -> None:
        line = self.lines[i]
        self.lines[i] = (line[:1] + new) if line[:1] in ("+", "-", " ") else new


def redact_blocks(
    lines: list[str],
    candidates: Iterable[int],
    is_secret_name: Callable[[str], bool],
    mask: Callable[[str], str],
    *,
    prefixed: bool = False,
) -> None:
    """Redact, in place, every value inside a block that a secret-named key opens.

    ``candidates`` are the indexes of lines that may open one (those that hold a name hint);
    ``prefixed``: the lines are a patch's, each read without its ``+``/``-``/space.
    """
    view: Sequence[str] = _Unprefixed(lines) if prefixed else lines

    def put(i: int, new: str) -> None:
        if isinstance(view, _Unprefixed):
            view.put(i, new)
        else:
            lines[i] = new

    done = -1
    for i in sorted(candidates):
        if i < done:
            continue  # inside a block already redacted
        line = view[i]
        section = _SECTION.fullmatch(line)
        if section is not None:
            name = section.group("name").strip().strip("\"'").rsplit(".", 1)[-1]
            if is_secret_name(name):
                done = _section_end(view, i)
                for j in range(i + 1, done):
                    put(j, _mask_line(view[j], mask))
            continue
        key = _KEY_BLOCK.fullmatch(line)
        if key is None or not is_secret_name(key.group("name")):
            continue
        done = _block_end(view, i, key.group("open"))
        for j in range(i + 1, done):
            put(j, _mask_line(view[j], mask))
