"""expdna: record what a training run was, as a small secret-free manifest and its DNA.

The public API. Importing it never imports torch, ray, pyarrow or sqlalchemy.

Module map, in layers from the bottom up; a module imports only from its own layer or the
ones below it:

- ``errors`` (one error tree with exit codes), ``filesystems`` (which filesystem holds a
  path: network and overlay mounts).
- ``digest/``: ``hashing`` (BLAKE3 digests that carry their algorithm), ``cache`` (the
  stat-keyed digest cache), ``refs`` (``blake3:`` references users pass in).
- ``manifest/``: the document and every rule about it: ``model`` (pydantic models),
  ``schema`` (its JSON Schema), ``versioning`` (schema versions), ``canonical`` (canonical
  JSON), ``dna`` (the DNA), ``redact`` and ``redact_rules`` (redaction and its shape rules),
  ``runid`` (run ids and their syntax), ``lineage`` (relations and edge checks), ``times``
  (timestamp parsing), ``build`` (sections in, a checked manifest out), ``io`` (files).
- ``collectors/``: one module per source (``command``, ``config``, ``container``, ``data``,
  ``tabular``, ``distributions``, ``environment``, ``framework``, ``git``, ``gpu``,
  ``nvidia_smi``, ``nvml``, ``runtime``, ``system``, ``training``), what each is handed
  (``context``), subprocesses (``process``) and the parallel ``runner``.
- ``store/``: the content-addressed object directory and the SQL index over every run
  (``objects/``, ``index/``, ``record/``, the queries, the ``Store`` facade); its own
  docstring maps it. ``migrations/`` holds the index's alembic revisions.
- ``compare/``: ``check``, ``diff``, ``rerun``, ``data`` (datasets against the disk),
  ``versions`` (version strings as checks read them).
- ``integrations/``: the training hook (``hook``, ``topology``, ``ray_nodes``), where its
  manifest goes (``recording``), parsed arguments (``args``), checkpoint names
  (``checkpoints``).
- ``api`` (collect and generate, the calls behind the CLI), and ``cli/``: one module per
  command group, with ``refs`` (a file or a run named on the command line), ``store``
  (opening the store) and ``output`` (printing).
"""

from typing import TYPE_CHECKING

from expdna.api import collect, generate
from expdna.errors import ExpdnaError
from expdna.integrations import checkpoint_name, start, track
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
