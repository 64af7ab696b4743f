"""Recording with the per-section memo gives exactly what the whole-document path gives:
the same bytes, digests, DNA check, facts and metrics (or refuses the same manifests)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict
from expdna.store.errors import DnaMismatchError
from expdna.store.record.prepare import Prepared, prepare_doc
from expdna.store.record.sections import SectionMemo, assemble, split
from expdna.store.record.storeform import dumps
from tests.factories import synthetic, synthetic_doc

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "dna"


def _same(a: Prepared, b: Prepared) -> None:
    assert a.manifest_digest == b.manifest_digest
    assert a.blobs == b.blobs
    assert a.row == b.row
    assert a.facts == b.facts
    assert set(a.fact_sets) == set(b.fact_sets)
    assert a.own_facts == b.own_facts
    assert a.metrics == b.metrics
    assert (a.dna, a.run_id, a.generated_at, a.lineage) == (
        b.dna,
        b.run_id,
        b.generated_at,
        b.lineage,
    )


def _docs() -> list[dict[str, Any]]:
    docs = [synthetic(i, setup=i // 3, vbios=f"v{i % 2}").to_dict() for i in range(12)]
    no_dna = synthetic(20).to_dict()
    no_dna["dna"] = None
    docs.append(no_dna)
    absent = synthetic(21).to_dict()
    del absent["dna"]
    docs.append(absent)
    for path in sorted(VECTORS.glob("*.json")):  # the DNA vectors: every projection rule
        manifest = manifest_from_dict(json.loads(path.read_text())["manifest"])
        docs.append(manifest.to_dict())
    special = synthetic_doc(30, patch=None)
    special["metrics"] = {"loss": math.nan, "big": 2**70}
    special["config"]["resolved_args"]["huge"] = 2**64
    docs.append(manifest_from_dict(special).to_dict())  # non-finite: whole-document path
    unicode = synthetic_doc(31)
    unicode["config"]["resolved_args"]["note"] = "Ünïcödé ✓ 𝄞"
    docs.append(manifest_from_dict(unicode).to_dict())
    return docs


@pytest.mark.parametrize("index", range(len(_docs())))
def test_memo_path_equals_the_whole_document_path(index: int) -> None:
    doc = _docs()[index]
    memo = SectionMemo()
    whole = prepare_doc(doc)
    _same(prepare_doc(doc, memo=memo), whole)
    _same(prepare_doc(doc, memo=memo), whole)  # the second time from the memo
    if doc.get("dna") is not None:
        assert whole.dna == compute_dna(doc).value


def test_a_memo_shared_across_many_runs_stays_exact() -> None:
    memo = SectionMemo()
    for i in range(40):
        doc = synthetic(i, setup=i // 4, driver=f"d{i % 3}").to_dict()
        _same(prepare_doc(doc, memo=memo), prepare_doc(doc))


def test_repeated_sections_share_one_fact_set() -> None:
    memo = SectionMemo()
    a = prepare_doc(synthetic(1, setup=1).to_dict(), memo=memo)
    b = prepare_doc(synthetic(2, setup=1).to_dict(), memo=memo)
    shared = {id(g) for g in a.fact_sets} & {id(g) for g in b.fact_sets}
    assert len(shared) >= 5  # code, training, environment, hardware, runtime, data...
    assert a.facts != b.facts  # config (output_dir) and metrics differ


def test_assembled_bytes_are_the_store_form_dump() -> None:
    for doc in _docs():
        parts = split(doc)
        if parts is not None:
            assert assemble(doc, parts) == dumps(doc)


@pytest.mark.parametrize("edit", ["section", "value", "both"])
def test_the_memo_path_refuses_a_mismatched_dna(edit: str) -> None:
    memo = SectionMemo()
    good = synthetic(5).to_dict()
    prepare_doc(good, memo=memo)  # its sections are in the memo now
    doc = json.loads(json.dumps(good))
    if edit in ("section", "both"):
        doc["dna"]["sections"]["hardware"] = "0" * 64
    if edit in ("value", "both"):
        doc["dna"]["value"] = "f" * 64
    with pytest.raises(DnaMismatchError, match="corrupted or edited"):
        prepare_doc(doc, memo=memo)
    edited = json.loads(json.dumps(good))
    edited["environment"]["python_version"] = "3.12.4"  # content edited, DNA kept
    with pytest.raises(DnaMismatchError):
        prepare_doc(edited, memo=memo)


@pytest.mark.parametrize(
    ("output_dir", "extra"),
    [
        ("/ckpt/a", {"init_path": "/ckpt/a/best"}),  # under the run's output root: left out
        ("/ckpt/b", {"init_path": "/ckpt/a/best"}),  # the same blanked form, kept
        ("/ckpt/c", {"argv": ["--load_path", "/ckpt/c/last"]}),  # in the command, left out
        ("/ckpt/d", {"argv": ["--load_path", "/ckpt/c/last"]}),  # kept
        ("/ckpt/e", {"argv": ["--load_path=/ckpt/e/x"]}),
        ('/ck"pt/f', {"init_path": '/ck"pt/f/best'}),  # a root JSON escapes
        ("/ckpt/g", {}),
        ("/ckpt/h", {}),
    ],
)
def test_a_memo_of_blanked_configs_keeps_what_per_run_values_leave_out(
    output_dir: str, extra: dict[str, Any]
) -> None:
    """Runs of one setup whose configs differ in their output directory share the config's
    projection, except where that directory decides what else is left out."""
    memo = SectionMemo()
    setups = ("/ckpt/a", "/ckpt/b", "/ckpt/c", "/ckpt/d", "/ckpt/e", '/ck"pt/f', "/ckpt/g")
    for i, earlier in enumerate(setups):  # the memo holds the other runs' sections first
        prepare_doc(_run_with(i, earlier, extra), memo=memo)
    doc = _run_with(99, output_dir, extra)
    _same(prepare_doc(doc, memo=memo), prepare_doc(doc))


def _run_with(i: int, output_dir: str, extra: dict[str, Any]) -> dict[str, Any]:
    doc = synthetic_doc(i, setup=1)
    args = doc["config"]["resolved_args"]
    args["output_dir"] = output_dir
    if "init_path" in extra:
        args["init_path"] = extra["init_path"]
    doc["command"]["argv"] += extra.get("argv", [])
    return manifest_from_dict(doc).to_dict()
