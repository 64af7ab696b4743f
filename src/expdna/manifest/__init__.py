"""The manifest document: model, versions, canonical JSON, DNA, redaction, file I/O, and
its rules: run ids (``runid``), lineage (``lineage``), times (``times``)."""

from expdna.manifest.dna import compute_dna, projections, short
from expdna.manifest.io import load_manifest, manifest_from_dict, write_manifest
from expdna.manifest.model import DNA_SECTIONS, SCHEMA_VERSION, Manifest

__all__ = [
    "DNA_SECTIONS",
    "SCHEMA_VERSION",
    "Manifest",
    "compute_dna",
    "load_manifest",
    "manifest_from_dict",
    "projections",
    "short",
    "write_manifest",
]
