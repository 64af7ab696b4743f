"""W&B: the active ``wandb.run`` gets the DNA in its config and the manifest in its files.

The hook does this by itself when a W&B run is active at ``start()`` or ``finish()`` (and
the script imported ``wandb``); :func:`log` ties a run explicitly. The run's config gets
``expdna`` = ``{"dna", "family", "run_id", "sections": {name: digest}}`` (so W&B's own
filters and groupings find runs of one setup), and ``expdna/manifest.json`` is written into
the run's files directory and saved with the run. The manifest records ``tracking.wandb``
(``run_id``, ``project``, ``entity``). Works in offline mode (``WANDB_MODE=offline``):
everything then syncs with the run.

wandb is imported only here, which the hook imports only when the script imported wandb.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from expdna.integrations.trackers import Link, log_to
from expdna.manifest.io import write_manifest
from expdna.manifest.model import Manifest

if TYPE_CHECKING:
    from expdna.integrations.hook import RunHandle

CONFIG_KEY = "expdna"
FILE = "expdna/manifest.json"


def _link(run: Any) -> Link:
    def send(manifest: Manifest, facts: dict[str, Any]) -> None:
        run.config.update({CONFIG_KEY: facts}, allow_val_change=True)
        target = Path(run.dir) / FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        write_manifest(manifest, target)
        run.save(str(target), base_path=run.dir, policy="now")

    info = {"run_id": run.id, "project": run.project, "entity": run.entity or None}
    return Link("wandb", info, send)


def active_link() -> Link | None:
    """A link to ``wandb.run``, the run active in this process, or ``None``."""
    import wandb

    return _link(wandb.run) if wandb.run is not None else None


def log(handle: RunHandle | None, run: Any = None) -> str | None:
    """Tie ``handle``'s run to a W&B run (``wandb.run``, or ``run``) now.

    Config and file as the module says; the manifest gets ``tracking.wandb`` (written with
    the manifest next time the hook writes it). Returns the W&B run id, or ``None`` with a
    warning when there is no run or W&B failed; never raises.
    """
    return log_to(
        handle,
        "wandb",
        lambda: _link(run) if run is not None else active_link(),
        "no active W&B run and no run given",
    )


__all__ = ["CONFIG_KEY", "FILE", "active_link", "log"]
