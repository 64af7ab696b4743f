"""The DNA's glob patterns, by their written definition rather than by ``fnmatch``.

docs/en/guide.md ("Glob patterns") defines them so that any language can match them the
same way; this module follows that text. It agrees with :func:`fnmatch.fnmatchcase` of
Python 3.11 on every pattern (tests/unit/test_globs.py compares the two on random ones), but
does not depend on it, so the DNA cannot move with a Python release.

A pattern matches a whole name, case-sensitively, one character being one Unicode code
point: ``*`` matches any run of characters (``.`` and newlines too), ``?`` one character,
``[...]`` one character of a set; everything else (a backslash included) is itself.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


def _set_members(text: str) -> list[tuple[str, str]]:
    """The (low, high) code-point ranges of a set's member text (``!`` already removed).

    Read left to right: a character followed by ``-`` and one more character is a range;
    any other character, a ``-`` that cannot start or end a range included, is itself. A
    range whose low end is above its high end is empty.
    """
    members = []
    i = 0
    while i < len(text):
        if i + 2 < len(text) and text[i + 1] == "-":
            low, high = text[i], text[i + 2]
            i += 3
        else:
            low = high = text[i]
            i += 1
        if low <= high:
            members.append((low, high))
    return members


def _set_regex(members: list[tuple[str, str]], negated: bool) -> str:
    if not members:
        return "." if negated else "(?!)"  # the empty set, or its complement
    body = "".join(
        re.escape(low) if low == high else f"{re.escape(low)}-{re.escape(high)}"
        for low, high in members
    )
    return f"[{'^' if negated else ''}{body}]"


def translate(pattern: str) -> str:
    """The regular expression (for :func:`re.fullmatch`) that ``pattern`` stands for."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            # The set ends at the first "]" after an optional "!" and one more character
            # (so "[]]" and "[!]]" hold a "]"); without one, the "[" is itself.
            j = i + 1 if i < n and pattern[i] == "!" else i
            end = pattern.find("]", j + 1 if j < n else j)
            if end < 0:
                out.append(re.escape(c))
                continue
            text = pattern[i:end]
            negated = text.startswith("!")
            out.append(_set_regex(_set_members(text[1:] if negated else text), negated))
            i = end + 1
        else:
            out.append(re.escape(c))
    return "(?s:" + "".join(out) + ")"


def compile_globs(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regex that fully matches a name when any of ``patterns`` does."""
    alternatives = "|".join(translate(p) for p in patterns)
    return re.compile(f"(?:{alternatives})\\Z" if alternatives else "(?!)")


@functools.lru_cache(maxsize=64)
def compile_globs_cached(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """:func:`compile_globs`, remembered (``dna_ignore`` lists repeat across runs)."""
    return compile_globs(patterns)


def matches(name: str, pattern: re.Pattern[str]) -> bool:
    """``pattern`` (from :func:`compile_globs`) matches the whole of ``name``."""
    return pattern.match(name) is not None
