"""Credentials that a command's own syntax marks: ``curl -u user:pass``, ``mysql -pSECRET``,
``wandb login KEY``, ``docker login -p X``, ``sshpass -p X``, ``redis-cli -a X``.

Neither their name nor their shape says secret (``-p`` is a port to most programs, a W&B
key is 40 hex like a commit), only the command they follow. Two forms of one table: regexes
for text (shell scripts, patches, notes), each hiding its ``secret`` group, and the same
knowledge applied to an argv, word by word. Data and pure functions only:
:mod:`expdna.manifest.redact_rules` compiles the text rows, :mod:`expdna.manifest.redact`
masks what :func:`argv_secrets` finds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

# The rest of one shell command on this line: not past a pipe, `;` or `&`.
_SAME_COMMAND = r"[^\n|;&]*?[ \t]"
# Not past an escape (`\n`, `\"`) of a JSON or Python string that holds the command (a
# notebook's source line), and not a value hidden already.
_VALUE = r"""["']?(?P<secret>(?!\*\*\*(?:["'\s\\]|$))(?:[^\s"'\\]|\\(?![nrt"]))+)"""


class CommandShape(NamedTuple):
    name: str
    hints: tuple[str, ...]  # lower case, looked for in the lower-cased text
    pattern: str


COMMAND_SHAPES: tuple[CommandShape, ...] = (
    CommandShape(
        "curl-user",
        ("curl",),
        r"\bcurl\b" + _SAME_COMMAND + r"(?:-u|-U|--(?:proxy-)?user(?=[ \t=]))(?:[ \t]+|=)?"
        r"""["']?[^\s"':]*:""" + _VALUE,
    ),
    CommandShape(
        "mysql-password",
        ("mysql", "mariadb"),
        r"\b(?:mysql\w*|mariadb(?:-dump)?)\b" + _SAME_COMMAND + r"-p" + _VALUE,
    ),
    CommandShape(
        "wandb-login",
        ("wandb",),
        # the flags taken as a whole (a lookahead, then its text: no backtracking into them,
        # so the value of `--host` is never read as the key)
        r"\bwandb[ \t]+login\b"
        r"(?=(?P<flags>(?:[ \t]+--(?:host|cloud)(?:[ \t]+|=)\S+|[ \t]+--?[\w\-]+(?:=\S+)?)*))"
        r"(?P=flags)[ \t]+(?![\-])" + _VALUE,
    ),
    CommandShape(
        "registry-login",
        ("login",),
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm[ \t]+registry)[ \t]+login\b"
        + _SAME_COMMAND
        + r"-p[ \t]+"
        + _VALUE,
    ),
    CommandShape("sshpass", ("sshpass",), r"\bsshpass[ \t]+-p[ \t]*" + _VALUE),
    CommandShape(
        "redis-cli", ("redis-cli",), r"\bredis-cli\b" + _SAME_COMMAND + r"-a[ \t]+" + _VALUE
    ),
    CommandShape(
        "mongo-password",
        ("mongo",),
        r"\bmongo(?:sh|dump|restore|import|export)?\b" + _SAME_COMMAND + r"-p[ \t]+" + _VALUE,
    ),
)

# --- argv --------------------------------------------------------------------------------

_END = frozenset({"|", ";", "&&", "||", "&"})
_MYSQL = re.compile(r"mysql\w*|mariadb(?:-dump)?")


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1].lower()


def _curl(words: Sequence[str], i: int) -> tuple[int, int] | None:
    word = words[i]
    for flag in ("--user=", "--proxy-user=", "-u", "-U"):
        if word.startswith(flag) and len(word) > len(flag):
            value_at, value = i, word[len(flag) :]
            break
    else:
        if word not in ("-u", "-U", "--user", "--proxy-user") or i + 1 >= len(words):
            return None
        value_at, value = i + 1, words[i + 1]
    colon = value.find(":")
    if colon < 0 or colon + 1 == len(value):
        return None
    return value_at, len(words[value_at]) - len(value) + colon + 1


_Finder = Callable[[Sequence[str], int], tuple[int, int] | None]


def _short_flag(flag: str, *, attached: bool, separate: bool = True) -> _Finder:
    def find(words: Sequence[str], i: int) -> tuple[int, int] | None:
        word = words[i]
        if attached and word.startswith(flag) and len(word) > len(flag):
            return i, len(flag)
        if separate and word == flag and i + 1 < len(words) and words[i + 1] not in _END:
            return i + 1, 0
        return None

    return find


_FINDERS: dict[str, _Finder] = {
    "curl": _curl,
    # `mysql -p db`: a bare `-p` asks for the password, `db` is the database
    "mysql": _short_flag("-p", attached=True, separate=False),
    "sshpass": _short_flag("-p", attached=True),
    "redis-cli": _short_flag("-a", attached=False),
    "mongo": _short_flag("-p", attached=False),
    "login": _short_flag("-p", attached=False),
}
_LOGIN_PROGRAMS = frozenset({"docker", "podman", "nerdctl", "buildah", "skopeo"})


def _finder(program: str, words: Sequence[str], at: int) -> str | None:
    if program == "curl" or program == "sshpass" or program == "redis-cli":
        return program
    if _MYSQL.fullmatch(program):
        return "mysql"
    if program in ("mongo", "mongosh", "mongodump", "mongorestore", "mongoimport"):
        return "mongo"
    if program in _LOGIN_PROGRAMS and at + 1 < len(words) and words[at + 1] == "login":
        return "login"
    return None


def _wandb_key(words: Sequence[str], start: int) -> int | None:
    """The index of the key in ``wandb login [flags] KEY``."""
    i = start
    while i < len(words) and words[i] not in _END:
        word = words[i]
        if word in ("--host", "--cloud"):
            i += 2
            continue
        if not word.startswith("-"):
            return i
        i += 1
    return None


def argv_secrets(argv: Sequence[str]) -> dict[int, int]:
    """Words of ``argv`` that a command's syntax marks as a credential: index -> the offset
    in that word where the credential starts (it runs to the word's end)."""
    found: dict[int, int] = {}
    for at, word in enumerate(argv):
        program = _program(word)
        if program == "wandb" and at + 1 < len(argv) and argv[at + 1] == "login":
            key = _wandb_key(argv, at + 2)
            if key is not None:
                found[key] = 0
            continue
        kind = _finder(program, argv, at)
        if kind is None:
            continue
        find = _FINDERS[kind]
        i = at + 1
        while i < len(argv) and argv[i] not in _END:
            hit = find(argv, i)
            if hit is not None:
                found[hit[0]] = hit[1]
            i += 1
    return found
