"""expdna: record what a training run was, as a small secret-free manifest and its DNA.

The public API. Its names load on first use (PEP 562), so ``import expdna`` costs almost
nothing (``expdna --version`` imports no pydantic), and never imports torch, ray, pyarrow
or sqlalchemy.

Module map, in layers from the bottom up; a module imports only from its own layer or the
ones below it:

- ``errors`` (one error tree with exit codes), ``filesystems`` (which filesystem holds a
  path: network and overlay mounts), ``regular`` (opening only regular files, never
  blocking on a FIFO, and refusing to write over anything else).
- ``digest/``: ``hashing`` (BLAKE3 digests that carry their algorithm), ``cache`` (the
  stat-keyed digest cache), ``refs`` (``blake3:`` references users pass in).
- ``manifest/``: the document and every rule about it: ``model`` (pydantic models),
  ``schema`` (its JSON Schema), ``versioning`` (schema versions), ``canonical`` (canonical
  JSON), ``dna`` (the DNA), ``family`` (the DNA without seeds), ``redact`` and
  ``redact_rules`` (redaction and its shape rules),
  ``runid`` (run ids and their syntax), ``lineage`` (relations and edge checks), ``times``
  (timestamp parsing), ``escape`` (bytes that are not UTF-8, kept losslessly), ``build``
  (sections in, a checked manifest out), ``io`` (files).
- ``collectors/``: one module per source (``command``, ``config``, ``container``, ``data``,
  ``tabular``, ``distributions``, ``environment``, ``framework``, ``git``, ``gpu``,
  ``nvidia_smi``, ``nvml``, ``runtime``, ``system``, ``training``), ``worktree`` (what in
  a checkout is the user's work: outputs and large files), what each is handed
  (``context``), subprocesses (``process``) and the parallel ``runner``.
- ``store/``: the content-addressed object directory and the SQL index over every run
  (``config``, ``objects/``, ``index/``, ``record/``, the queries, the ``Store``
  facade); its own docstring maps it. ``migrations/`` holds the index's alembic revisions.
- ``compare/``: ``check``, ``diff``, ``rerun``, ``data`` (datasets against the disk),
  ``repos`` (which repository of one run matches which of another), ``versions`` (version
  strings as checks read them).
- ``integrations/``: the training hook (``hook``, ``topology``, ``ray_nodes``), where its
  manifest goes (``recording``), parsed arguments (``args``), checkpoint names
  (``checkpoints``).
- ``api`` (collect and generate, the calls behind the CLI), and ``cli/``: one module per
  command group, with ``refs`` (a file or a run named on the command line), ``store``
  (opening the store) and ``output`` (printing).
"""

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from expdna.api import collect, generate
    from expdna.errors import ExpdnaError
    from expdna.integrations import checkpoint_name, start, track
    from expdna.integrations.hook import IncompleteManifestWarning
    from expdna.manifest import Manifest, load_manifest, write_manifest
    from expdna.manifest import compute_dna as compute_dna
    from expdna.store import Store as Store

#: Public name -> the module it comes from.
_LAZY = {
    "collect": "expdna.api",
    "generate": "expdna.api",
    "ExpdnaError": "expdna.errors",
    "checkpoint_name": "expdna.integrations",
    "start": "expdna.integrations",
    "track": "expdna.integrations",
    "IncompleteManifestWarning": "expdna.integrations.hook",
    "Manifest": "expdna.manifest",
    "compute_dna": "expdna.manifest",
    "load_manifest": "expdna.manifest",
    "write_manifest": "expdna.manifest",
    # The store loads SQLAlchemy: only on first use of expdna.Store.
    "Store": "expdna.store",
}


def dna_of(manifest: "Manifest") -> str:
    """The 64-hex DNA of ``manifest``, recomputed from its content."""
    from expdna.manifest import compute_dna

    return compute_dna(manifest).value


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'expdna' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
