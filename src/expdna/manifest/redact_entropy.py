"""The entropy backstop: a long random-looking token that no shape rule recognised.

It applies where a credential is plausible whatever its shape: argv values, environment
and resolved-config values, and the value of an assignment or key-value line in a patch
or a config file. Free prose is left to the shape rules.

Thresholds (documented in the guide, "The entropy backstop"):

* the token is one word of ``[A-Za-z0-9+/_.~-]`` with at most three trailing ``=``;
* hex only: at least 32 characters and Shannon entropy >= 3.0 bits a character, except
  exactly 40 or 64 characters (git commits, SHA-1/SHA-256 digests);
* otherwise: at least 20 characters, letters and digits both present, and entropy
  >= ``min(4.0, 0.85 * log2(length))``;
* never: numbers (digits only), UUIDs, versions, paths (``/...``, ``./``, ``~/``,
  ``C:\\``), dotted names,
  names of three or more words, numbers or short parts (up to five characters) joined by
  ``_``, ``-`` or ``.`` (``vit_base_patch16_224``, ``sft_llama3_8b_lr2e-5_bs256``), of
  which one part may be a random id of up to eight characters
  (``offline-run-20261201_172943-mbi77gu4``),
  digests with an algorithm (``sha256:...``), Kubernetes pod names, Ray job ids
  (``raysubmit_...``), code identifiers in camel case (``nvmlDeviceGetBAR1MemoryInfo``),
  alphabets written out (a run of six
  consecutive characters such as ``abcdef`` or ``012345``), images embedded as base64
  (PNG, JPEG, GIF, WebP, PDF magic), and ``word/word`` names whose parts are not random
  on their own.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

_TOKEN = re.compile(r"[A-Za-z0-9+/_.~\-]+={0,3}")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_DIGIT = re.compile(r"\d")
_HEX_LETTERS = re.compile(r"[a-f]{32}|[A-F]{32}")
_UUID = re.compile(
    r"(?:[A-Za-z]+-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-+.~_]?[\w.+\-]*)?")
_DOTTED_NAME = re.compile(r"[A-Za-z_][\w\-]*(?:\.[A-Za-z_][\w\-]*)+")
# `vit_base_patch16_224`, `model-v2-imagenet-1k`: words and numbers joined by separators.
_SEPARATOR = re.compile(r"[_\-.]")
_WORDISH = re.compile(r"\d*(?:[A-Z]?[a-z]+|[A-Z]+)?\d*")
# Base64 of binary files a notebook or a config embeds: data, not credentials.
_IMAGE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi0")
# A Kubernetes pod: `<deployment>-<pod-template-hash>-<5>`, both drawn from the
# alphabet Kubernetes uses for generated names (no vowels, no 0, 1, 3).
_K8S = "[bcdfghjklmnpqrstvwxz2456789]"
_POD = re.compile(rf"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?-{_K8S}{{6,10}}-{_K8S}{{5}}")
# Generated ids of job systems, not credentials: Ray job submissions, Slurm array tasks.
_JOB_ID = re.compile(r"raysubmit_[A-Za-z0-9]{8,32}")
# A store's log entry name: its UTC time and the BLAKE3 of its bytes (objects/log/<name>).
_LOG_ENTRY = re.compile(r"\d{8}T\d{12}Z-[0-9a-f]{64}")
# `nvmlDeviceGetBAR1MemoryInfo`: a code identifier, words in camel case. A random token's
# letter runs average under two characters; most of an identifier's letters are in words
# of three and more.
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_WORD = 3
_IN_WORDS = 0.75
_ID_TAIL = 13
_VOWELS = 0.28
_ASCENDING_HINT = re.compile(r"abc|ABC|012|123|234|345|456|567|678|789")
_MIN_HEX = 32
_MIN_TOKEN = 20
_HEX_BITS = 3.0
_MAX_BITS = 4.0


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits a character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _ascending_run(value: str, length: int = 6) -> bool:
    """``abcdef``, ``012345``: an alphabet written out, not a random draw."""
    run = 1
    for a, b in itertools.pairwise(value):
        run = run + 1 if ord(b) == ord(a) + 1 else 1
        if run >= length:
            return True
    return False


def _harmless(value: str) -> bool:
    if value.startswith(("/", "./", "../", "~", "\\\\")) or value[1:3] == ":\\":
        return True
    if value.isdigit() or value.startswith(_IMAGE_MAGIC):
        return True  # a number; an image
    if _ASCENDING_HINT.search(value) and _ascending_run(value):
        return True
    if _UUID.fullmatch(value) or _VERSION.fullmatch(value) or _DOTTED_NAME.fullmatch(value):
        return True
    if _POD.fullmatch(value) or _JOB_ID.fullmatch(value) or _LOG_ENTRY.fullmatch(value):
        return True
    if _identifier(value):
        return True
    parts = _SEPARATOR.split(value.rstrip("="))
    if len(parts) < 3:
        return False
    odd = [p for p in parts if not (len(p) <= 5 or (len(p) <= 16 and _WORDISH.fullmatch(p)))]
    # one short random part is a generated id inside a name (W&B's
    # `offline-run-20261201_172943-mbi77gu4`, a short digest `tiny_mlp_64a0c4ae983f_final`);
    # a credential has more randomness than that
    return not odd or (
        len(odd) == 1 and (len(odd[0]) <= 8 or (len(odd[0]) <= 16 and bool(_HEX.fullmatch(odd[0]))))
    )


def _identifier(value: str) -> bool:
    head, sep, tail = value.partition("_")
    if sep:
        # `ShellExperienceHost_cw5n1h2txyewy`: a name and one generated id (a Windows
        # package's publisher id is 13 characters)
        return "_" not in tail and len(tail) <= _ID_TAIL and _identifier(head)
    if not value.isalnum():
        return False
    parts = _CAMEL_PART.findall(value)
    if sum(map(len, parts)) != len(value):
        return False
    words = [p for p in parts if not p.isdigit()]
    numbers = len(parts) - len(words)
    acronyms = [w for w in words if w.isupper()]
    if len(words) < 2 or numbers > 2 or len(acronyms) > 2 or any(len(w) > 5 for w in acronyms):
        return False
    letters = sum(map(len, words))
    in_words = sum(len(w) for w in words if len(w) >= _WORD)
    vowels = sum(c in "aeiouAEIOU" for c in value)
    # words of people have vowels: 40 % of English letters, 19 % of random ones
    return in_words >= _IN_WORDS * letters and vowels >= _VOWELS * letters


def looks_random(value: str) -> bool:
    """Whether ``value`` is a long random-looking token with no known harmless shape."""
    if len(value) < _MIN_TOKEN or not _TOKEN.fullmatch(value):
        return False
    # Cheap first: a random word has a digit, or is hex (32 letters a-f in a row at least);
    # most long words of code (`register_forward_pre_hook`) have neither.
    if _DIGIT.search(value) is None and _HEX_LETTERS.search(value) is None:
        return False
    if _harmless(value):
        return False
    if "/" in value:
        # `org/model-name-v2`: a path of names; base64 keeps a random part between slashes.
        # Hex-only parts are digests, as in random_parts (`objects/ab/<62 hex>`).
        return any(looks_random(p) for p in value.split("/") if not _HEX.fullmatch(p))
    core = value.rstrip("=")
    if _HEX.fullmatch(core):
        return len(core) >= _MIN_HEX and len(core) not in (40, 64) and entropy(core) >= _HEX_BITS
    upper = any(c.isupper() for c in core)
    lower = any(c.islower() for c in core)
    digits = any(c.isdigit() for c in core)
    if not digits or not (upper or lower):
        return False
    return entropy(core) >= min(_MAX_BITS, 0.85 * math.log2(len(core)))


_PATH_START = ("/", "./", "../", "~/")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")


def random_parts(word: str) -> list[tuple[int, int]]:
    """The spans of ``word`` to hide: the whole word when it looks random, or, in a path,
    each component that does (``/runs/<random>/ckpt.pt``), its extension kept.

    Components of hex digits only are kept: caches and content-addressed stores name
    directories and files by digest (``objects/ab/<62 hex>``, ``<32-hex cache key>/``).
    """
    if not word.startswith(_PATH_START):
        return [(0, len(word))] if looks_random(word) else []
    spans = []
    at = 0
    for part in word.split("/"):
        stem = _EXTENSION.sub("", part)
        if len(stem) >= _MIN_TOKEN and not _HEX.fullmatch(stem) and looks_random(stem):
            spans.append((at, at + len(stem)))
        at += len(part) + 1
    return spans
