"""Redaction's shape rules: how a secret or a private detail looks, in any text.

Token shapes (a GitHub token, an API key), PEM blocks, credentials in URLs, internal
addresses and host names, and private paths (``/home/alice/``, the current user's home),
each a :class:`Rule` with the cheap hints that gate its regex. :mod:`expdna.manifest.redact`
applies them, with the name rules, to text, argv and manifest trees.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from expdna.manifest.redact_commands import COMMAND_SHAPES
from expdna.manifest.redact_tokens import TOKEN_SHAPES

REDACTED_MARK = "***"
_ADDRESS = "<internal-address>"
_HOST = "<internal-host>"
_HOME = "<HOME>"


class Rule(NamedTuple):
    """A shape rule. ``pattern`` runs only on text holding one of ``hints``, a cheap
    necessary condition: most manifest strings (versions, names, numbers) hold none."""

    name: str
    hints: tuple[str, ...]
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]
    prefix: str = ""  # token rules: the regex of the part kept visible
    fold: bool = False  # hints are lower case, looked for in the lower-cased text


def _after_word(m: re.Match[str], chars: str = "") -> bool:
    """Whether ``m`` starts right after a letter, a digit or one of ``chars``.

    Checked here rather than with a leading lookbehind, which would stop the regex engine
    from scanning for a pattern's literal prefix: 40x slower on a large patch.
    """
    start = m.start()
    if start == 0:
        return False
    before = m.string[start - 1]
    return before.isalnum() or before in chars


# A body of words and numbers joined by `-` (`resnet50-imagenet-finetune-v2`): a run name.
_NAME_PART = re.compile(r"\d*(?:[A-Za-z][a-z]*|[A-Z]+)\d*|\d{1,6}|v\d+(?:\.\d+)*")


def _is_name(body: str) -> bool:
    parts = body.split("-")
    return len(parts) >= 3 and all(p and len(p) <= 16 and _NAME_PART.fullmatch(p) for p in parts)


def _token(
    name: str,
    hints: tuple[str, ...],
    prefix: str,
    body: str,
    not_after: str = "",
    names_kept: bool = False,
) -> Rule:
    """A token shape ``prefix`` + ``body`` (regexes), redacted to its prefix + mark."""

    def replace(m: re.Match[str]) -> str:
        if _after_word(m, not_after):
            return m.group(0)  # inside a longer word: `task-...` is not `sk-...`
        if names_kept and _is_name(m.group(0)[m.end("prefix") - m.start() :]):
            return m.group(0)
        return m.group("prefix") + REDACTED_MARK

    pattern = re.compile(f"(?P<prefix>{prefix}){body}")
    return Rule(name, hints, pattern, replace, prefix)


# Token shapes, compiled from the table in redact_tokens (most specific first).
TOKEN_RULES: tuple[Rule, ...] = tuple(
    _token(row.name, row.hints, row.prefix, row.body, row.not_after, row.names_kept)
    for row in TOKEN_SHAPES
)

# `.netrc`: `password` after `machine HOST` (and `login USER`), on one line or several.
NETRC = _token(
    "netrc",
    ("machine",),
    r"(?:machine[ \t]+\S+|default)(?:\s+(?:login|account)[ \t]+\S+)*\s+password[ \t]+",
    r"(?!\*\*\*)\S+",
    "_",
)

_PEM_BEGIN = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
# A diff's `+` before a body line stays, for a hunk cut out of its patch.
_PEM_LINE = re.compile(r"([+\-]?[ \t]*)[^\n]*[^\s][^\n]*")


def _pem(m: re.Match[str]) -> str:
    # Each line of the body becomes the mark, so a redacted patch keeps its line count
    # (and its hunks apply); indentation stays, so YAML around it still parses.
    body = _PEM_LINE.sub(lambda line: line.group(1) + REDACTED_MARK, m.group("body"))
    return m.group("prefix") + body + m.group("end")


PEM = Rule(
    "pem",
    ("PRIVATE KEY",),
    # A block cut short (a truncated patch) is redacted to the end of the text; the
    # lookahead keeps an already redacted block from being redacted again.
    re.compile(
        f"(?P<prefix>{_PEM_BEGIN})(?![ \\t\\n]*\\*\\*\\*)(?P<body>(?s:.*?))"
        r"(?P<end>-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    ),
    _pem,
    _PEM_BEGIN,
)


def _url(m: re.Match[str]) -> str:
    # Imported here: the URL module judges parameters with the name rules, which are
    # built on this module's table.
    from expdna.manifest.redact_urls import redact_url

    return redact_url(m.group("scheme"), m.group("rest"))


_URL_CREDENTIALS = Rule(
    "url",
    ("://",),
    re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>[^\s'\"<>`]+)"),
    _url,
)


# A URL that went through a path (`Path("s3://key:secret@b/x")` is `s3:/key:secret@b/x`)
# no longer holds `://`; its `user:password@` is hidden all the same. Only a userinfo with
# a password: `scheme:/name@host` is as likely a path as a URL.
_FOLDED_URL_CREDENTIALS = Rule(
    "folded-url",
    (":/",),
    re.compile(
        r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*:/)(?!/)"
        r"(?P<info>[^\s/:@'\"<>`]+:[^\s/@'\"<>`]+)@(?=[A-Za-z0-9\[])"
    ),
    lambda m: f"{m.group('head')}{REDACTED_MARK}@",
)


def _command_secret(m: re.Match[str]) -> str:
    whole, start, end = m.group(0), m.start("secret") - m.start(), m.end("secret") - m.start()
    return whole[:start] + REDACTED_MARK + whole[end:]


# `curl -u user:pass`, `mysql -pSECRET`, `wandb login KEY`: from the table in redact_commands.
COMMAND_RULES: tuple[Rule, ...] = tuple(
    Rule(row.name, row.hints, re.compile(row.pattern), _command_secret, fold=True)
    for row in COMMAND_SHAPES
)

_PRIVATE_RANGES: tuple[tuple[int, int, int], ...] = (
    # (first octet, lowest second octet, highest second octet)
    (10, 0, 255),
    (172, 16, 31),
    (192, 168, 168),
    (100, 64, 127),
    (169, 254, 254),
)


# `tensorrt==10.3.0.26`, `nvidia-cudnn-cu12>=9.1.0.70`: a version in a requirement pin.
_PIN_OPERATORS = ("==", ">=", "<=", "~=", "!=")


def _ipv4(m: re.Match[str]) -> str:
    octets = [int(part) for part in m.group(0).split(".")]
    if _after_word(m, "._") or max(octets) > 255:
        return m.group(0)
    if m.string.endswith(_PIN_OPERATORS, 0, m.start()):
        return m.group(0)
    first, second = octets[0], octets[1]
    for head, low, high in _PRIVATE_RANGES:
        if first == head and low <= second <= high:
            return _ADDRESS
    return m.group(0)


_IPV4 = Rule(
    "internal-ipv4",
    ("10.", "172.", "192.168.", "100.", "169.254."),
    # Not part of a longer dotted number: a five-part VBIOS version is not an address.
    re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\.\d)(?!\w)"),
    _ipv4,
)

_IPV6 = Rule(
    "internal-ipv6",
    ("fc", "fd", "fe8", "fe9", "fea", "feb"),
    # fc00::/7 (unique local) and fe80::/10 (link local), with an optional zone.
    re.compile(
        r"(?<![\w:])(?:f[cd][0-9a-f]{2}|fe[89ab][0-9a-f])(?::[0-9a-f]{0,4}){2,7}(?:%\w+)?"
        r"(?![\w:])",
        re.IGNORECASE,
    ),
    lambda m: _ADDRESS,
    fold=True,
)

_IMPORT_TAIL = re.compile(r"\b(?:from|import)\s+$")


# `args.local`, `self.internal`, `cfg.lan`: attribute access on a Python object, not a host.
_OBJECT_NAMES = frozenset(
    [
        "self",
        "cls",
        "args",
        "opt",
        "opts",
        "cfg",
        "conf",
        "config",
        "options",
        "hparams",
        "hp",
        "params",
        "flags",
        "FLAGS",
        "settings",
        "ctx",
        "env",
        "os",
        "sys",
        "np",
        "torch",
        "model",
        "trainer",
        "module",
        "state",
        "kwargs",
        "parser",
        "ns",
        "namespace",
        "data",
        "dist",
        "training_args",
        "script_args",
        "model_args",
        "data_args",
        "mode",
    ]
)


def _internal_host(m: re.Match[str]) -> str:
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    if _IMPORT_TAIL.search(m.string, line_start, m.start()):
        return m.group(0)  # `from google.protobuf.internal import ...` is a module
    labels = m.group(0).split(".")
    if len(labels) == 2 and labels[0] in _OBJECT_NAMES:
        return m.group(0)
    return _HOST


_INTERNAL_HOST = Rule(
    "internal-host",
    (".internal", ".corp", ".local", ".lan"),
    re.compile(
        r"(?<![\w.\-])(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
        r"(?i:internal|corp|local|lan)(?![\w\-])(?!\.\w)(?!\s*\()"
    ),
    _internal_host,
    fold=True,
)


def _private_path(m: re.Match[str]) -> str:
    # A path starts a word (or follows `file://`); `https://host/home/x` is a URL path.
    if _after_word(m, "_.-/~$") and not m.string.endswith("file://", 0, m.start()):
        return m.group(0)
    return _HOME


_USER = r"[\w.\-$@+]+"
_PRIVATE_PATH = Rule(
    "private-path",
    ("/home/", "/Users/"),
    # `/lustre/home/u`, `/nfs/home/u`: one mount directory may come first
    re.compile(rf"/(?:[\w.\-]+/)?home/{_USER}|/Users/{_USER}"),
    _private_path,
)
_WINDOWS_HOME = Rule(
    "windows-home",
    ("\\Users\\", "\\users\\"),
    re.compile(r"[A-Za-z]:\\[Uu]sers\\[^\\\s\"']+"),
    lambda m: m.group(0) if _after_word(m, "_") else _HOME,
)

# Paths under a home: what a path's components cannot be judged for one by one.
HOME_PATHS: tuple[Rule, ...] = (_PRIVATE_PATH, _WINDOWS_HOME)


HOME_TILDE = "~"


def _own_home(m: re.Match[str]) -> str:
    if _after_word(m, "_.-/~$"):
        return m.group(0)
    # `~` is what a shell (and `rerun`) expands; inside a file URL it would name a host.
    return _HOME if m.string.endswith("file://", 0, m.start()) else HOME_TILDE


def home_rule(home: str) -> Rule | None:
    """The rule for the current user's home, wherever it is (``/root``, ``/srv/u``): it is
    written ``~``, which this user's shell and ``rerun`` expand back."""
    home = home.rstrip("/\\")
    if len(home) < 2:
        return None  # a home of `/` would match every absolute path
    pattern = re.compile(re.escape(home) + r"(?![\w.\-$@+])")
    return Rule("current-home", (home,), pattern, _own_home)


