"""Redaction: make every string of a manifest safe to share.

Two kinds of rule. *Shape* rules recognise a secret or a private detail by how it looks
(a GitHub token, a PEM block, ``10.0.0.7``, ``/home/alice/``) and apply to any text; their
table is :mod:`expdna.manifest.redact_rules`.
*Name* rules redact a whole value because of the name it is stored under
(``WANDB_API_KEY``, ``--db-password``), in dicts, argv and ``NAME=value`` free text.

Every replacement contains :data:`REDACTED_MARK` or a ``<...>`` marker, so a reader can
tell a value was redacted (``rerun --confirm`` refuses commands that depend on one).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import string
from pathlib import Path
from typing import Any

from expdna.manifest.redact_entropy import looks_random
from expdna.manifest.redact_rules import (
    NETRC,
    PEM,
    REDACTED_MARK,
    SHAPE_RULES,
    TOKEN_RULES,
    Rule,
    apply,
    home_rule,
    is_token_shaped,
    rules_for,
)
from expdna.manifest.redact_structure import from_view, is_patch, patch_view, redact_blocks

__all__ = ["REDACTED_MARK", "redact_argv", "redact_named", "redact_text", "redact_tree"]

# --- names --------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\-.\s]+")
# A name ending like this holds where a secret is, or facts about it, not the secret.
_NOT_SECRET_SUFFIX = re.compile(
    r"(?<!SESSION)_(?:PATH|FILE|FILES|DIR|URL|URI|ENV|VAR|NAME|ID|TYPE|LEN|LENGTH|SIZE|COUNT)$"
)
# Tokenizer vocabulary (`pad_token: "<pad>"`), not credentials.
_VOCAB_TOKEN = re.compile(
    r"(?:^|_)(?:PAD|EOS|BOS|UNK|SEP|CLS|MASK|START|END|STOP|EOT|EOD|SPECIAL|IMAGE|IMG|"
    r"VIDEO|AUDIO|VISION|BOI|EOI|DECODER_START|THINK|TOOL|PREFIX|SUFFIX|MIDDLE)_TOKEN$"
)
_PASSWORD_NAME = re.compile(r"PASSW(?:OR)?D|PASSPHRASE|(?:^|_)PASS$|(?:^|.)_?PWD$")
_SECRET_NAME = re.compile(
    r"API_?KEYS?$|TOKEN$|SECRET|CREDENTIAL|(?:^|_)CREDS$|ACCESS_?KEY|PRIVATE_?KEY|KEY_?DATA$"
    r"|COOKIE|(?:^|_)AUTH(?:S|ORIZATION|_?HEADER)?$|(?:^|_)SESSION(?:_?KEY|_?TOKEN|_?ID)?$"
)
_KEY_NAME = re.compile(r"KEYS?$")
# Values under a secret name that carry nothing secret: flags, numbers, `$VAR` references.
_INERT_VALUE = re.compile(
    r"(?i)|true|false|yes|no|on|off|none|null|\$\{?\w+\}?|-?\d{1,15}(?:\.\d+)?(?:e-?\d+)?"
)
_EMPTY_VALUE = re.compile(r"(?i)|none|null|\$\{?\w+\}?")


def _normalise_name(name: str) -> str:
    """``--db-password`` / ``db.password`` / ``dbPassword`` -> ``DB_PASSWORD``."""
    return _SEPARATORS.sub("_", _CAMEL.sub("_", name.strip().lstrip("-"))).upper()


def _is_secret_name(name: str) -> bool:
    """Whether ``name`` alone says that what it holds is secret (a block under it, too)."""
    norm = _normalise_name(name)
    if not norm or _NOT_SECRET_SUFFIX.search(norm):
        return False
    if _PASSWORD_NAME.search(norm):
        return True
    return bool(_SECRET_NAME.search(norm)) and not _VOCAB_TOKEN.search(norm)


def _is_secret_shaped(value: str) -> bool:
    return is_token_shaped(value) or any(
        apply(rule, value) != value for rule in rules_for(value) if rule is not NETRC
    )


def _is_secret(name: str, value: str) -> bool:
    """Whether ``value`` stored under ``name`` must be hidden whole."""
    norm = _normalise_name(name)
    if not norm or _NOT_SECRET_SUFFIX.search(norm):
        return False
    if _PASSWORD_NAME.search(norm):
        return not _EMPTY_VALUE.fullmatch(value)
    if _INERT_VALUE.fullmatch(value):
        return False
    if _SECRET_NAME.search(norm):
        return not _VOCAB_TOKEN.search(norm)
    return bool(_KEY_NAME.search(norm)) and _is_secret_shaped(value)


# What `_mask` returns; masking it again must change nothing (a manifest read back and
# redacted again keeps its DNA).
_MASKED = re.compile(
    "(?:"
    + "|".join(f"(?:{rule.prefix})" for rule in (PEM, *TOKEN_RULES))
    + r"|[^*]{0,4})"
    + re.escape(REDACTED_MARK)
)


def _mask(value: str) -> str:
    """A secret value as its token prefix (``hf_***``) or its first 4 characters + mark.

    A value shorter than :data:`_MIN_PREFIXED` shows no characters at all: four characters
    of an eight-character password are half of it.
    """
    if _MASKED.fullmatch(value):
        return value
    for rule in rules_for(value):
        m = rule.pattern.fullmatch(value) if rule is PEM or rule.prefix else None
        if m:
            return rule.replace(m)
    return (value[:4] if len(value) >= _MIN_PREFIXED else "") + REDACTED_MARK


_MIN_PREFIXED = 16

# Every secret name contains one of these; a name without one is skipped at once.
_NAME_HINTS = (
    "key",
    "token",
    "secret",
    "pass",
    "credential",
    "pwd",
    "auth",
    "cookie",
    "session",
    "creds",
)
_NAME_WORDS = "(?i:" + "|".join(_NAME_HINTS) + ")"
_NAME_HINT = re.compile(_NAME_WORDS)
# `NAME=value`, `NAME: value`, `"name": "value"`, `os.environ["NAME"] = value`, and
# `--name value` in free text (shell lines in patches, YAML, JSON, TOML, .env files).
_ASSIGNMENT = re.compile(
    r"""(?<![\w.\-])(?=[\w.\-]*?"""
    + _NAME_WORDS
    + r""")
    (?:
        (?P<name>-{0,2}[A-Za-z_][\w.\-]*)["']?\]?[ \t]*(?:=(?!=)|:)[ \t]*
      | (?P<flag>--?[A-Za-z][\w.\-]*)[ \t]+(?![-"'])
    )
    (?:"(?P<v1>[^"\n]*)"|'(?P<v2>[^'\n]*)'|(?P<v3>[^\s'"`,;&)}\]]+))
    """,
    re.VERBOSE,
)


# `password: |` opens a block redacted line by line; `Authorization: Bearer` names a scheme.
_NOT_THE_VALUE = re.compile(r"[|>][-+0-9]*|[{\[]|(?i:basic|bearer|token|digest)")


def _assignment(m: re.Match[str]) -> str:
    group = "v1" if m.group("v1") is not None else "v2" if m.group("v2") is not None else "v3"
    value = m.group(group)
    name = m.group("name") or m.group("flag")
    if group == "v3" and _NOT_THE_VALUE.fullmatch(value):
        return m.group(0)
    # A value under an ordinary name may nest an assignment: `--token-args HF_TOKEN=...`.
    new = _mask(value) if _is_secret(name, value) else _ASSIGNMENT.sub(_assignment, value)
    start, end = m.start(group) - m.start(), m.end(group) - m.start()
    whole = m.group(0)
    return whole[:start] + new + whole[end:]


# --- text, names, argv --------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _cached_home_rule(home: str) -> Rule | None:
    return home_rule(home)


def _current_home() -> Rule | None:
    try:
        return _cached_home_rule(str(Path.home()))
    except RuntimeError:  # no HOME and no passwd entry
        return None


# Any `name = value` / `name: value` / `"name": "value"` whose value is one long word: the
# entropy backstop looks at the value (redact_entropy); names of digests are left alone.
# Anchored on the operator, so the engine skips to the next `=` or `:` at C speed.
_ANY_ASSIGNMENT = re.compile(
    r"""(?::=|=>|=|:)[ \t]*(?P<q>["'`]?)(?P<v>[A-Za-z0-9+/_.~\-]{20,}={0,3})(?P=q)"""
    r"(?![\w+/=.~\-])"
)
_NAME_BEFORE = re.compile(r"""([\w.\-]*)["']?\]?[ \t]*$""")
_DIGEST_NAME = re.compile(
    r"(?i)sha|md5|hash|digest|checksum|commit|revision|(?:^|_)rev$|etag|uuid|guid|fingerprint"
    r"|integrity|(?:^|[_\-])ids?$"
)
_WORD_RUN = re.compile(r"[A-Za-z0-9+/_.~\-]{20,}")


