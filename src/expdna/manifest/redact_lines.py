"""Redaction of text: which rules run where, fast enough for a 1 MiB patch.

Short text goes through every rule whose hint it holds. Past 32 KB only the lines that hold
a hint (a shape's prefix, a secret-looking name, a long word with a digit) go through the
line rules, and multi-line rules (PEM, ``.netrc``, blocks under a secret key) run around
their hints; a patch's lines are read without their ``+``/``-``/space prefix throughout
(:mod:`expdna.manifest.redact_structure`).
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
import string

from expdna.manifest.redact_names import (
    ANY_ASSIGNMENT,
    ASSIGNMENT,
    BARE_WORD,
    NAME_HINT,
    NAME_HINTS,
    WORD_RUN,
    assignment,
    backstop,
    bare_backstop,
    flow_collections,
    is_secret_name,
    mask,
)
from expdna.manifest.redact_rules import NETRC, PEM, SHAPE_RULES, Rule, apply, rules_for
from expdna.manifest.redact_structure import from_view, is_patch, patch_view, redact_blocks


def _line_local(text: str) -> str:
    """Rules that never look past the end of a line: token shapes, addresses, hosts,
    paths, secret-named assignments and the entropy backstop."""
    if len(text) > _PER_LINE:
        return _line_local_by_line(text)
    text = _escaped_literals(text)
    for rule in rules_for(text):
        if rule is not PEM and rule is not NETRC:
            text = rule.pattern.sub(rule.replace, text)
    lower = text.lower()
    if any(w in lower for w in NAME_HINTS):
        text = ASSIGNMENT.sub(assignment, flow_collections(text))
    if WORD_RUN.search(text):
        text = ANY_ASSIGNMENT.sub(backstop, text)
        text = BARE_WORD.sub(bare_backstop, text)
    return text


# A double-quoted literal holding escapes: JSON, YAML or code inside a JSON, TOML or Python
# string (`"{\"auths\": {...}}"`, a notebook's source line). Its rules must see the text the
# string holds, not its escapes.
_ESCAPED_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*\\["n](?:[^"\\\n]|\\.)*)"')


def _unescaped(m: re.Match[str]) -> str:
    body = m.group(1)
    try:
        inner = json.loads(f'"{body}"')
    except ValueError:
        return m.group(0)  # a Python escape JSON does not know (`\\'`, `\\x41`): as it is
    new = _redact_short(inner)
    if new == inner:
        return m.group(0)
    return json.dumps(new, ensure_ascii=False)


def _escaped_literals(text: str) -> str:
    if '\\"' not in text and "\\n" not in text:
        return text
    return _ESCAPED_LITERAL.sub(_unescaped, text)


# Above this size each rule runs only on the lines that hold one of its hints: one
# substring test per hint over the whole text is cheaper than one regex scan for all.
_PER_LINE = 4096


def _line_local_by_line(text: str) -> str:
    lines = text.split("\n")
    lower = text.lower()
    lower_lines: list[str] | None = None
    for rule in SHAPE_RULES:
        if rule is PEM or rule is NETRC:
            continue
        where = lower if rule.fold else text
        hints = [h for h in rule.hints if h in where]
        if not hints:
            continue
        if rule.fold and lower_lines is None:
            lower_lines = [line.lower() for line in lines]
        looked = lower_lines if rule.fold and lower_lines is not None else lines
        for i, line in enumerate(looked):
            if any(h in line for h in hints):
                lines[i] = rule.pattern.sub(rule.replace, lines[i])
    for i, line in enumerate(lines):
        line = _escaped_literals(line)
        if NAME_HINT.search(line):
            line = ASSIGNMENT.sub(assignment, flow_collections(line))
        if WORD_RUN.search(line):
            line = BARE_WORD.sub(bare_backstop, ANY_ASSIGNMENT.sub(backstop, line))
        lines[i] = line
    return "\n".join(lines)


def _multi_line(text: str) -> str:
    """Rules over several lines: PEM blocks, `.netrc` entries."""
    for rule in (PEM, NETRC):
        text = apply(rule, text)
    return text


def _blocks(lines: list[str], candidates: list[int], *, prefixed: bool = False) -> None:
    redact_blocks(lines, candidates, is_secret_name, mask, prefixed=prefixed)


# Past this size only the lines that hold a hint go through the line-local rules: a
# patch of 1 MiB must take milliseconds, and most of its lines hold nothing to look at.
_SELECT_LINES = 32 * 1024
# Lines worth a look: where a shape's hint, a secret-looking name or a long word is.
_LONG_HINTS = ("://", "10.", "172.", "192.168.", "100.", "169.254.", ":A")
_LONG_HINTS_FOLD = (
    "/home/", "/users/", "\\users\\", "bearer", ".internal", ".corp", ".local", ".lan",
    "curl", "mysql", "mariadb", "login", "sshpass", "redis-cli", "mongo", "signature", "sig=",
)  # fmt: skip
# in lower case; `auth` also finds `Authorization`, `key` also `AccountKey=`
_LONG_NAME_HINTS = (
    "key", "token", "secret", "pass", "pw", "auth", "cookie", "session", "cred", "wandb",
)  # fmt: skip
# For blocks in shorter texts: the words of secret names.
_NAME_LINE_HINTS = (
    "key", "token", "secret", "passw", "passp", "_pass", "pass_", "pass=", "pass:", "pw",
    "auth", "cookie", "session", "creds", "credential",
)  # fmt: skip
_IPV6_START = re.compile(r"f[cde][0-9a-f]{1,2}:")


def _by_first_character(
    hints: tuple[str, ...], names: tuple[str, ...] = ()
) -> tuple[re.Pattern[str], ...]:
    """One regex per first character of ``hints`` and ``names``: a pattern that starts with
    one literal character is searched by the engine at memchr speed, where a scan per hint
    costs a pass over the text each (``s(?:ecret|ession|ig=)`` is one pass, not three).
    A match of one of ``names`` has its group ``name`` set."""
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for kind, words in ((0, hints), (1, names)):
        for word in words:
            groups.setdefault(word[0], ([], []))[kind].append(word[1:])

    def alternatives(tails: list[str]) -> str:
        return "|".join(map(re.escape, sorted(tails, key=len, reverse=True)))

    patterns = []
    for head, (plain, named) in groups.items():
        options = [f"(?P<name>{alternatives(named)})"] if named else []
        options += [alternatives(plain)] if plain else []
        patterns.append(re.compile(re.escape(head) + "(?:" + "|".join(options) + ")"))
    return tuple(patterns)


_LONG_HINT_PATTERNS = _by_first_character(_LONG_HINTS)
_LONG_FOLD_PATTERNS = _by_first_character(_LONG_HINTS_FOLD, _LONG_NAME_HINTS)
# After a name hint: the rest of a name, then what makes it one: `=` or `:` (`api_key =`,
# `"auths": {`, `\"token\":` inside a JSON string), a section's `]`, or a flag's space and
# value (`--db-pw X`, checked to start with `-`). `for key in keys` is not a name.
_NAME_AFTER = re.compile(
    r"""[\w.\-]*(?:\\?["'])?(?:\]|[ \t]*(?:=(?!=)|:)|[ \t]+(?P<space>[^\s\-"']))"""
)
_NAME_CHARS = frozenset(string.ascii_lowercase + string.digits + "_.-")


def _is_name(lower: str, at: int, end: int) -> bool:
    """Whether the name hint at ``lower[at:end]`` is in a name used as one: a name rule or
    a block may apply there."""
    m = _NAME_AFTER.match(lower, end)
    if m is None:
        return False
    if m.group("space") is None:
        return True
    start = at  # `--flag VALUE`: only a flag's name counts
    while start > 0 and lower[start - 1] in _NAME_CHARS:
        start -= 1
    return lower[start] == "-"


def _hint_positions(lower: str) -> tuple[list[int], list[int]]:
    """Where ``lower`` holds a hint of ``_LONG_HINTS_FOLD`` and where a name."""
    hints, names = [], []
    for pattern in _LONG_FOLD_PATTERNS:
        for m in pattern.finditer(lower):
            if m.lastgroup != "name":
                hints.append(m.start())
            elif _is_name(lower, m.start(), m.end()):
                names.append(m.start())
    return hints, names


# A word of 16 characters or more with a digit that has five more word characters after
# it: where a token shape or a random key has its body. Found in the text translated to
# three symbols (`a` a word character, `1` a digit, a space anything else), where the
# engine skips to the next `1` at memchr speed; a token whose digits all sit in its last
# five characters (one in hundreds of random bodies) is found only on a line that holds
# another hint.
_RUN_SYMBOLS = bytes(
    ord("1") if chr(c) in string.digits else ord("a") if chr(c) in "_+/=.~-" or chr(c).isalpha()
    else ord(" ")
    for c in range(128)
) + b" " * 128  # fmt: skip
_DIGIT_RUN = re.compile(rb"1[a1]{5,}")
_MIN_RUN = 16


def _long_runs(scan: str) -> list[int]:
    """Where the runs are, in ``scan`` (ASCII)."""
    symbols = scan.encode("ascii").translate(_RUN_SYMBOLS)
    found = []
    for m in _DIGIT_RUN.finditer(symbols):
        start, end = m.span()
        short = _MIN_RUN - (end - start)
        # the run goes on before the digit: long enough when no break precedes it closely
        if short <= 0 or (start >= short and symbols.rfind(b" ", start - short, start) < 0):
            found.append(start)
    return found


def _literal_positions(text: str, hint: str) -> list[int]:
    found = []
    at = text.find(hint)
    while at >= 0:
        found.append(at)
        at = text.find(hint, at + 1)
    return found


def _pattern_positions(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[int]:
    return [m.start() for pattern in patterns for m in pattern.finditer(text)]


def _redact_long(text: str, *, prefixed: bool = False) -> str:
    """``text`` line by line, only where a line holds a hint; ``prefixed``: a patch, whose
    lines are read without their ``+``/``-``/space where it matters (blocks, PEM, netrc)."""
    lines = text.split("\n")
    starts = list(itertools.accumulate(map((1).__add__, map(len, lines)), initial=0))
    # Scanned as one byte a character (the engine is twice as fast), same positions.
    scan = text if text.isascii() else text.encode("ascii", "replace").decode("ascii")
    lower = scan.lower()

    def line_of(positions: list[int]) -> set[int]:
        return {bisect.bisect_right(starts, at) - 1 for at in positions}

    hints, name_positions = _hint_positions(lower)
    names = line_of(name_positions)
    picked = names | line_of(hints)
    picked |= line_of(_pattern_positions(scan, _LONG_HINT_PATTERNS))
    picked |= line_of([m.start() for m in _IPV6_START.finditer(lower)])
    picked |= line_of(_long_runs(scan))
    for hint in _MULTI_LINE_HINTS:
        for i in sorted(line_of(_literal_positions(scan, hint))):
            _multi_line_at(lines, i, prefixed=prefixed)
    if names:
        _blocks(lines, sorted(names), prefixed=prefixed)
    chosen = sorted(picked)
    if chosen:
        done = _line_local("\n".join(lines[i] for i in chosen)).split("\n")
        if len(done) == len(chosen):
            for i, line in zip(chosen, done, strict=True):
                lines[i] = line
        else:  # a rule joined or split lines: never expected, but never leak because of it
            return _redact_short(text)
    return "\n".join(lines)


_NETRC_LINES = 6  # `machine`, `login`, `password`, `account`... a few lines at most


def _multi_line_at(lines: list[str], i: int, *, prefixed: bool) -> None:
    """PEM and netrc rules over the few lines from ``i`` on, read without a patch's
    prefixes, and written back with them."""
    end = min(len(lines), i + _NETRC_LINES)
    if "-----BEGIN" in lines[i]:
        end = next((j + 1 for j in range(i + 1, len(lines)) if "-----END" in lines[j]), len(lines))
    region = lines[i:end]
    if prefixed:
        heads = [line[:1] if line[:1] in ("+", "-", " ") else "" for line in region]
        body = [line[len(h) :] for h, line in zip(heads, region, strict=True)]
    else:
        heads, body = [""] * len(region), region
    done = _multi_line("\n".join(body)).split("\n")
    if len(done) == len(region):
        lines[i:end] = [h + line for h, line in zip(heads, done, strict=True)]


def _redact_short(text: str) -> str:
    text = _multi_line(text)
    if "\n" in text:
        lower = text.lower()
        if any(w in lower for w in _NAME_LINE_HINTS):
            lines = text.split("\n")
            candidates = [
                i
                for i, line in enumerate(lines)
                if any(w in line.lower() for w in _NAME_LINE_HINTS)
            ]
            _blocks(lines, candidates)
            text = "\n".join(lines)
    return _line_local(text)


def _redact_plain(text: str, home: Rule | None, *, prefixed: bool = False) -> str:
    if home is not None:
        text = apply(home, text)  # before the rule for other users' homes sees it
    if len(text) > _SELECT_LINES:
        return _redact_long(text, prefixed=prefixed)
    return _redact_short(text)


# Rules that read several lines at once: in a large text they run where these are.
_MULTI_LINE_HINTS = ("PRIVATE KEY", "machine")


def redact_text_with(text: str, home: Rule | None) -> str:
    """``text`` redacted, ``home`` the rule for the current user's home (None: none)."""
    if len(text) > _SELECT_LINES:
        # Large: the lines that need it are read without a patch's prefixes as they go.
        return _redact_plain(text, home, prefixed=is_patch(text))
    if len(text) > 64 and is_patch(text):
        prefixes, view = patch_view(text)
        patch = from_view(prefixes, _redact_plain(view, home))
        if patch is not None:
            return patch
    return _redact_plain(text, home)
