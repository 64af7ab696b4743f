"""Redaction's shape rules: how a secret or a private detail looks, in any text.

Token shapes (a GitHub token, an API key), PEM blocks, credentials in URLs, internal
addresses and host names, and private paths (``/home/alice/``, the current user's home),
each a :class:`Rule` with the cheap hints that gate its regex. :mod:`expdna.manifest.redact`
applies them, with the name rules, to text, argv and manifest trees.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

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


def _token(name: str, hints: tuple[str, ...], prefix: str, body: str, not_after: str = "") -> Rule:
    """A token shape ``prefix`` + ``body`` (regexes), redacted to its prefix + mark."""

    def replace(m: re.Match[str]) -> str:
        if _after_word(m, not_after):
            return m.group(0)  # inside a longer word: `task-...` is not `sk-...`
        return m.group("prefix") + REDACTED_MARK

    pattern = re.compile(f"(?P<prefix>{prefix}){body}")
    return Rule(name, hints, pattern, replace, prefix)


# Token shapes, most specific first: a later, looser shape must not see a body that an
# earlier one would have reported under its own prefix.
_E = r"(?![A-Za-z0-9])"
TOKEN_RULES: tuple[Rule, ...] = (
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

PEM = _token(
    "pem",
    ("PRIVATE KEY",),
    # A block cut short (a truncated patch) is redacted to the end of the text; the
    # lookahead keeps an already redacted block from swallowing what follows it.
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    r"(?!\*\*\*)(?s:.*?)(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
)


def _url_credentials(m: re.Match[str]) -> str:
    userinfo = m.group("userinfo")
    if ":" in userinfo or is_token_shaped(userinfo):
        return "://" + REDACTED_MARK + "@"
    return m.group(0)  # `git@`, `ssh://deploy@`: a user name, not a credential


_URL_CREDENTIALS = Rule(
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


def _internal_host(m: re.Match[str]) -> str:
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    if _IMPORT_TAIL.search(m.string, line_start, m.start()):
        return m.group(0)  # `from google.protobuf.internal import ...` is a module
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


def home_rule(home: str) -> Rule | None:
    """The rule for the current user's home, wherever it is (``/root``, ``/srv/u``)."""
    home = home.rstrip("/\\")
    if len(home) < 2:
        return None  # a home of `/` would match every absolute path
    pattern = re.compile(re.escape(home) + r"(?![\w.\-$@+])")
    return Rule("current-home", (home,), pattern, _private_path)


SHAPE_RULES: tuple[Rule, ...] = (
    PEM,  # first: its body must go as one piece, before any rule sees a fragment of it
    _URL_CREDENTIALS,
    *TOKEN_RULES,
    _IPV4,
    _IPV6,
    _INTERNAL_HOST,
    _PRIVATE_PATH,
    _WINDOWS_HOME,
)
# For short text one search for any hint beats a substring test per hint; for long text
# (patches) the substring tests win, since a regex alternation this wide is slow to scan.
ANY_HINT = re.compile(
    "|".join(
        f"(?i:{re.escape(hint)})" if rule.fold else re.escape(hint)
        for rule in SHAPE_RULES
        for hint in rule.hints
    )
)
LONG_TEXT = 512
_SHAPED_WORD = re.compile(r"[\w+/=.\-]{16,}")
_HEX32 = re.compile(r"[0-9a-fA-F]{32,}")


def is_token_shaped(value: str) -> bool:
    """A known token shape, or a long random-looking word."""
    if any(rule.pattern.fullmatch(value) for rule in TOKEN_RULES):
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
