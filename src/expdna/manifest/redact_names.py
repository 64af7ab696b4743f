"""Redaction by name: a value hidden whole because of the name it is stored under.

``WANDB_API_KEY``, ``--db-password``, ``"client_secret":``: in dicts, argv and
``NAME=value`` / ``name: value`` / ``"name": "value"`` text. Also the entropy backstop as it
applies to the value of any assignment (:mod:`expdna.manifest.redact_entropy` says what
random-looking is). :mod:`expdna.manifest.redact` uses these on text, argv and trees.
"""

from __future__ import annotations

import re

from expdna.manifest.redact_entropy import random_parts
from expdna.manifest.redact_rules import (
    NETRC,
    PEM,
    REDACTED_MARK,
    TOKEN_RULES,
    apply,
    is_token_shaped,
    rules_for,
)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\-.\s]+")
# A name ending like this holds where a secret is, or facts about it, not the secret.
_NOT_SECRET_SUFFIX = re.compile(
    r"(?<!SESSION)_(?:PATH|FILE|FILES|DIR|URL|URI|ENV|VAR|NAME|ID|TYPE|LEN|LENGTH|SIZE|COUNT)$"
)
# Tokenizer vocabulary (`pad_token: "<pad>"`), not credentials.
_VOCAB_TOKEN = re.compile(
    r"(?:^|_)(?:PAD|EOS|BOS|UNK|SEP|CLS|MASK|START|END|STOP|EOT|EOD|SPECIAL|IMAGE|IMG|"
    r"VIDEO|AUDIO|VISION|BOI|EOI|DECODER_START|THINK|TOOL|TOOL_CALL|TOOL_RESPONSE|FIM_\w+|"
    r"IM_START|IM_END|NEWLINE|ANSWER|QUERY|SYSTEM|USER|ASSISTANT|REASONING)_TOKENS?$"
)
_PASSWORD_NAME = re.compile(r"PASSW(?:OR)?D|PASSPHRASE|(?:^|.)_?PWD$")
# `--db-pw`, `RAY_REDIS_PW`, `SMTP_PASS`: passwords too, but `--num-pass 2` and
# `single_pass: true` count passes, so a number or a boolean under them stays.
_SHORT_PASSWORD_NAME = re.compile(r"(?:^|_)(?:PASS|PW)$")
# W&B's API key is 40 hex, like a commit: under a W&B name it is the key.
_WANDB_NAME = re.compile(r"WANDB|W_AND_B")
_HEX_KEY = re.compile(r"[0-9a-fA-F]{32,}")
_SECRET_NAME = re.compile(
    r"API_?KEYS?$|TOKEN$|SECRET|CREDENTIAL|(?:^|_)CREDS$|ACCESS_?KEY|PRIVATE_?KEY|KEY_?DATA$"
    r"|(?:^|_)COOKIES?(?:$|_)|(?:^|_)AUTH(?:S|ORIZATION|_?HEADER)?$"
    r"|^SESSION$|(?:^|_)SESSION_?(?:KEY|TOKEN|ID|SECRET)$"
)
_KEY_NAME = re.compile(r"KEYS?$")
# Keys of a table, a cache or a sort: names of things, not credentials (`cache_key: <md5>`).
_NOT_SECRET_KEY = re.compile(
    r"(?:^|_)(?:CACHE|SORT|PRIMARY|FOREIGN|PARTITION|SHARD|ROUTING|LOOKUP|GROUP|DEDUP|HASH|"
    r"METRIC|MONITOR|INPUT|OUTPUT|LABEL|TARGET|IMAGE|TEXT|DICT|JOIN|INDEX|COLUMN|FEATURE)_?KEYS?$"
)
# Values under a secret name that carry nothing secret: flags, numbers, `$VAR` references.
_INERT_VALUE = re.compile(
    r"(?i)|true|false|yes|no|on|off|none|null|\$\{?\w+\}?|-?\d{1,15}(?:\.\d+)?(?:e-?\d+)?"
)
_EMPTY_VALUE = re.compile(r"(?i)|none|null|\$\{?\w+\}?")
# A tokenizer's special token as a value (`tool_call_token: <tool_call>`, `[PAD]`).
_SPECIAL_TOKEN = re.compile(r"<\|?[\w\-|.:]{1,40}\|?>|\[[A-Za-z_]{2,20}\]|</?\w{1,20}>")


def _normalise_name(name: str) -> str:
    """``--db-password`` / ``db.password`` / ``dbPassword`` -> ``DB_PASSWORD``."""
    return _SEPARATORS.sub("_", _CAMEL.sub("_", name.strip().lstrip("-"))).upper()