SHAPE_RULES: tuple[Rule, ...] = (
    PEM,  # first: its body must go as one piece, before any rule sees a fragment of it
    NETRC,
    _URL_CREDENTIALS,
    _FOLDED_URL_CREDENTIALS,
    *COMMAND_RULES,
    *TOKEN_RULES,
    _IPV4,
    _IPV6,
    _INTERNAL_HOST,
    _PRIVATE_PATH,
    _WINDOWS_HOME,
)


def _trie(words: Iterable[str]) -> str:
    """One regex matching any of ``words``, longest first, shaped as a trie: a branch per
    character, so the engine tries one alternative per position instead of all of them."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:
            return f"(?:{body})?" if len(alts) == 1 else body + "?"
        return body

    return build(root)


# Which rules a hint wakes: found by one scan for every hint (overlapping, so `sk-ant-`
# inside a text does not hide `sk-`), then only those rules run.
# A hint found also wakes the rules of every hint it starts with (`xoxe` wakes `xox`).
def _hint_rules() -> dict[str, tuple[int, ...]]:
    own: dict[str, set[int]] = {}
    for i, rule in enumerate(SHAPE_RULES):
        for hint in rule.hints:
            own.setdefault(hint.lower() if rule.fold else hint, set()).add(i)
    return {
        hint: tuple(sorted(set().union(*(ids for h, ids in own.items() if hint.startswith(h)))))
        for hint in own
    }


HINT_RULES = _hint_rules()
ANY_HINT = re.compile(
    "(?=("
    + _trie(h for r in SHAPE_RULES if not r.fold for h in r.hints)
    + "|(?i:"
    + _trie(h.lower() for r in SHAPE_RULES if r.fold for h in r.hints)
    + ")))"
)


def rules_for(text: str) -> list[Rule]:
    """The shape rules whose hints occur in ``text``, in table order."""
    found = set(ANY_HINT.findall(text))
    if not found:
        return []
    wanted: set[int] = set()
    for hint in found:
        wanted.update(HINT_RULES.get(hint) or HINT_RULES.get(hint.lower(), ()))
    return [SHAPE_RULES[i] for i in sorted(wanted)]


LONG_TEXT = 512
_SHAPED_WORD = re.compile(r"[\w+/=.\-]{16,}")
_HEX32 = re.compile(r"[0-9a-fA-F]{32,}")


def is_token_shaped(value: str) -> bool:
    """A known token shape, or a long random-looking word."""
    if any(rule.pattern.fullmatch(value) for rule in rules_for(value)):
        return True
    if not _SHAPED_WORD.fullmatch(value) or value.startswith(("/", "./", "~")):
        return False  # words only, and a path is not a key
    if _HEX32.fullmatch(value):
        return True
    has_upper = any(c.isupper() for c in value)
    has_lower = any(c.islower() for c in value)
    digits = sum(c.isdigit() for c in value)
    if has_upper and has_lower and digits:
        return True
    # Random lower-case-and-digit keys: enough digits to rule out words like `model_v2_1k`.
    return len(value) >= 20 and digits >= len(value) // 5 and (has_lower or has_upper)


def apply(rule: Rule, text: str, lower: str | None = None) -> str:
    """``text`` after ``rule``; ``lower`` is ``text.lower()`` when the caller has it."""
    where = (lower if lower is not None else text.lower()) if rule.fold else text
    if any(hint in where for hint in rule.hints):
        return rule.pattern.sub(rule.replace, text)
    return text
