"""The DNA's globs follow their written definition, which is Python 3.11's fnmatch.

expdna.manifest.globs implements the guide's text ("Glob patterns") without fnmatch, so the
DNA cannot move with a Python release; here the two are compared on random patterns built
from every character the definition treats specially.
"""

from __future__ import annotations

import fnmatch
import random
import sys

import pytest

from expdna.manifest.globs import compile_globs, matches

ALPHABET = "ab-z!]^[*?\\.\n&~|é😀"


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("config.*", "config.resolved_args.seed", True),  # "*" crosses dots
        ("hardware", "hardware.gpus", False),  # a whole name, not a prefix
        ("a?c", "a😀c", True),  # "?" is one code point, even outside the BMP
        ("[!a]x", "bx", True),
        ("[!a]x", "ax", False),
        ("[]]", "]", True),  # "]" first in a set is a member
        ("[!]]", "a", True),
        ("[a-c]", "b", True),
        ("[c-a]", "b", False),  # a reversed range is empty
        ("[c-ax]", "x", True),  # ...and the set keeps its other members
        ("[!c-a]", "q", True),  # the complement of nothing is anything
        ("[a-]", "-", True),
        ("[--a]", "0", True),  # "-" starts a range: "-".."a"
        ("[a", "[a", True),  # no "]": the "[" is itself
        ("a\\*", "a\\bc", True),  # a backslash is itself
        ("A*", "a", False),  # case-sensitive
        ("x*", "x\ny", True),  # "*" crosses newlines
    ],
)
def test_documented_cases(pattern: str, name: str, expected: bool) -> None:
    assert matches(name, compile_globs([pattern])) is expected


def test_empty_pattern_list_matches_nothing() -> None:
    assert not matches("", compile_globs([]))


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the definition is 3.11's fnmatch")
def test_random_patterns_agree_with_fnmatch() -> None:
    rng = random.Random(8785)
    for _ in range(20000):
        pattern = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 7)))
        name = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 5)))
        expected = fnmatch.fnmatchcase(name, pattern)
        assert matches(name, compile_globs([pattern])) is expected, (pattern, name)
