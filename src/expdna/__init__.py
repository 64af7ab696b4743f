"""expdna: record what a training run was, as a small secret-free manifest and its DNA.

The public API. Importing it never imports torch, ray, pyarrow or sqlalchemy.
"""

from expdna.api import collect, generate
from expdna.errors import ExpdnaError
from expdna.manifest import Manifest, compute_dna, load_manifest, write_manifest

__version__ = "0.1.0"


def dna_of(manifest: Manifest) -> str:
    """The 64-hex DNA of ``manifest``, recomputed from its content."""
    return compute_dna(manifest).value


__all__ = [
    "ExpdnaError",
    "Manifest",
    "__version__",
    "collect",
    "dna_of",
    "generate",
    "load_manifest",
    "write_manifest",
]