def _backstop(m: re.Match[str]) -> str:
    value = m.group("v")
    if not looks_random(value):
        return m.group(0)
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    name = _NAME_BEFORE.search(m.string, max(line_start, m.start() - 100), m.start())
    if name is not None and _DIGEST_NAME.search(name.group(1)):
        return m.group(0)
    start, end = m.start("v") - m.start(), m.end("v") - m.start()
    whole = m.group(0)
    return whole[:start] + _mask(value) + whole[end:]


def _line_local(text: str) -> str:
    """Rules that never look past the end of a line: token shapes, addresses, hosts,
    paths, secret-named assignments and the entropy backstop."""
    if len(text) > _PER_LINE:
        return _line_local_by_line(text)
    for rule in rules_for(text):
        if rule is not PEM and rule is not NETRC:
            text = rule.pattern.sub(rule.replace, text)
    lower = text.lower()
    if any(w in lower for w in _NAME_HINTS):
        text = _ASSIGNMENT.sub(_assignment, text)
    if _WORD_RUN.search(text):
        text = _ANY_ASSIGNMENT.sub(_backstop, text)
    return text


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
        if _NAME_HINT.search(line):
            line = lines[i] = _ASSIGNMENT.sub(_assignment, line)
        if _WORD_RUN.search(line):
            lines[i] = _ANY_ASSIGNMENT.sub(_backstop, line)
    return "\n".join(lines)


