"""Redaction: make every string of a manifest safe to share.

Two kinds of rule. *Shape* rules recognise a secret or a private detail by how it looks
(a GitHub token, a PEM block, ``10.0.0.7``, ``/home/alice/``) and apply to any text.
*Name* rules redact a whole value because of the name it is stored under
(``WANDB_API_KEY``, ``--db-password``), in dicts, argv and ``NAME=value`` free text.

Every replacement contains :data:`REDACTED_MARK` or a ``<...>`` marker, so a reader can
tell a value was redacted (``rerun --confirm`` refuses commands that depend on one).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["REDACTED_MARK", "redact_argv", "redact_named", "redact_text", "redact_tree"]

REDACTED_MARK = "***"
_ADDRESS = "<internal-address>"
_HOST = "<internal-host>"
_HOME = "<HOME>"


class _Rule(NamedTuple):
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


def _token(name: str, hints: tuple[str, ...], prefix: str, body: str, not_after: str = "") -> _Rule:
    """A token shape ``prefix`` + ``body`` (regexes), redacted to its prefix + mark."""

    def replace(m: re.Match[str]) -> str:
        if _after_word(m, not_after):
            return m.group(0)  # inside a longer word: `task-...` is not `sk-...`
        return m.group("prefix") + REDACTED_MARK

    pattern = re.compile(f"(?P<prefix>{prefix}){body}")
    return _Rule(name, hints, pattern, replace, prefix)


# Token shapes, most specific first: a later, looser shape must not see a body that an
# earlier one would have reported under its own prefix.
_E = r"(?![A-Za-z0-9])"
_TOKEN_RULES: tuple[_Rule, ...] = (
    _token("github", ("gh",), r"gh[pousr]_", r"[A-Za-z0-9]{30,}" + _E),
    _token("github-fine-grained", ("github_pat_",), r"github_pat_", r"\w{22,}"),
    _token(
        "gitlab",
        ("gl",),
        r"gl(?:pat|dt|rt|ptt|ft|imt|agent|oas|cbt|soat|ffct|wt)-",
        r"[\w\-]{20,}(?:\.[\w\-]+)*",
    ),
    _token("gitlab-runner", ("GR1348941",), r"GR1348941", r"[\w\-]{20,}"),
    _token("huggingface", ("hf_",), r"hf_", r"[A-Za-z0-9]{30,}" + _E),
    _token("huggingface-org", ("api_org_",), r"api_org_", r"[A-Za-z0-9]{30,}" + _E),
    _token("anthropic", ("sk-ant-",), r"sk-ant-(?:api|admin|oat|sid)\d\d-", r"[\w\-]{32,}"),
    _token("openai-project", ("sk-",), r"sk-(?:proj|svcacct|admin|None)-", r"[\w\-]{20,}"),
    # Legacy OpenAI and look-alikes (DeepSeek, ...); a digit in the body keeps prose out.
    _token("openai", ("sk-",), r"sk-", r"(?=[\w\-]*\d)[\w\-]{20,}"),
    _token(
        "stripe",
        ("_live_", "_test_"),
        r"(?:sk|rk|pk)_(?:live|test)_",
        r"[A-Za-z0-9]{16,}" + _E,
    ),
    _token("stripe-webhook", ("whsec_",), r"whsec_", r"[A-Za-z0-9]{24,}" + _E),
    _token("slack", ("xox",), r"xox[abposre]-", r"[A-Za-z0-9\-]{10,}"),
    _token("slack-app", ("xapp-",), r"xapp-", r"[A-Za-z0-9\-]{10,}"),
    _token(
        "slack-webhook",
        ("hooks.slack.com",),
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/",
        r"[\w/\-]+",
    ),
    _token(
        "discord-webhook",
        ("/api/webhooks/",),
        r"https?://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/",
        r"[\w/\-]+",
    ),
    _token(
        "aws-access-key-id",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        r"AKIA|ASIA|ABIA|ACCA",
        r"[A-Z0-9]{16}" + _E,
    ),
    _token("google-api-key", ("AIza",), r"AIza", r"[\w\-]{35}(?![\w\-])"),
    _token("google-oauth", ("ya29.",), r"ya29\.", r"[\w\-]{20,}"),
    _token("google-client-secret", ("GOCSPX-",), r"GOCSPX-", r"[\w\-]{24,}"),
    _token("npm", ("npm_",), r"npm_", r"[A-Za-z0-9]{36,}" + _E),
    _token(
        "pypi",
        ("pypi-",),
        r"pypi-",
        r"(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[\w\-]{40,}",
    ),
    _token("wandb", ("wandb_v1_",), r"wandb_v1_", r"[\w\-]{20,}"),
    _token("wandb-local", ("local-",), r"local-", r"[0-9a-f]{40}" + _E),
    _token("jwt", ("eyJ",), r"eyJ", r"[\w\-]{10,}\.[\w\-]{10,}\.[\w\-]*", "_-"),
    _token("neptune", ("eyJhcGlfYWRkcmVzcyI6",), r"eyJ", r"hcGlfYWRkcmVzcyI6[\w+/=]+"),
    _token("databricks", ("dapi",), r"dapi", r"[0-9a-f]{32}(?:-\d+)?" + _E),
    _token("sendgrid", ("SG.",), r"SG\.", r"[\w\-]{16,}\.[\w\-]{30,}"),
    _token("twilio", ("SK",), r"SK", r"[0-9a-fA-F]{32}" + _E),
    _token("digitalocean", ("_v1_",), r"do[opr]_v1_", r"[0-9a-f]{64}" + _E),
    _token("vault", ("hvs.", "hvb.", "hvr."), r"hv[sbr]\.", r"[\w\-]{24,}"),
    _token("replicate", ("r8_",), r"r8_", r"[A-Za-z0-9]{30,}" + _E),
    _token("groq", ("gsk_",), r"gsk_", r"[A-Za-z0-9]{40,}" + _E),
    _token("xai", ("xai-",), r"xai-", r"[A-Za-z0-9]{60,}" + _E),
    _token("nvidia", ("nvapi-",), r"nvapi-", r"[\w\-]{40,}"),
    _token("perplexity", ("pplx-",), r"pplx-", r"[A-Za-z0-9]{40,}" + _E),
    _token(
        "azure-storage",
        ("AccountKey=", "SharedAccessKey="),
        r"(?:AccountKey|SharedAccessKey)=",
        r"[A-Za-z0-9+/%]{16,}=*",
    ),
    _token("azure-sas", ("?sig=", "&sig="), r"[?&]sig=", r"[A-Za-z0-9%+/]{16,}=*"),
    _token("bearer", ("earer",), r"[Bb]earer\s+", r"[\w.~+/\-]{16,}=*", "_"),
    _token(
        "authorization",
        ("uthorization", "UTHORIZATION"),
        r"(?:[Aa]uthorization|AUTHORIZATION)[\"']?\s*[:=]\s*[\"']?(?:Basic|Token|token)\s+",
        r"[\w.~+/\-]{8,}=*",
    ),
    _token(
        "netrc",
        ("machine",),
        r"machine\s+\S+\s+(?:login\s+\S+\s+)?password\s+",
        r"(?!\*\*\*)\S+",
        "_",
    ),
)

_PEM = _token(
    "pem",
    ("PRIVATE KEY",),
    # A block cut short (a truncated patch) is redacted to the end of the text; the
    # lookahead keeps an already redacted block from swallowing what follows it.
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    r"(?!\*\*\*)(?s:.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
)


def _url_credentials(m: re.Match[str]) -> str:
    userinfo = m.group("userinfo")
    if ":" in userinfo or _is_token_shaped(userinfo):
        return "://" + REDACTED_MARK + "@"
    return m.group(0)  # `git@`, `ssh://deploy@`: a user name, not a credential


_URL_CREDENTIALS = _Rule(
    "url-credentials",
    ("://",),
    re.compile(r"://(?P<userinfo>[^\s/?#@'\"<>]+)@"),
    _url_credentials,
)

_PRIVATE_RANGES: tuple[tuple[int, int, int], ...] = (
    # (first octet, lowest second octet, highest second octet)
    (10, 0, 255),
    (172, 16, 31),
    (192, 168, 168),
    (100, 64, 127),
    (169, 254, 254),
)


def _ipv4(m: re.Match[str]) -> str:
    octets = [int(part) for part in m.group(0).split(".")]
    if _after_word(m, "._") or max(octets) > 255:
        return m.group(0)
    first, second = octets[0], octets[1]
    for head, low, high in _PRIVATE_RANGES:
        if first == head and low <= second <= high:
            return _ADDRESS
    return m.group(0)


_IPV4 = _Rule(
    "internal-ipv4",
    ("10.", "172.", "192.168.", "100.", "169.254."),
    # Not part of a longer dotted number: a five-part VBIOS version is not an address.
    re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\.\d)(?!\w)"),
    _ipv4,
)

_IPV6 = _Rule(
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


def _internal_host(m: re.Match[str]) -> str:
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    if _IMPORT_TAIL.search(m.string, line_start, m.start()):
        return m.group(0)  # `from google.protobuf.internal import ...` is a module
    return _HOST


_INTERNAL_HOST = _Rule(
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
_PRIVATE_PATH = _Rule(
    "private-path",
    ("/home/", "/Users/"),
    # `/lustre/home/u`, `/nfs/home/u`: one mount directory may come first
    re.compile(rf"/(?:[\w.\-]+/)?home/{_USER}|/Users/{_USER}"),
    _private_path,
)
_WINDOWS_HOME = _Rule(
    "windows-home",
    ("\\Users\\", "\\users\\"),
    re.compile(r"[A-Za-z]:\\[Uu]sers\\[^\\\s\"']+"),
    lambda m: m.group(0) if _after_word(m, "_") else _HOME,
)


def _home_rule(home: str) -> _Rule | None:
    """The rule for the current user's home, wherever it is (``/root``, ``/srv/u``)."""
    home = home.rstrip("/\\")
    if len(home) < 2:
        return None  # a home of `/` would match every absolute path
    pattern = re.compile(re.escape(home) + r"(?![\w.\-$@+])")
    return _Rule("current-home", (home,), pattern, _private_path)