def is_secret_name(name: str) -> bool:
    """Whether ``name`` alone says that what it holds is secret (a block under it, too)."""
    norm = _normalise_name(name)
    if not norm or _NOT_SECRET_SUFFIX.search(norm):
        return False
    if _PASSWORD_NAME.search(norm) or _SHORT_PASSWORD_NAME.search(norm):
        return True
    return bool(_SECRET_NAME.search(norm)) and not _VOCAB_TOKEN.search(norm)


def _is_secret_shaped(value: str) -> bool:
    return is_token_shaped(value) or any(
        apply(rule, value) != value for rule in rules_for(value) if rule is not NETRC
    )


def is_secret(name: str, value: str) -> bool:
    """Whether ``value`` stored under ``name`` must be hidden whole."""
    norm = _normalise_name(name)
    if not norm or _NOT_SECRET_SUFFIX.search(norm):
        return False
    if _PASSWORD_NAME.search(norm):
        return not _EMPTY_VALUE.fullmatch(value)
    if _INERT_VALUE.fullmatch(value):
        return False
    if _SHORT_PASSWORD_NAME.search(norm):
        return True
    if _SPECIAL_TOKEN.fullmatch(value):
        return False
    if _SECRET_NAME.search(norm):
        return not _VOCAB_TOKEN.search(norm)
    if _WANDB_NAME.search(norm) and _HEX_KEY.fullmatch(value) and not DIGEST_NAME.search(norm):
        return True
    if _NOT_SECRET_KEY.search(norm):
        return False
    return bool(_KEY_NAME.search(norm)) and _is_secret_shaped(value)


# What `mask` returns; masking it again must change nothing (a manifest read back and
# redacted again keeps its DNA).
_MASKED = re.compile(
    "(?:"
    + "|".join(f"(?:{rule.prefix})" for rule in (PEM, *TOKEN_RULES))
    + r"|[^*]{0,4})"
    + re.escape(REDACTED_MARK)
)


def mask(value: str) -> str:
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
NAME_HINTS = (
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
    "pw",
    "wandb",
)
_NAME_WORDS = "(?i:" + "|".join(NAME_HINTS) + ")"
NAME_HINT = re.compile(_NAME_WORDS)
# `NAME=value`, `NAME: value`, `"name": "value"`, `os.environ["NAME"] = value`, and
# `--name value` in free text (shell lines in patches, YAML, JSON, TOML, .env files).
ASSIGNMENT = re.compile(
    r"""(?<![\w.\-])(?=[\w.\-]*?"""
    + _NAME_WORDS
    + r""")
    (?:
        (?P<name>-{0,2}[A-Za-z_][\w.\-]*)["']?\]?[ \t]*(?:=(?!=)|:)[ \t]*
      | (?P<flag>--?[A-Za-z][\w.\-]*)[ \t]+(?![-"'])
    )
    (?:"(?P<v1>[^"\n]*)"|'(?P<v2>[^'\n]*)'|(?P<v3>(?:[^\s'"`,;&)}\]\\]|\\(?![nrt"]))+))
    """,
    re.VERBOSE,
)
# (a value stops at an escaped newline, tab or quote: `"--pw X\n"` in a JSON string)


# `password: |` opens a block redacted line by line; `Authorization: Bearer` names a scheme.
_NOT_THE_VALUE = re.compile(r"[|>][-+0-9]*|[{\[]|(?i:basic|bearer|token|digest)")


def assignment(m: re.Match[str]) -> str:
    group = "v1" if m.group("v1") is not None else "v2" if m.group("v2") is not None else "v3"
    value = m.group(group)
    name = m.group("name") or m.group("flag")
    if group == "v3" and _NOT_THE_VALUE.fullmatch(value):
        return m.group(0)
    if group == "v3" and m.group("name") and value[:1] in ("[", "{"):
        return m.group(0)  # a flow collection: `flow_collections` has read it whole
    # A value under an ordinary name may nest an assignment: `--token-args HF_TOKEN=...`.
    new = mask(value) if is_secret(name, value) else ASSIGNMENT.sub(assignment, value)
    start, end = m.start(group) - m.start(), m.end(group) - m.start()
    whole = m.group(0)
    return whole[:start] + new + whole[end:]


