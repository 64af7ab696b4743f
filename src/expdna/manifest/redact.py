"""Redaction: make every string of a manifest safe to share.

Two kinds of rule. *Shape* rules recognise a secret or a private detail by how it looks
(a GitHub token, a PEM block, ``10.0.0.7``, ``/home/alice/``) and apply to any text; their
table is :mod:`expdna.manifest.redact_rules`.
*Name* rules redact a whole value because of the name it is stored under
(``WANDB_API_KEY``, ``--db-password``), in dicts, argv and ``NAME=value`` free text
(:mod:`expdna.manifest.redact_names`). An entropy backstop hides long random-looking
values no rule recognised (:mod:`expdna.manifest.redact_entropy`). Text is read with its
structure, patches as the files they change (:mod:`expdna.manifest.redact_structure`,
:mod:`expdna.manifest.redact_lines`). The user's own home is written ``~``.

Every replacement contains :data:`REDACTED_MARK` or a ``<...>`` marker, so a reader can
tell a value was redacted (``rerun --confirm`` refuses commands that depend on one).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from expdna.manifest.redact_commands import argv_secrets
from expdna.manifest.redact_embedded import changed_strings, embedded_document, rewrite
from expdna.manifest.redact_lines import redact_text_with as _redact_text
from expdna.manifest.redact_names import DIGEST_NAME, hide_random, is_secret, is_secret_name, mask
from expdna.manifest.redact_rules import (
    HOME_PATHS,
    REDACTED_MARK,
    SHAPE_RULES,
    Rule,
    apply,
    home_rule,
)

__all__ = [
    "REDACTED_MARK",
    "redact_argv",
    "redact_key",
    "redact_named",
    "redact_text",
    "redact_tree",
]

# --- text, names, argv --------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _cached_home_rule(home: str) -> Rule | None:
    return home_rule(home)


def _current_home() -> Rule | None:
    try:
        return _cached_home_rule(str(Path.home()))
    except RuntimeError:  # no HOME and no passwd entry
        return None


def _redact_named(name: str, value: str, home: Rule | None) -> str:
    if is_secret(name, value):
        return mask(value)
    return _redact_text(value, home)


_FLAG = re.compile(r"--?[A-Za-z][\w.\-]*")


def _backstop_word(word: str, name: str = "") -> str:
    """A whole value that is, or whose path components are, long random-looking words,
    hidden (argv, env, config); kept under the name of a digest (`--expected-md5`)."""
    if name and DIGEST_NAME.search(name.lstrip("-")):
        return word
    return hide_random(word)


def _redact_argv(argv: list[str], home: Rule | None, hidden: set[str] | None = None) -> list[str]:
    """``argv`` redacted; the secrets hidden whole are added to ``hidden`` (the tree hides
    them wherever else they occur: the parsed ``resolved_args`` must agree)."""
    out: list[str] = []
    flag: str | None = None  # the previous word, when it was a flag without `=value`
    by_command = argv_secrets(argv)
    for i, word in enumerate(argv):
        if i in by_command:  # `curl -u user:pass`, `mysql -pX`, `wandb login KEY`
            at = by_command[i]
            if hidden is not None:
                hidden.add(word[at:])
            out.append(word[:at] + REDACTED_MARK)
            flag = None
            continue
        name, eq, value = word.partition("=")
        # `-1e-4` and `-----BEGIN ...` are values, not flags
        is_flag = _FLAG.fullmatch(name) is not None
        if flag is not None and not is_flag:
            if hidden is not None and is_secret(flag, word):
                hidden.add(word)
            out.append(_backstop_word(_redact_named(flag, word, home), flag))  # `--api-key VALUE`
            flag = None
            continue
        flag = None
        if is_flag and eq:
            if is_secret(name, value):
                if hidden is not None:
                    hidden.add(value)
                out.append(f"{name}={mask(value)}")
            else:
                out.append(f"{name}={_backstop_word(_redact_text(value, home), name)}")
            continue
        if is_flag:
            flag = word
            out.append(_redact_text(word, home))
            continue
        # a positional hex word is a digest, an id or a cache key far more often than a key
        # (as in prose); a hex key as a flag's value is hidden unless the flag names a digest
        out.append(word if _HEX_WORD.fullmatch(word) else _backstop_word(_redact_text(word, home)))
    return out


_HEX_WORD = re.compile(r"[0-9a-fA-F]+")


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

# Values that are one path: each directory is a value of its own (`single_pass: true` one
# directory, `cache key <md5>` the next), the homes in it found on the whole.
_PATH_KEYS = frozenset({"cwd"})


def _redact_path(path: str, home: Rule | None) -> str:
    if home is not None:
        path = apply(home, path)
    for rule in HOME_PATHS:
        path = apply(rule, path)
    return "/".join(_redact_text(part, None) for part in path.split("/"))


# Where a secret-named key hides the whole dict under it: the run's own values.
_BLOCK_SECTIONS = ("config.resolved_args.", "config.config_values.")


class _Walk:
    """One redaction of one tree: the home pattern, looked up once, and the changed paths.

    A path is listed as changed only when something was hidden: the user's own home
    written as ``~`` is a spelling this user's shell and ``rerun`` read back. ``hidden``
    collects the secrets hidden whole, to hide their copies elsewhere in the tree.
    """

    def __init__(self, home: Rule | None, *, blocks: tuple[str, ...] = _BLOCK_SECTIONS) -> None:
        self.home = home
        self.blocks = blocks  # where a secret-named key hides the dict under it
        self.changed: list[str] = []
        self.hidden: set[str] = set()

    def _hidden(self, old: str, new: str) -> bool:
        return new != old and (self.home is None or new != apply(self.home, old))

    def string(self, obj: str, path: str, key: str, parent: str, *, secret: bool) -> str:
        if _exempt(key, parent, obj):
            return obj
        if (secret and obj.strip()) or is_secret(key, obj):
            self.hidden.add(obj)
            return mask(obj)
        new = _redact_path(obj, self.home) if key in _PATH_KEYS else _redact_text(obj, self.home)
        found = embedded_document(obj)
        if found is not None:  # JSON, YAML or TOML in a string: walked like a config file
            fmt, parsed = found
            inner = _Walk(self.home, blocks=("",))
            walked = inner.value(parsed, "", "", "")
            self.hidden |= inner.hidden
            new = rewrite(new, changed_strings(parsed, walked), fmt)
        if new == obj and path.startswith(_BACKSTOP_SECTIONS) and not DIGEST_NAME.search(key):
            new = _backstop_word(obj)
        return new

    def value(self, obj: Any, path: str, key: str, parent: str, secret: bool = False) -> Any:
        if path == "dna" or path.startswith("dna."):
            return _copy(obj)
        if isinstance(obj, str):
            new = self.string(obj, path, key, parent, secret=secret)
            if self._hidden(obj, new):
                self.changed.append(path)
            return new
        if isinstance(obj, (int, float)) and not isinstance(obj, bool) and key:
            # `--db-password 12345678` is parsed as a number: hide it by name all the same.
            text = str(obj)
            masked = mask(text) if secret else _redact_named(key, text, self.home)
            if masked != text:
                self.changed.append(path)
                return masked
            return obj
        if isinstance(obj, dict):
            # Everything under a secret-named key is hidden (`credentials: {user, value}`),
            # as in a config file's block under such a key.
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                name = str(k)
                inside = secret or (
                    isinstance(v, dict)
                    and f"{path}.{name}".startswith(self.blocks)
                    and _secret_key(name)
                )
                shown = self.key(name, path)
                here = f"{path}.{shown}" if path else shown
                out[k if shown == name else shown] = self.value(v, here, name, key, inside)
            return out
        if isinstance(obj, (list, tuple)):
            if key == "argv" and all(isinstance(v, str) for v in obj):
                return self.argv(list(obj), path)
            # A list's items are stored under the list's own name (`api_keys: [...]`).
            return [
                self.value(v, f"{path}.{i}" if path else str(i), key, parent, secret)
                for i, v in enumerate(obj)
            ]
        return obj

    def key(self, name: str, path: str) -> str:
        """A dict key as text: a metric named `acc/https://u:pw@h`, a checkout directory
        named like a token (`code.ghp_...`) are as shared as any value. The changed path
        names the key as it now reads, never the secret."""
        new = redact_key(name)
        if self._hidden(name, new):
            self.changed.append(f"{path}.{new}" if path else new)
        return new

    def argv(self, argv: list[str], path: str) -> list[str]:
        new = _redact_argv(argv, self.home, self.hidden)
        self.changed.extend(
            f"{path}.{i}" if path else str(i)
            for i, (old, now) in enumerate(zip(argv, new, strict=True))
            if self._hidden(old, now)
        )
        return new

    def spread(self, obj: Any, path: str, key: str = "", parent: str = "") -> Any:
        """``obj`` with every copy of a secret hidden elsewhere hidden too: argv and the
        ``resolved_args`` parsed from it always agree (`curl -u user:pass` -> `u`)."""
        if path == "dna" or path.startswith("dna."):
            return obj
        if isinstance(obj, str) and not _exempt(key, parent, obj):
            new = obj
            for secret in self.secrets:
                if secret in new:
                    new = new.replace(secret, mask(secret))
            if new != obj:
                self.changed.append(path)
            return new
        if isinstance(obj, dict):
            return {
                self._spread_key(k): self.spread(v, f"{path}.{k}" if path else str(k), str(k), key)
                for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [
                self.spread(v, f"{path}.{i}" if path else str(i), key, parent)
                for i, v in enumerate(obj)
            ]
        return obj

    def _spread_key(self, key: Any) -> Any:
        """A key holding a secret hidden elsewhere, hidden too (a metric named after it)."""
        if not isinstance(key, str):
            return key
        for secret in self.secrets:
            if secret in key:
                key = key.replace(secret, mask(secret))
        return key

    @property
    def secrets(self) -> list[str]:
        """The hidden secrets worth looking for elsewhere, longest first."""
        found = (s for s in self.hidden if len(s) >= _MIN_SPREAD and REDACTED_MARK not in s)
        return sorted(found, key=len, reverse=True)


# A key is a name, and often a path (`config_files` is keyed by the files' paths, which
# `config_file_details` and the DNA look up): only secrets are hidden in it, never the
# private details (a home, an address) that are hidden in values.
_NOT_SECRETS = frozenset(
    {"internal-ipv4", "internal-ipv6", "internal-host", "private-path", "windows-home"}
)
_KEY_RULES = tuple(rule for rule in SHAPE_RULES if rule.name not in _NOT_SECRETS)


def redact_key(name: str) -> str:
    """A manifest key (or a metric's name) with its secrets hidden, nothing else."""
    if not name:
        return name
    lower = name.lower()
    for rule in _KEY_RULES:
        new = apply(rule, name, lower)
        if new != name:
            name, lower = new, new.lower()
    return name


def _secret_key(name: str) -> bool:
    """A config key that says secret: its dict is hidden whole. Not a path or a file name
    (`config_file_details` is keyed by paths, which may hold any word)."""
    return "/" not in name and "." not in name and is_secret_name(name)


# Shorter hidden values (`***`, a 4-digit PIN) are not looked for elsewhere: too likely to
# occur by chance in unrelated text.
_MIN_SPREAD = 8


def redact_tree(obj: Any, path: str = "") -> tuple[Any, list[str]]:
    """A redacted copy of a JSON-like tree and the sorted dotted paths of changed strings.

    Dict values are redacted by their key's name, lists under ``argv`` as a command line,
    other strings as text. Commit SHAs, ``blake3:`` references, hex digests, versions and
    everything under the top-level ``dna`` key are left exactly as they are.
    """
    walk = _Walk(_current_home())
    key = path.rsplit(".", 1)[-1] if path else ""
    new = walk.value(obj, path, key, "")
    if walk.secrets:
        new = walk.spread(new, path)
    return new, sorted(set(walk.changed))
