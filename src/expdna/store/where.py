"""What a ``--where PATH=VALUE`` matches: numbers by value, and hints for unknown paths.

The index holds every leaf as text, numbers as JSON writes them (``0.01``, ``16``,
``16.0``). A VALUE that reads as a finite number also matches the texts of every number
equal to it, so ``lr=1e-2`` finds ``0.01`` and ``batch=16`` finds ``16.0``; the text as
typed always matches too. This stays an indexed equality lookup (a handful of texts), not
a cast over every fact.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
#: How many near paths a hint names.
HINTS = 3


def match_texts(value: str) -> list[str]:
    """The texts a fact may hold to match ``value``: itself, and when it reads as a finite
    number, that number as JSON writes an int and a float."""
    texts = [value]
    text = value.strip()
    if _NUMBER.fullmatch(text) is None:
        return texts
    number = float(text)
    if not math.isfinite(number):
        return texts
    forms = [repr(number)]
    if number.is_integer():
        forms.append(str(int(number)))
        # an int the text wrote exactly, beyond float precision
        if re.fullmatch(r"[+-]?\d+", text):
            forms.append(str(int(text)))
    if number == 0:
        forms += ["0", "0.0", "-0.0"]
    return list(dict.fromkeys(texts + forms))


def near_paths(path: str, known: Iterable[str]) -> list[str]:
    """The known paths closest to ``path`` (difflib's ratio), best first."""
    return difflib.get_close_matches(path, list(known), n=HINTS, cutoff=0.6)
