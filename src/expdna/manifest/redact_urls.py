"""URLs read as URLs: credentials in the userinfo, signatures and tokens in the query.

A URL's userinfo runs to the *last* ``@`` before a host, so a password may hold ``#``,
``/`` or ``@`` (``amqp://worker:gu3st#x@host``, ``mongodb+srv://admin:p@ss@host``); the
rest is split with :func:`urllib.parse.urlsplit`, and each query or fragment parameter is
judged by its name: a signature (``sig``, ``X-Amz-Signature``, ``Signature``...) always,
``token``, ``api_key``, ``key``... as the name rules judge a ``NAME=value``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from expdna.manifest.redact_names import is_secret, mask
from expdna.manifest.redact_rules import REDACTED_MARK, is_token_shaped

# What follows the last `@` of a userinfo: one host or several (`h1:27017,h2:27017`), or a
# bracketed IPv6 address, an optional port, then the path, the query, the fragment or the end.
_HOST = re.compile(
    r"(?:\[[0-9A-Za-z:.%]+\]|[A-Za-z0-9\-._~%]+)(?::\d{0,5})?"
    r"(?:,[A-Za-z0-9\-._~%]+(?::\d{0,5})?)*(?=[/?#]|[).,;:!]*$)"
)
# Parameters whose value is a signature or a session credential whatever the value looks like.
SIGNATURE_PARAMS = frozenset(
    {
        "sig",
        "signature",
        "x-amz-signature",
        "x-goog-signature",
        "x-amz-security-token",
        "x-oss-signature",
        "x-cos-signature",
        "security-token",
    }
)
# A value stops at a backslash too: in a JSON or Python string, `\n` after a URL is an
# escape, not part of the value (a notebook's `"!curl https://...&sig=X\n"`).
_PARAM = re.compile(r"(?P<lead>^|[?&;#])(?P<name>[^=&;#?]+)=(?P<value>[^&;#)\]}\\]*)")
_PORT = re.compile(r"\d{1,5}")


def _userinfo_end(rest: str) -> int:
    """Where the userinfo of ``rest`` (a URL after ``://``) ends: the index of its ``@``,
    or -1 when it has none."""
    at = rest.rfind("@")
    while at > 0:
        info = rest[:at]
        head = re.split(r"[/?#]", info, maxsplit=1)[0]
        if _HOST.match(rest, at + 1) and _is_userinfo(info, head):
            return at
        at = rest.rfind("@", 0, at)
    return -1


def _is_userinfo(info: str, head: str) -> bool:
    if head == info:
        return True  # nothing but userinfo characters before this `@`
    user, colon, password = head.partition(":")
    # `host:8080/path@v2` is an authority and a path, not `user:password`
    return bool(colon) and bool(user) and not _PORT.fullmatch(password)


def _secret_param(name: str, value: str) -> bool:
    if not value or REDACTED_MARK in value:  # hidden already (`abcd***`)
        return False
    plain = unquote(name)
    if plain.lower() in SIGNATURE_PARAMS:
        return True
    return is_secret(plain, unquote(value))


def _param(m: re.Match[str]) -> str:
    name, value = m.group("name"), m.group("value")
    if not _secret_param(name, value):
        return m.group(0)
    return f"{m.group('lead')}{name}={mask(value)}"


def redact_url(scheme: str, rest: str) -> str:
    """``scheme://rest`` with its credentials and secret parameters hidden."""
    at = _userinfo_end(rest)
    if at >= 0:
        info = rest[:at]
        if ":" in info or is_token_shaped(info):
            info = REDACTED_MARK  # `git@`, `ssh://deploy@`: a user name alone is kept
        head, rest = info + "@", rest[at + 1 :]
    else:
        head = ""
    try:
        parts = urlsplit(f"{scheme}://{rest}")
    except ValueError:  # an unbalanced `[` in the host: still look at the parameters
        parts = None
    start = rest.find("?") if parts is None or parts.query else -1
    if parts is not None and not parts.query and parts.fragment:
        start = rest.find("#")
    if start >= 0:
        rest = rest[:start] + _PARAM.sub(_param, rest[start:])
    return f"{scheme}://{head}{rest}"