_SHAPE_RULES: tuple[_Rule, ...] = (
    _PEM,  # first: its body must go as one piece, before any rule sees a fragment of it
    _URL_CREDENTIALS,
    *_TOKEN_RULES,
    _IPV4,
    _IPV6,
    _INTERNAL_HOST,
    _PRIVATE_PATH,
    _WINDOWS_HOME,
)
# For short text one search for any hint beats a substring test per hint; for long text
# (patches) the substring tests win, since a regex alternation this wide is slow to scan.
_ANY_HINT = re.compile(
    "|".join(
        f"(?i:{re.escape(hint)})" if rule.fold else re.escape(hint)
        for rule in _SHAPE_RULES
        for hint in rule.hints
    )
)
_LONG_TEXT = 512

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
_SHAPED_WORD = re.compile(r"[\w+/=.\-]{16,}")
_HEX32 = re.compile(r"[0-9a-fA-F]{32,}")


def _normalise_name(name: str) -> str:
    """``--db-password`` / ``db.password`` / ``dbPassword`` -> ``DB_PASSWORD``."""
    return _SEPARATORS.sub("_", _CAMEL.sub("_", name.strip().lstrip("-"))).upper()


def _is_token_shaped(value: str) -> bool:
    """A known token shape, or a long random-looking word."""
    if any(rule.pattern.fullmatch(value) for rule in _TOKEN_RULES):
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


