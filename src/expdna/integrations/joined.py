"""A hooked training script started by ``expdna run`` joins the run ``expdna run`` made.

``expdna run`` writes the manifest before it starts the command and passes its run id and
path in the environment (:data:`RUN_ID_ENV`, :data:`MANIFEST_ENV`). :func:`joined_manifest`
reads that manifest back for :func:`expdna.start`, which then adds to it (runtime, final
metrics, status) in the same file instead of writing a second one; ``expdna run`` records it
in the store when the command ends. The environment is hostile input like any manifest: a
path that does not hold a manifest of that run id is refused with a warning, and the hook
records a run of its own as usual.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from expdna.manifest.model import Manifest

#: The run id ``expdna run`` gives the command.
RUN_ID_ENV = "EXPDNA_RUN_ID"
#: The manifest file of that run.
MANIFEST_ENV = "EXPDNA_MANIFEST"
#: Where the command may write its final metrics as a JSON object.
METRICS_FILE_ENV = "EXPDNA_METRICS_FILE"


class NotJoined(Exception):
    """The environment names a run, but not one this process can join."""


def joined_manifest(environ: Mapping[str, str] | None = None) -> tuple[Path, Manifest] | None:
    """The manifest ``expdna run`` made for this process; ``None`` outside ``expdna run``."""
    env = os.environ if environ is None else environ
    run_id, path = env.get(RUN_ID_ENV), env.get(MANIFEST_ENV)
    if not run_id and not path:
        return None
    if not run_id or not path:
        raise NotJoined(f"{RUN_ID_ENV} and {MANIFEST_ENV} must both be set")
    from expdna.manifest.io import load_manifest

    target = Path(path)
    try:
        manifest = load_manifest(target)
    except Exception as exc:  # a missing, unreadable or invalid file: not joinable
        raise NotJoined(f"{MANIFEST_ENV}={path}: {exc}") from None
    if manifest.run_id != run_id:
        raise NotJoined(f"{MANIFEST_ENV}={path} holds run {manifest.run_id}, not {run_id}")
    return target, manifest
