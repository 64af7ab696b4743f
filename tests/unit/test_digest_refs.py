"""``blake3:`` references: built, split and validated in one module."""

from __future__ import annotations

import pytest

from expdna.digest.refs import ALGORITHM, is_tagged, parse_digest, ref, ref_hex
from expdna.errors import InvalidDigestError, InvalidInputError
from expdna.store import errors as store_errors

HEX = "0123456789abcdef" * 4


def test_a_reference_round_trips() -> None:
    assert ALGORITHM == "blake3"
    assert ref(HEX) == f"blake3:{HEX}"
    assert ref_hex(ref(HEX)) == HEX


@pytest.mark.parametrize(
    "value",
    [
        HEX,  # bare hex is not a stored reference
        f"blake3:{HEX.upper()}",
        f"blake3:{HEX[:-1]}",
        f"blake3:{HEX}0",
        f"blake3:{HEX}\n",
        f"sha256:{HEX}",
        f"BLAKE3:{HEX}",
        "blake3:",
        "",
    ],
)
def test_anything_else_has_no_hex(value: str) -> None:
    assert ref_hex(value) is None


def test_what_claims_to_be_a_reference() -> None:
    assert is_tagged(f"blake3:{HEX}") and is_tagged("blake3:nonsense")
    assert not is_tagged("model.pt") and not is_tagged(HEX)


def test_parse_digest_takes_either_form() -> None:
    assert parse_digest(HEX) == HEX
    assert parse_digest(f"blake3:{HEX}") == HEX


@pytest.mark.parametrize(
    "value", [HEX.upper(), HEX[:-1], f"../{HEX[3:]}", f"sha256:{HEX}", "blake3:", ""]
)
def test_parse_digest_refuses_the_rest_with_exit_2(value: str) -> None:
    with pytest.raises(InvalidDigestError) as caught:
        parse_digest(value)
    assert caught.value.exit_code == 2 and isinstance(caught.value, InvalidInputError)
    assert str(caught.value) == (
        f"not a digest: {value!r} (expected 64 lowercase hex characters, "
        "optionally prefixed 'blake3:')"
    )


def test_the_store_error_is_the_same_class() -> None:
    """Callers that import it from the store keep catching what the digest layer raises."""
    assert store_errors.InvalidDigestError is InvalidDigestError
    with pytest.raises(store_errors.InvalidDigestError):
        parse_digest("nope")


def test_a_long_value_is_shown_shortened() -> None:
    with pytest.raises(InvalidDigestError, match=r"'x{77}\.\.\.'"):
        parse_digest("x" * 200)
