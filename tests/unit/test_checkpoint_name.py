"""checkpoint_name: <model>_<12 hex of the DNA>[_<tag>][<ext>], inputs validated."""

from __future__ import annotations

from typing import Any

import pytest

import expdna
from expdna.errors import InvalidInputError
from expdna.integrations import RunHandle, checkpoint_name

DNA = "a7f3b2c9d1e4" + "0" * 52


class _HasDna:
    dna = DNA


def test_the_documented_example() -> None:
    name = expdna.checkpoint_name("vit_base", DNA, "best", ".pth")
    assert name == "vit_base_a7f3b2c9d1e4_best.pth"


def test_tag_and_extension_are_optional_and_the_dot_is_added() -> None:
    assert checkpoint_name("vit", DNA) == "vit_a7f3b2c9d1e4"
    assert checkpoint_name("vit", DNA, ext="pt") == "vit_a7f3b2c9d1e4.pt"
    assert checkpoint_name("vit", DNA, "step100", "tar.gz") == "vit_a7f3b2c9d1e4_step100.tar.gz"


def test_a_handle_or_anything_with_a_dna_attribute_is_accepted() -> None:
    assert checkpoint_name("m", _HasDna(), "best", ".pt") == "m_a7f3b2c9d1e4_best.pt"


def test_upper_case_hex_is_read_as_the_same_dna() -> None:
    assert checkpoint_name("m", DNA.upper()) == "m_a7f3b2c9d1e4"


@pytest.mark.parametrize(
    ("model", "dna", "tag", "ext", "message"),
    [
        ("", DNA, "", "", "model is empty"),
        ("runs/vit", DNA, "", "", "path separator"),
        ("vit", DNA, "..\\best", "", "path separator"),
        ("vit", DNA, "best", "/.pth", "path separator"),
        ("vit", DNA, "be\nst", "", "control character"),
        ("..", DNA, "", "", "is not a name"),
        ("vit", DNA, "", ".", "ext '.' is not a name"),
        ("vit", DNA[:12], "", "", "is not a DNA"),
        ("vit", "g" * 64, "", "", "is not a DNA"),
        ("vit", 42, "", "", "is not a DNA"),
        (7, DNA, "", "", "model must be a string"),
    ],
)
def test_bad_parts_are_refused_with_one_clear_line(
    model: Any, dna: Any, tag: Any, ext: Any, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message) as caught:
        checkpoint_name(model, dna, tag, ext)
    assert "\n" not in str(caught.value).replace("\\n", "")
    assert caught.value.exit_code == 2


def test_a_run_without_a_dna_is_refused_by_name() -> None:
    with pytest.raises(InvalidInputError, match="has no DNA"):
        checkpoint_name("vit", RunHandle(manifest=None))
