"""The DNA definition, pinned: checked-in vectors recomputed two ways.

Each vector holds a manifest, its identity projections, the section digests, the DNA, the
DNA version it is computed in and the family digest. The chain projection -> digests -> DNA
is recomputed here with rfc8785 and blake3 directly (not through expdna), and the projection
with expdna: drift in either fails. spec/js reads the same files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import rfc8785
from blake3 import blake3

from expdna.manifest.canonical import normalise
from expdna.manifest.dna import DNA_VERSION, DNA_VERSIONS, compute_dna, projections
from expdna.manifest.family import family_of
from expdna.manifest.io import manifest_from_dict

#: The DNA versions the guide's appendix (docs/tools/reference_dna.py) implements; spec/js
#: implements every version.
REFERENCE_VERSIONS = (2, 3)

VECTORS = sorted((Path(__file__).parents[1] / "vectors" / "dna").glob("*.json"))


def test_vectors_exist() -> None:
    assert len(VECTORS) >= 20
    versions = {json.loads(p.read_text(encoding="utf-8"))["dna_version"] for p in VECTORS}
    assert versions == set(DNA_VERSIONS)  # every version expdna computes is pinned


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_digests_follow_from_projections_independently(path: Path) -> None:
    vector = json.loads(path.read_text(encoding="utf-8"))
    sections = {
        name: blake3(rfc8785.dumps(projected)).hexdigest()
        for name, projected in vector["projections"].items()
    }
    assert sections == vector["sections"]
    top = rfc8785.dumps({"version": vector["dna_version"], "sections": sections})
    assert blake3(top).hexdigest() == vector["dna"]


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_expdna_reproduces_vector(path: Path) -> None:
    vector = json.loads(path.read_text(encoding="utf-8"))
    manifest = manifest_from_dict(vector["manifest"])
    version = vector["dna_version"]
    assert normalise(projections(manifest, version=version)) == vector["projections"]
    dna = compute_dna(manifest, version=version)
    assert dna.version == version
    assert dna.sections == vector["sections"]
    assert dna.value == vector["dna"]
    assert family_of(manifest, version=version) == vector["family"]
    if version == DNA_VERSION:
        assert compute_dna(manifest) == dna  # the default is the current version


def test_the_family_digest_is_the_dna_without_seeds() -> None:
    typical = json.loads((VECTORS[0].parent / "typical.json").read_text(encoding="utf-8"))
    assert typical["family"] != typical["dna"]  # it has seeds
    minimal = json.loads((VECTORS[0].parent / "minimal.json").read_text(encoding="utf-8"))
    assert minimal["family"] == minimal["dna"]  # nothing to leave out


def test_typical_vector_leaves_per_run_values_out() -> None:
    vector = json.loads((VECTORS[0].parent / "typical.json").read_text(encoding="utf-8"))
    text = json.dumps(vector["projections"])
    for per_run in (
        "/ckpt/run7",
        "grpo-7",
        "GPU-5c1b2b7e",
        "00000000:19:00.0",
        "4242",
        "10.0.0.1",
        "aaaa",
        "diff --git",
        "0,1",
        "2015.5",
        "/opt/venv",
    ):
        assert per_run not in text, per_run
    assert "root" not in vector["projections"]["data"]["datasets"][0]
    for kept in (
        "96.00.89.00.01",
        "550.54.15",
        "2.23.4",
        "1234",
        "NCCL_DEBUG",
        "SLURM_NNODES",
        "6.1",
        "data_path",
    ):
        assert kept in text, kept


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_the_documented_reference_implementation_agrees(path: Path) -> None:
    # docs/tools/reference_dna.py is the guide's standalone reimplementation (rfc8785 and
    # blake3 only): if the rules in the guide drift from the code, this fails.
    import runpy

    reference = runpy.run_path(
        str(Path(__file__).parents[2] / "docs" / "tools" / "reference_dna.py")
    )
    vector = json.loads(path.read_text(encoding="utf-8"))
    version = vector["dna_version"]
    if version not in REFERENCE_VERSIONS:
        return  # the appendix implements versions 2 and 3; spec/js does every version
    value, sections = reference["dna"](vector["manifest"], version)
    assert sections == vector["sections"]
    assert value == vector["dna"]
    assert reference["family"](vector["manifest"], version) == vector["family"]
