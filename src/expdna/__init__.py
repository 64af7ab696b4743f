"""expdna: record what a training run was, as a small secret-free manifest and its DNA.

The public API. Importing it never imports torch, ray, pyarrow or sqlalchemy.
"""

from typing import TYPE_CHECKING

from expdna.api import collect, generate
from expdna.errors import ExpdnaError
from expdna.integrations import checkpoint_name, start, track
from expdna.integrations.hook import IncompleteManifestWarning
from expdna.manifest import Manifest, compute_dna, load_manifest, write_manifest

__version__ = "0.1.0"


def dna_of(manifest: Manifest) -> str:
    """The 64-hex DNA of ``manifest``, recomputed from its content."""
    return compute_dna(manifest).value


if TYPE_CHECKING:
    from expdna.store import Store


def __getattr__(name: str) -> "type[Store]":
    # The store loads SQLAlchemy: only on first use of expdna.Store, never at import.
    if name == "Store":
        from expdna.store import Store

        return Store
    raise AttributeError(f"module 'expdna' has no attribute {name!r}")


__all__ = [
    "ExpdnaError",
    "IncompleteManifestWarning",
    "Manifest",
    "__version__",
    "checkpoint_name",
    "collect",
    "dna_of",
    "generate",
    "load_manifest",
    "start",
    "track",
    "write_manifest",
]
