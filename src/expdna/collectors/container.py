"""Is this process inside a container, and which kind? Marker files and variables only.

The hints are checked in registry order and the first that matches names the container:
an Apptainer/Singularity image run by a Kubernetes pod or a Docker daemon is still that
image, and a pod says more than the runtime under it. Only the kind is recorded, never the
image path, pod name or container id the markers carry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

#: A hint: (environment, filesystem root) -> does it say we are in this kind of container?
Hint = Callable[[Mapping[str, str], Path], bool]


def _at(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


CONTAINER_HINTS: dict[str, Hint] = {
    # Apptainer sets both its own and the legacy SINGULARITY_* variables: check it first.
    "apptainer": lambda env, root: "APPTAINER_CONTAINER" in env or "APPTAINER_NAME" in env,
    "singularity": lambda env, root: (
        "SINGULARITY_CONTAINER" in env
        or "SINGULARITY_NAME" in env
        or _at(root, "/.singularity.d").is_dir()
    ),
    "kubernetes": lambda env, root: "KUBERNETES_SERVICE_HOST" in env,
    "podman": lambda env, root: _at(root, "/run/.containerenv").exists(),
    "docker": lambda env, root: _at(root, "/.dockerenv").exists(),
}


def container_kind(environ: Mapping[str, str], root: Path = Path("/")) -> str | None:
    """The first kind in :data:`CONTAINER_HINTS` whose hint matches, or ``None``.

    ``root`` stands for ``/`` so tests can lay marker files out in a temp directory.
    """
    for kind, hint in CONTAINER_HINTS.items():
        try:
            if hint(environ, root):
                return kind
        except OSError:  # an unreadable marker is no evidence either way
            continue
    return None
