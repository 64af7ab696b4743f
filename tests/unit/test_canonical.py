"""Canonical JSON against the published RFC 8785 vectors, byte for byte, and our extensions."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from expdna.manifest.canonical import (
    MAX_SAFE_INTEGER,
    _fast,
    _Slow,
    canonical_bytes,
    normalise,
    reference_bytes,
)

CASES = ["arrays", "french", "structures", "unicode", "values", "weird"]


@pytest.mark.parametrize("case", CASES)
def test_rfc8785_vectors_byte_for_byte(testdata: Path, case: str) -> None:
    jcs = testdata / "jcs"
    source = json.loads((jcs / "input" / f"{case}.json").read_bytes())
    expected = (jcs / "output" / f"{case}.json").read_bytes()
    expected_hex = bytes.fromhex((jcs / "outhex" / f"{case}.txt").read_text())
    assert expected == expected_hex
    assert canonical_bytes(source) == expected


def test_vectors_are_not_what_sorted_json_dumps_gives(testdata: Path) -> None:
    # Guards the test above: if plain json.dumps matched every case, it would prove nothing.
    jcs = testdata / "jcs"
    mismatches = 0
    for case in CASES:
        source = json.loads((jcs / "input" / f"{case}.json").read_bytes())
        naive = json.dumps(source, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        mismatches += naive.encode() != (jcs / "output" / f"{case}.json").read_bytes()
    assert mismatches >= 2


@pytest.mark.parametrize(
    ("value", "marker"),
    [
        (float("inf"), "<non-finite:inf>"),
        (float("-inf"), "<non-finite:-inf>"),
        (float("nan"), "<non-finite:nan>"),
    ],
)
def test_non_finite_floats_become_markers(value: float, marker: str) -> None:
    assert canonical_bytes({"loss": value}) == b'{"loss":"%s"}' % marker.encode()


def test_integers_beyond_2_53_are_stringified_never_rounded() -> None:
    big = 2**63 - 1
    assert canonical_bytes({"seed": big}) == b'{"seed":"9223372036854775807"}'
    assert canonical_bytes(MAX_SAFE_INTEGER) == b"9007199254740991"
    assert canonical_bytes(-(MAX_SAFE_INTEGER + 1)) == b'"-9007199254740992"'


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (9007199254740992.0, b"9007199254740992"),
        (-9007199254740994.0, b"-9007199254740994"),
        (9999999999999998.0, b"9999999999999998"),
        (1e16, b"10000000000000000"),
    ],
)
def test_whole_floats_beyond_2_53_are_written_as_ecmascript_does(
    value: float, written: bytes
) -> None:
    # The C encoder's fast path wrote "9007199254740992.0"; spec/js found it.
    assert canonical_bytes(value) == written == reference_bytes(value)


def test_key_order_and_tuples_do_not_matter() -> None:
    a = {"b": [1, 2.0, (3, "x")], "a": {"z": True, "y": None}}
    b = {"a": {"y": None, "z": True}, "b": [1, 2, [3, "x"]]}
    expected = b'{"a":{"y":null,"z":true},"b":[1,2,[3,"x"]]}'
    assert canonical_bytes(a) == canonical_bytes(b) == expected


def test_bool_is_not_an_integer() -> None:
    assert normalise(True) is True
    assert canonical_bytes([True, 1]) == b"[true,1]"


def test_unsupported_types_are_refused() -> None:
    with pytest.raises(TypeError, match="set"):
        canonical_bytes({"x": {1, 2}})


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**53 - 1, -(2**53) + 1, 2**53, 10**30, rng.randrange(10**9)])
    if kind == 2:
        mantissa = rng.uniform(-10, 10)
        return rng.choice(
            [
                mantissa * 10 ** rng.randrange(-30, 30),
                0.5,
                2.0,
                -0.0,
                1e21,
                1e-7,
                3e-4,
                0.1 + 0.2,
                float("inf"),
                float("nan"),
                123456789.125,
            ]
        )
    if kind == 3:
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(12)))
    if kind == 4:
        return rng.choice(["", "plain", "tab\tnew\nline", "\x00\x1f\x7f", "é€😀", "\u2028"])
    if kind in (5, 6):
        return {
            "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(1, 6))): _random_value(
                rng, depth + 1
            )
            for _ in range(rng.randrange(5))
        }
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]


_ALPHABET = 'abcXYZ019_-. "\\/\n\u00e9\u20ac\U0001f600\ue000\uffff\x01'


def test_fast_path_equals_the_reference_encoder_on_random_documents() -> None:
    rng = random.Random(8785)
    fast_hits = 0
    for _ in range(3000):
        value = _random_value(rng)
        assert canonical_bytes(value) == reference_bytes(value), value
        try:
            _fast(value, False)
            fast_hits += 1
        except _Slow:
            pass
    assert fast_hits > 500  # the fast path is really exercised, not always bypassed


@pytest.mark.parametrize("case", CASES)
def test_vectors_through_both_paths(testdata: Path, case: str) -> None:
    source = json.loads((testdata / "jcs" / "input" / f"{case}.json").read_bytes())
    assert canonical_bytes(source) == reference_bytes(source)