# `api_keys: [A, B]`, `credentials = { user = "ci", value = "X" }`: a flow collection on one
# line under a secret name. Every value in it is hidden, as in a block under such a name;
# `assignment` would see only its first item.
_FLOW_START = re.compile(
    r"""(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]*)["']?[ \t]*(?:=(?!=)|:)[ \t]*(?=[\[{])"""
)
_FLOW_SCALAR = re.compile(
    # a key's `:` or `=` has a space after it (YAML, TOML): a value's (`bob:pw`) has none
    r"""(?P<lead>[\[{,:=][ \t]*)(?P<q>["']?)"""
    r"""(?P<v>[^\s,\[\]{}:="'#](?:[^,\[\]{}"'\n:=]|[:=](?![ \t]))*?)(?P=q)"""
    r"(?=[ \t]*[,\]}])"
)
_FLOW_INERT = re.compile(r"null|~|\*\*\*|[^*]{0,4}\*\*\*")


def _flow_end(text: str, start: int) -> int:
    """The index after the bracket that closes the one at ``start``, on its line (or the
    line's end when it stays open: a block rule's case)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch == "\n":
            return i
    return len(text)


def _flow_value(m: re.Match[str]) -> str:
    value = m.group("v")
    if _FLOW_INERT.fullmatch(value.strip()):
        return m.group(0)
    return m.group("lead") + m.group("q") + mask(value) + m.group("q")


def flow_collections(text: str) -> str:
    """``text`` with every value of a one-line flow collection under a secret name hidden."""
    out, last = [], 0
    for m in _FLOW_START.finditer(text):
        if m.end() < last or not is_secret_name(m.group("name")):
            continue
        end = _flow_end(text, m.end())
        out += [text[last : m.end()], _FLOW_SCALAR.sub(_flow_value, text[m.end() : end])]
        last = end
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# Any `name = value` / `name: value` / `"name": "value"` whose value is one long word: the
# entropy backstop looks at the value (redact_entropy); names of digests are left alone.
# Anchored on the operator, so the engine skips to the next `=` or `:` at C speed.
ANY_ASSIGNMENT = re.compile(
    r"""(?::=|=>|=|:)[ \t]*(?P<q>["'`]?)(?P<v>[A-Za-z0-9+/_.~\-]{20,}={0,3})(?P=q)"""
    r"(?![\w+/=.~\-])"
)
_NAME_BEFORE = re.compile(r"""([\w.\-]*)["']?\]?[ \t]*$""")
DIGEST_NAME = re.compile(
    r"(?i)sha|md5|hash|digest|checksum|commit|revision|(?:^|_)rev$|etag|uuid|guid|fingerprint"
    r"|blake|crc32|cache"
    r"|integrity|(?:^|[_\-])ids?$"
)
WORD_RUN = re.compile(r"[A-Za-z0-9+/_.~\-]{20,}")


def hide_random(word: str) -> str:
    """``word`` with what looks random in it masked: the whole word, or a path's random
    components (:func:`expdna.manifest.redact_entropy.random_parts`)."""
    spans = random_parts(word)
    if not spans:
        return word
    out, last = [], 0
    for start, end in spans:
        out += [word[last:start], mask(word[start:end])]
        last = end
    out.append(word[last:])
    return "".join(out)


def backstop(m: re.Match[str]) -> str:
    value = m.group("v")
    hidden = hide_random(value)
    if hidden == value:
        return m.group(0)
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    name = _NAME_BEFORE.search(m.string, max(line_start, m.start() - 100), m.start())
    if name is not None and DIGEST_NAME.search(name.group(1)):
        return m.group(0)
    start, end = m.start("v") - m.start(), m.end("v") - m.start()
    whole = m.group(0)
    return whole[:start] + hidden + whole[end:]


# The backstop in prose (notes, notebooks, shell scripts, path components): any long word.
BARE_WORD = re.compile(r"[A-Za-z0-9+/_.~\-]{20,}={0,3}")
# Words before a value on its line that say it is a digest or an id (`sha256 <hex>`,
# `commit <sha>`, `cache key <md5>`, `run id ...`): kept.
_DIGEST_CONTEXT = re.compile(
    r"(?i)sha\d*|md5|hash|digest|checksum|commit|revision|etag|uuid|fingerprint|integrity"
    r"|blake|crc|cache|(?<![a-z])ids?\b|_ids?\b|run.id|job.id"
)


_HEX_WORD = re.compile(r"[0-9a-fA-F]+")


def bare_backstop(m: re.Match[str]) -> str:
    word = m.group(0)
    if _HEX_WORD.fullmatch(word):
        # in prose a hex word is a digest, a run id or a cache key far more often than a
        # key; a hex key is hidden where it is a value (argv, config) or by its name
        return word
    hidden = hide_random(word)
    if hidden == word or (word[0] in "+-" and hide_random(word[1:]) == word[1:]):
        return word  # `+name_...`: a diff's added line, in a log that is not a patch
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    if _DIGEST_CONTEXT.search(m.string, max(line_start, m.start() - 48), m.start()):
        return word
    return hidden