def _multi_line(text: str) -> str:
    """Rules over several lines: PEM blocks, `.netrc` entries."""
    for rule in (PEM, NETRC):
        text = apply(rule, text)
    return text


def _blocks(lines: list[str], candidates: list[int], *, prefixed: bool = False) -> None:
    redact_blocks(lines, candidates, _is_secret_name, _mask, prefixed=prefixed)


# Past this size only the lines that hold a hint go through the line-local rules: a
# patch of 1 MiB must take milliseconds, and most of its lines hold nothing to look at.
_SELECT_LINES = 32 * 1024
# Lines worth a look: where a shape's hint, a secret-looking name or a long word is.
_LONG_HINTS = ("://", "10.", "172.", "192.168.", "100.", "169.254.", "sig=", ":A")
_LONG_HINTS_FOLD = (
    "/home/", "/users/", "\\users\\", "bearer", ".internal", ".corp", ".local", ".lan",
)  # fmt: skip
# in lower case; `auth` also finds `Authorization`, `key` also `AccountKey=`
_LONG_NAME_HINTS = ("key", "token", "secret", "pass", "pwd", "auth", "cookie", "session", "cred")
# For blocks in shorter texts: the words of secret names.
_NAME_LINE_HINTS = (
    "key", "token", "secret", "passw", "passp", "_pass", "pass_", "pass=", "pass:", "pwd",
    "auth", "cookie", "session", "creds", "credential",
)  # fmt: skip
_IPV6_START = re.compile(r"f[cde][0-9a-f]{1,2}:")
# A word of 16 characters or more with a digit that has five more word characters after
# it: where a token shape or a random key has its body. The engine skips to digits at C
# speed; a token whose digits all sit in its last five characters (one in hundreds of
# random bodies) is found only on a line that holds another hint.
_DIGIT_RUN = re.compile(r"\d[\w+/=.~\-]{5,}")
_RUN_CHARS = frozenset(string.ascii_letters + string.digits + "_+/=.~-")
_MIN_RUN = 16


