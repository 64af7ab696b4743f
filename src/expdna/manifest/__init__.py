"""The manifest document: model, versions, canonical JSON, DNA, redaction, file I/O, and
its rules: run ids (``runid``), lineage (``lineage``), times (``times``).

Its names load on first use (PEP 562), as in :mod:`expdna`: importing a light submodule
(``display``, ``runid``, ``times``) must not load the pydantic model.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from expdna.manifest.display import short
    from expdna.manifest.dna import compute_dna, projections
    from expdna.manifest.io import load_manifest, manifest_from_dict, write_manifest
    from expdna.manifest.model import DNA_SECTIONS, SCHEMA_VERSION, Manifest

#: Public name -> the module it comes from.
_LAZY = {
    "DNA_SECTIONS": "expdna.manifest.model",
    "SCHEMA_VERSION": "expdna.manifest.model",
    "Manifest": "expdna.manifest.model",
    "compute_dna": "expdna.manifest.dna",
    "load_manifest": "expdna.manifest.io",
    "manifest_from_dict": "expdna.manifest.io",
    "projections": "expdna.manifest.dna",
    "short": "expdna.manifest.display",
    "write_manifest": "expdna.manifest.io",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'expdna.manifest' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
