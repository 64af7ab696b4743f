"""``diff``'s "(in dna)" judgement on a cut of one section gives the answer of the whole
document's DNA, for every leaf of every DNA test vector changed in several ways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expdna.compare.diff import _get, _leaves, _named, _with_leaf
from expdna.compare.dna_judge import DnaJudge
from expdna.compare.keyed import keyed, unkeyed
from expdna.manifest.dna import compute_dna, section_projection
from expdna.manifest.model import DNA_SECTIONS

VECTORS = sorted((Path(__file__).parents[1] / "vectors" / "dna").glob("*.json"))

#: Leaves added to each document: arguments that move an output root, are one, or lie
#: under one; a masked value; a debug variable; a package; a node resource.
ADDED: tuple[tuple[tuple[Any, ...], Any], ...] = (
    (("config", "resolved_args", "output_dir"), "/data"),
    (("config", "resolved_args", "output_dir"), "/ckpt/run7/d"),
    (("config", "resolved_args", "save_dir"), "/ckpt"),
    (("config", "resolved_args", "data_file"), "/ckpt/run7/x"),
    (("config", "resolved_args", "api_token"), "abcd***"),
    (("config", "resolved_args", "lr"), 0.5),
    (("config", "selected_env", "NCCL_DEBUG"), "WARN"),
    (("config", "selected_env", "NCCL_ALGO"), "Ring"),
    (("config", "dna_ignore"), ["config.resolved_args.lr"]),
    (("config", "config_file_args"), ["config"]),
    (("command", "argv"), ["python", "train.py", "--lr", "0.5"]),
    (("environment", "kernel"), "6.1.0-99-amd64"),
    (("unknown", "hardware"), "the collector timed out"),
    (("training", "seeds", "seed"), 7),
)


def _changes(value: Any) -> list[Any]:
    """Values a leaf may change to: another of its kind, the same number as another type,
    a masked or per-run-looking string, and nothing (removed)."""
    if isinstance(value, bool):
        return [not value, None]
    if isinstance(value, int):
        return [value + 1, float(value), None]
    if isinstance(value, float):
        return [value * 2 + 1, int(value) if value == int(value) else value, None]
    if isinstance(value, str):
        return [value + "x", value[:4] + "***", "/ckpt/run7/moved", None]
    return [None, "replaced"]


def _reference(doc_a: Any, dna_a: str, keys: tuple[Any, ...], new: Any) -> bool:
    """The judgement on the whole document, as diff made it before the judge."""
    edited = compute_dna(unkeyed(_with_leaf(doc_a, keys, new))).value
    if edited == dna_a:
        return False
    if _get(doc_a, keys) is not None:
        return True
    return edited != compute_dna(unkeyed(_with_leaf(doc_a, keys, None))).value


@pytest.mark.parametrize("vector", VECTORS, ids=[v.stem for v in VECTORS])
def test_the_judge_agrees_with_the_whole_documents_dna(vector: Path) -> None:
    plain = json.loads(vector.read_text())["manifest"]
    doc_a = _named(keyed(plain))
    dna_a = compute_dna(plain).value
    judge = DnaJudge(doc_a, dna_a, set(DNA_SECTIONS), _with_leaf)
    cases = [(keys, new) for keys, old in _leaves(doc_a).items() for new in _changes(old)]
    cases += list(ADDED)
    judged = 0
    for keys, new in cases:
        expected = _reference(doc_a, dna_a, keys, new)
        assert judge.in_dna(keys, new) == expected, (keys, new)
        judged += expected
    assert cases and (judged or not _leaves(doc_a))


def test_section_projection_is_what_the_section_digest_hashes() -> None:
    from expdna.manifest.dna import projection_digest

    for vector in VECTORS:
        doc = json.loads(vector.read_text())["manifest"]
        sections = compute_dna(doc).sections
        for name in DNA_SECTIONS:
            assert projection_digest(section_projection(doc, name)) == sections[name], name
    with pytest.raises(ValueError, match="not a DNA section"):
        section_projection({}, "command")