def _long_runs(scan: str) -> list[int]:
    found = []
    for m in _DIGIT_RUN.finditer(scan):
        start = m.start()
        while start > 0 and scan[start - 1] in _RUN_CHARS:
            start -= 1
        if m.end() - start >= _MIN_RUN:
            found.append(start)
    return found


def _literal_positions(text: str, hint: str) -> list[int]:
    found = []
    at = text.find(hint)
    while at >= 0:
        found.append(at)
        at = text.find(hint, at + 1)
    return found


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

    names: set[int] = set()
    for hint in _LONG_NAME_HINTS:
        names |= line_of(_literal_positions(lower, hint))
    picked = set(names)
    for hint in _LONG_HINTS:
        picked |= line_of(_literal_positions(scan, hint))
    for hint in _LONG_HINTS_FOLD:
        picked |= line_of(_literal_positions(lower, hint))
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


def _redact_text(text: str, home: Rule | None) -> str:
    if len(text) > _SELECT_LINES:
        # Large: the lines that need it are read without a patch's prefixes as they go.
        return _redact_plain(text, home, prefixed=is_patch(text))
    if len(text) > 64 and is_patch(text):
        prefixes, view = patch_view(text)
        patch = from_view(prefixes, _redact_plain(view, home))
        if patch is not None:
            return patch
    return _redact_plain(text, home)


def _redact_named(name: str, value: str, home: Rule | None) -> str:
    if _is_secret(name, value):
        return _mask(value)
    return _redact_text(value, home)


_FLAG = re.compile(r"--?[A-Za-z][\w.\-]*")


def _backstop_word(word: str) -> str:
    """A whole value that is one long random-looking word, hidden (argv, env, config)."""
    return _mask(word) if looks_random(word) else word


def _redact_argv(argv: list[str], home: Rule | None) -> list[str]:
    out: list[str] = []
    flag: str | None = None  # the previous word, when it was a flag without `=value`
    for word in argv:
        name, eq, value = word.partition("=")
        # `-1e-4` and `-----BEGIN ...` are values, not flags
        is_flag = _FLAG.fullmatch(name) is not None
        if flag is not None and not is_flag:
            out.append(_backstop_word(_redact_named(flag, word, home)))  # `--api-key VALUE`
            flag = None
            continue
        flag = None
        if is_flag and eq:
            if _is_secret(name, value):
                out.append(f"{name}={_mask(value)}")
            else:
                out.append(f"{name}={_backstop_word(_redact_text(value, home))}")
            continue
        if is_flag:
            flag = word
            out.append(_redact_text(word, home))
            continue
        out.append(_backstop_word(_redact_text(word, home)))
    return out


def redact_text(text: str) -> str:
    """``text`` with token shapes, URL credentials, internal addresses and hosts, private
    paths, PEM blocks and secret-named ``NAME=value`` assignments replaced."""
    return _redact_text(text, _current_home())


def redact_named(name: str, value: str) -> str:
    """``value`` as stored under ``name``: hidden whole if the name is secret-named."""
    return _redact_named(name, value, _current_home())


