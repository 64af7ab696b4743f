"""DNA version 2 is current; a manifest written in version 1 still verifies everywhere.

Version 2 changed only rules that followed Python rather than every language (Unicode
lower-casing, Unicode digits, ``$`` before a final newline), but its top-level object says
``"version": 2``, so every DNA changed: a manifest keeps the DNA it was written with, and
check, diff and record recompute it in that version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expdna.compare.check import rule_dna
from expdna.compare.diff import diff_manifests
from expdna.manifest.dna import DNA_VERSION, compute_dna, verify_dna
from expdna.manifest.family import family_of
from expdna.manifest.io import manifest_from_dict
from expdna.store.errors import DnaMismatchError
from expdna.store.record.prepare import prepare_doc
from expdna.store.record.sections import SectionMemo

VECTORS = Path(__file__).parents[1] / "vectors" / "dna"


def _v1_document() -> dict[str, Any]:
    """The typical vector as expdna 0.1 development builds wrote it: DNA version 1."""
    vector = json.loads((VECTORS / "v1_typical.json").read_text(encoding="utf-8"))
    assert vector["dna_version"] == 1
    dna = {"version": 1, "value": vector["dna"], "sections": vector["sections"]}
    return {**vector["manifest"], "dna": dna}


def test_the_current_version_is_3_and_differs_from_1() -> None:
    manifest = manifest_from_dict(_v1_document())
    assert DNA_VERSION == 3
    assert compute_dna(manifest).version == 3
    assert compute_dna(manifest).value != manifest.dna.value  # type: ignore[union-attr]
    assert verify_dna(manifest).value == manifest.dna.value  # type: ignore[union-attr]


def test_check_verifies_a_version_1_manifest_in_version_1() -> None:
    manifest = manifest_from_dict(_v1_document())
    assert list(rule_dna(manifest, manifest)) == []
    manifest.config.resolved_args["lr"] = 0.5
    (finding,) = rule_dna(manifest, manifest)
    assert finding.status == "FAIL" and "edited" in str(finding.note)


def test_check_fails_a_version_it_does_not_know() -> None:
    doc = _v1_document()
    doc["dna"]["version"] = 99
    (finding,) = rule_dna(manifest_from_dict(doc), manifest_from_dict(doc))
    assert finding.status == "FAIL" and "99" in str(finding.note)


def test_diff_does_not_call_a_version_1_manifest_stale() -> None:
    old = manifest_from_dict(_v1_document())
    report = diff_manifests(old, old)
    assert report.stale() == (False, False)
    assert report.equal and report.dna[0] == compute_dna(old).value  # compared in version 2


@pytest.mark.parametrize("memo", [None, SectionMemo()], ids=["whole", "by-section"])
def test_record_keeps_a_version_1_dna_and_its_family(memo: SectionMemo | None) -> None:
    doc = manifest_from_dict(_v1_document()).to_dict()
    prepared = prepare_doc(doc, memo=memo)
    assert prepared.dna == doc["dna"]["value"]
    assert prepared.row["dna_version"] == 1
    assert prepared.row["family"] == family_of(doc, version=1) != family_of(doc)


def test_record_refuses_an_edited_version_1_manifest() -> None:
    doc = manifest_from_dict(_v1_document()).to_dict()
    doc["config"]["resolved_args"]["lr"] = 0.5
    with pytest.raises(DnaMismatchError, match="edited"):
        prepare_doc(doc)
