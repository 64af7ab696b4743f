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

import functools
import re
from pathlib import Path
from typing import Any

from expdna.manifest.redact_rules import (
    ANY_HINT,
    LONG_TEXT,
    PEM,
    REDACTED_MARK,
    SHAPE_RULES,
    TOKEN_RULES,
    Rule,
    apply,
    home_rule,
    is_token_shaped,
)

__all__ = ["REDACTED_MARK", "redact_argv", "redact_named", "redact_text", "redact_tree"]

# --- names --------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\-.\s]+")
# A name ending like this holds where a secret is, or facts about it, not the secret.
_NOT_SECRET_SUFFIX = re.compile(
    r"_(?:PATH|FILE|FILES|DIR|URL|URI|ENV|VAR|NAME|ID|TYPE|LEN|LENGTH|SIZE|COUNT)$"
)
# Tokenizer vocabulary (`pad_token: "<pad>"`), not credentials.
_VOCAB_TOKEN = re.compile(
    r"(?:^|_)(?:PAD|EOS|BOS|UNK|SEP|CLS|MASK|START|END|STOP|EOT|EOD|SPECIAL|IMAGE|IMG|"
    r"VIDEO|AUDIO|VISION|BOI|EOI|DECODER_START|THINK|TOOL|PREFIX|SUFFIX|MIDDLE)_TOKEN$"
)
_PASSWORD_NAME = re.compile(r"PASSW(?:OR)?D|PASSPHRASE|(?:^|_)PASS$|._PWD$")
_SECRET_NAME = re.compile(r"API_?KEYS?$|(?:^|_)TOKEN$|SECRET|CREDENTIAL|ACCESS_?KEY|PRIVATE_?KEY")
_KEY_NAME = re.compile(r"KEYS?$")
# Values under a secret name that carry nothing secret: flags, numbers, `$VAR` references.
_INERT_VALUE = re.compile(
    r"(?i)|true|false|yes|no|on|off|none|null|\$\{?\w+\}?|-?\d{1,15}(?:\.\d+)?(?:e-?\d+)?"
)
_EMPTY_VALUE = re.compile(r"(?i)|none|null|\$\{?\w+\}?")


def _normalise_name(name: str) -> str:
    """``--db-password`` / ``db.password`` / ``dbPassword`` -> ``DB_PASSWORD``."""
    return _SEPARATORS.sub("_", _CAMEL.sub("_", name.strip().lstrip("-"))).upper()


def _is_secret_shaped(value: str) -> bool:
    return is_token_shaped(value) or any(
        apply(rule, value) != value for rule in (PEM, *TOKEN_RULES)
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
    for rule in (PEM, *TOKEN_RULES):
        m = rule.pattern.fullmatch(value)
        if m:
            return rule.replace(m)
    return (value[:4] if len(value) >= _MIN_PREFIXED else "") + REDACTED_MARK


_MIN_PREFIXED = 16

# Every secret name contains one of these; a name without one is skipped at once.
_NAME_HINTS = ("key", "token", "secret", "pass", "credential", "pwd")
_NAME_WORDS = "(?i:" + "|".join(_NAME_HINTS) + ")"
_NAME_HINT = re.compile(_NAME_WORDS)
# `NAME=value`, `NAME: value`, `"name": "value"`, `os.environ["NAME"] = value`, and
# `--name value` in free text (shell lines in patches, YAML, JSON, TOML, .env files).
_ASSIGNMENT = re.compile(
    r"""(?<![\w.\-])(?=[\w.\-]*?"""
    + _NAME_WORDS
    + r""")
    (?:
        (?P<name>-{0,2}[A-Za-z_][\w.\-]*)["']?\]?[ \t]*[=:][ \t]*
      | (?P<flag>--?[A-Za-z][\w.\-]*)[ \t]+(?![-"'])
    )
    (?:"(?P<v1>[^"\n]*)"|'(?P<v2>[^'\n]*)'|(?P<v3>[^\s'"`,;&)}\]]+))
    """,
    re.VERBOSE,
)


def _assignment(m: re.Match[str]) -> str:
    group = "v1" if m.group("v1") is not None else "v2" if m.group("v2") is not None else "v3"
    value = m.group(group)
    name = m.group("name") or m.group("flag")
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


def _redact_text(text: str, home: Rule | None) -> str:
    long = len(text) > LONG_TEXT
    if long or ANY_HINT.search(text):
        lower = text.lower()
        for rule in SHAPE_RULES:
            new = apply(rule, text, lower)
            if new != text:
                text, lower = new, new.lower()
    if home is not None:
        text = apply(home, text)
    names = any(w in text.lower() for w in _NAME_HINTS) if long else _NAME_HINT.search(text)
    if names:
        text = _ASSIGNMENT.sub(_assignment, text)
    return text


def _redact_named(name: str, value: str, home: Rule | None) -> str:
    if _is_secret(name, value):
        return _mask(value)
    return _redact_text(value, home)


_FLAG = re.compile(r"--?[A-Za-z][\w.\-]*")


def _redact_argv(argv: list[str], home: Rule | None) -> list[str]:
    out: list[str] = []
    flag: str | None = None  # the previous word, when it was a flag without `=value`
    for word in argv:
        name, eq, value = word.partition("=")
        # `-1e-4` and `-----BEGIN ...` are values, not flags
        is_flag = _FLAG.fullmatch(name) is not None
        if flag is not None and not is_flag:
            out.append(_redact_named(flag, word, home))  # `--api-key VALUE`
            flag = None
            continue
        flag = None
        if is_flag and eq and _is_secret(name, value):
            out.append(f"{name}={_mask(value)}")
            continue
        if is_flag and not eq:
            flag = word
        out.append(_redact_text(word, home))
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


class _Walk:
    """One redaction of one tree: the home pattern, looked up once, and the changed paths."""

    def __init__(self, home: Rule | None) -> None:
        self.home = home
        self.changed: list[str] = []

    def value(self, obj: Any, path: str, key: str, parent: str) -> Any:
        if path == "dna" or path.startswith("dna."):
            return _copy(obj)
        if isinstance(obj, str):
            new = obj if _exempt(key, parent, obj) else _redact_named(key, obj, self.home)
            if new != obj:
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
            if old != now
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