def _is_secret_shaped(value: str) -> bool:
    return _is_token_shaped(value) or any(
        _apply(rule, value) != value for rule in (_PEM, *_TOKEN_RULES)
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
    + "|".join(f"(?:{rule.prefix})" for rule in (_PEM, *_TOKEN_RULES))
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
    for rule in (_PEM, *_TOKEN_RULES):
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
def _cached_home_rule(home: str) -> _Rule | None:
    return _home_rule(home)


def _current_home() -> _Rule | None:
    try:
        return _cached_home_rule(str(Path.home()))
    except RuntimeError:  # no HOME and no passwd entry
        return None


def _apply(rule: _Rule, text: str, lower: str | None = None) -> str:
    """``text`` after ``rule``; ``lower`` is ``text.lower()`` when the caller has it."""
    where = (lower if lower is not None else text.lower()) if rule.fold else text
    if any(hint in where for hint in rule.hints):
        return rule.pattern.sub(rule.replace, text)
    return text


def _redact_text(text: str, home: _Rule | None) -> str:
    long = len(text) > _LONG_TEXT
    if long or _ANY_HINT.search(text):
        lower = text.lower()
        for rule in _SHAPE_RULES:
            new = _apply(rule, text, lower)
            if new != text:
                text, lower = new, new.lower()
    if home is not None:
        text = _apply(home, text)
    names = any(w in text.lower() for w in _NAME_HINTS) if long else _NAME_HINT.search(text)
    if names:
        text = _ASSIGNMENT.sub(_assignment, text)
    return text


def _redact_named(name: str, value: str, home: _Rule | None) -> str:
    if _is_secret(name, value):
        return _mask(value)
    return _redact_text(value, home)


_FLAG = re.compile(r"--?[A-Za-z][\w.\-]*")


def _redact_argv(argv: list[str], home: _Rule | None) -> list[str]:
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

    def __init__(self, home: _Rule | None) -> None:
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
