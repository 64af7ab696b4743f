"""Experiment trackers beside the expdna run: MLflow and W&B, tied both ways.

A tracker is looked for only when the training script has imported it (its module is in
``sys.modules``): expdna never imports mlflow or wandb on its own. When a run of it is
active, the hook records that run's id in the manifest under ``tracking.<name>`` (outside
the DNA) and, each time it writes the manifest, gives the tracker run the DNA, the family
digest, the section digests and the manifest itself (:func:`push`).
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from expdna.integrations.recording import guarded
from expdna.manifest.dna import compute_dna
from expdna.manifest.family import family_of
from expdna.manifest.model import Manifest

if TYPE_CHECKING:
    from expdna.integrations.hook import RunHandle

log = logging.getLogger(__name__)


@dataclass
class Link:
    """One tracker run tied to the expdna run.

    ``info`` is recorded as ``tracking.<name>`` (redacted like the rest of the manifest);
    ``push`` gives the tracker run what :func:`summary` says of the manifest.
    """

    name: str
    info: dict[str, Any]
    push: Callable[[Manifest, dict[str, Any]], None]


#: Tracker name -> (its module, the expdna module whose ``active_link()`` finds its run).
TRACKERS: dict[str, tuple[str, str]] = {
    "mlflow": ("mlflow", "expdna.integrations.mlflow"),
    "wandb": ("wandb", "expdna.integrations.wandb"),
}


def discover(already: set[str]) -> dict[str, Link]:
    """Links to the tracker runs active now, for trackers the script imported."""
    found: dict[str, Link] = {}
    for name, (module, ours) in TRACKERS.items():
        if name in already or module not in sys.modules:
            continue
        link = importlib.import_module(ours).active_link()
        if link is not None:
            found[name] = link
    return found


def summary(manifest: Manifest) -> dict[str, Any]:
    """What a tracker run is told: ``dna``, ``family``, ``run_id`` and ``sections``."""
    dna = manifest.dna if manifest.dna is not None else compute_dna(manifest)
    return {
        "dna": dna.value,
        "family": family_of(manifest, dna.sections),
        "run_id": manifest.run_id,
        "sections": dict(dna.sections),
    }


def push(link: Link, manifest: Manifest) -> None:
    link.push(manifest, summary(manifest))


def with_links(manifest: Manifest, links: Mapping[str, Link]) -> Manifest:
    """``manifest`` with ``tracking.<name>`` for each link (not in the DNA: it is kept)."""
    from expdna.manifest.redact import redact_tree

    doc = manifest.to_dict()
    tracking = dict(doc.get("tracking") or {})
    redacted = set(doc["collection"].get("redacted") or [])
    for name, link in links.items():
        tracking[name], paths = redact_tree(dict(link.info), f"tracking.{name}")
        redacted.update(paths)
    doc["tracking"] = tracking
    doc["collection"]["redacted"] = sorted(redacted)
    return Manifest.model_validate(doc)


def tie(links: dict[str, Link], manifest: Manifest) -> tuple[Manifest, list[str]]:
    """Add to ``links`` the tracker runs active now; ``manifest`` records them. Never raises.

    Runs in the caller's thread (MLflow keeps the active run per thread); no I/O happens.
    """
    try:
        found = discover(set(links))
        if not found:
            return manifest, []
        links.update(found)
        return with_links(manifest, links), []
    except Exception as exc:  # a tracker's failure must not reach the training code
        return manifest, [f"looking for tracker runs: {type(exc).__name__}: {exc}"]


def tell(links: Mapping[str, Link], manifest: Manifest, deadline_s: float) -> list[str]:
    """Push ``manifest`` to every linked tracker run, each under the deadline; the warnings."""
    found = []
    for link in links.values():
        call = functools.partial(push, link, manifest)
        _, warning = guarded(f"telling {link.name}", call, deadline_s)
        if warning:
            found.append(warning)
    return found


def log_to(
    handle: RunHandle | None, name: str, find: Callable[[], Link | None], missing: str
) -> str | None:
    """Tie ``handle``'s run to the tracker run ``find`` returns, now, and tell that run.

    The explicit form of what the hook does at each write (``expdna.integrations.mlflow.log``,
    ``...wandb.log``): returns the tracker run id, or ``None`` with a warning when there is no
    run to tie to or the tracker failed; never raises.
    """
    if handle is None or handle.manifest is None:
        return None
    try:
        link = find()
        if link is None:
            handle._warn(f"{name}.log: {missing}")
            return None
        handle.links[name] = link
        handle.manifest = with_links(handle.manifest, handle.links)
    except Exception as exc:  # a tracker's failure must not reach the training code
        handle._warn(f"{name}.log: {type(exc).__name__}: {exc}")
        return None
    manifest = handle.manifest
    _, warning = guarded(f"telling {name}", lambda: push(link, manifest), handle.deadline_s)
    if warning:
        handle._warn(warning)
        return None
    return str(link.info["run_id"])