def redact_argv(argv: list[str]) -> list[str]:
    """A new argv with every word redacted and the value of a secret-named flag hidden."""
    return _redact_argv(argv, _current_home())


# --- trees --------------------------------------------------------------------------

_HEX_COMMIT = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_BLAKE3_REF = re.compile(r"blake3:[0-9a-f]{64}")
_HEX_DIGEST = re.compile(r"(?:[a-z0-9]+:)?[0-9a-fA-F]+")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-+.~][\w.+\-]*)?")


def _exempt(key: str, parent: str, value: str) -> bool:
    """Values that are facts about code, never secrets, and must keep their exact text."""
    if _BLAKE3_REF.fullmatch(value):
        return True
    if (key == "commit" or key.endswith("_commit")) and _HEX_COMMIT.fullmatch(value):
        return True
    if (key in ("digest", "sha256") or key.endswith("_digest")) and _HEX_DIGEST.fullmatch(value):
        return True
    # TensorRT `10.3.0.26` is a version, not an address in 10/8.
    return (key.endswith("version") or parent in ("packages", "versions")) and bool(
        _VERSION.fullmatch(value)
    )


def _copy(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_copy(v) for v in obj]
    return obj


_BACKSTOP_SECTIONS = ("config.", "command.")


class _Walk:
    """One redaction of one tree: the home pattern, looked up once, and the changed paths.

    A path is listed as changed only when something was hidden: the user's own home
    written as ``~`` is a spelling this user's shell and ``rerun`` read back.
    """

    def __init__(self, home: Rule | None) -> None:
        self.home = home
        self.changed: list[str] = []

    def _hidden(self, old: str, new: str) -> bool:
        return new != old and (self.home is None or new != apply(self.home, old))

    def value(self, obj: Any, path: str, key: str, parent: str) -> Any:
        if path == "dna" or path.startswith("dna."):
            return _copy(obj)
        if isinstance(obj, str):
            new = obj if _exempt(key, parent, obj) else _redact_named(key, obj, self.home)
            if new == obj and path.startswith(_BACKSTOP_SECTIONS) and not _DIGEST_NAME.search(key):
                new = _backstop_word(obj)
            if self._hidden(obj, new):
                self.changed.append(path)
            return new
        if isinstance(obj, (int, float)) and not isinstance(obj, bool) and key:
            # `--db-password 12345678` is parsed as a number: hide it by name all the same.
            text = str(obj)
            masked = _redact_named(key, text, self.home)
            if masked != text:
                self.changed.append(path)
                return masked
            return obj
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                name = str(k)
                out[k] = self.value(v, f"{path}.{name}" if path else name, name, key)
            return out
        if isinstance(obj, (list, tuple)):
            if key == "argv" and all(isinstance(v, str) for v in obj):
                return self.argv(list(obj), path)
            # A list's items are stored under the list's own name (`api_keys: [...]`).
            return [
                self.value(v, f"{path}.{i}" if path else str(i), key, parent)
                for i, v in enumerate(obj)
            ]
        return obj

    def argv(self, argv: list[str], path: str) -> list[str]:
        new = _redact_argv(argv, self.home)
        self.changed.extend(
            f"{path}.{i}" if path else str(i)
            for i, (old, now) in enumerate(zip(argv, new, strict=True))
            if self._hidden(old, now)
        )
        return new


def redact_tree(obj: Any, path: str = "") -> tuple[Any, list[str]]:
    """A redacted copy of a JSON-like tree and the sorted dotted paths of changed strings.

    Dict values are redacted by their key's name, lists under ``argv`` as a command line,
    other strings as text. Commit SHAs, ``blake3:`` references, hex digests, versions and
    everything under the top-level ``dna`` key are left exactly as they are.
    """
    walk = _Walk(_current_home())
    key = path.rsplit(".", 1)[-1] if path else ""
    new = walk.value(obj, path, key, "")
    return new, sorted(walk.changed)
