"""How the run is laid out: local, single- or multi-node Ray, or a Slurm allocation.

Ray is never imported here: it is consulted only when the caller has imported it and
called ``ray.init`` already (``"ray" in sys.modules`` and ``ray.is_initialized()``). Then
the alive nodes of ``ray.nodes()`` are listed with their role and resources; the node
count decides single- vs multi-node, because several nodes may share one machine
(``ray.cluster_utils.Cluster``) and then share an address too.

The head is the node holding the ``node:__internal_head__`` resource (what Ray's own data
and train code test); a Ray version whose node entries carry ``IsHeadNode`` /
``is_head_node`` is believed as well (2.60 has neither key).

Each node's resources are Ray's, less the ``node:<ip>`` entry (it repeats the address,
which redaction hides). Node ids, addresses and hostnames are recorded for people; the DNA
keeps only the shape (``manifest.dna``: mode, node count, roles, resources without
``node:*`` and memory).
Slurm geometry comes from ``SLURM_*`` variables of the collected environment; it is recorded
whenever present, and names the mode only when Ray is not initialised.
A ``torch.distributed`` job (``torchrun``'s or ``deepspeed``'s variables, or an initialised
process group of two or more ranks) is recorded as ``torch_distributed``
(:mod:`expdna.collectors.distributed`); outside Ray and Slurm it names the mode
``torch_distributed`` with its node count. The hook adds one node entry per node with its
hardware fingerprint (:mod:`expdna.integrations.torch_nodes`). For a command still to be
started (``generate``), the layout is the one its one-node launcher (``torchrun``,
``accelerate launch --multi_gpu``, ``deepspeed --num_gpus N``) will give rank 0
(:mod:`expdna.collectors.launched`), and ``generate`` adds the node entry the hook would.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from expdna.collectors.context import CollectContext, Partial
from expdna.collectors.distributed import layout
from expdna.collectors.launched import launched_environ

HEAD_RESOURCE = "node:__internal_head__"
_HEAD_KEYS = ("IsHeadNode", "is_head_node", "isHeadNode")

#: Slurm field -> environment variables, first present wins (older names last).
SLURM_FIELDS: dict[str, tuple[str, ...]] = {
    "job_id": ("SLURM_JOB_ID", "SLURM_JOBID"),
    "nnodes": ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"),
    "ntasks": ("SLURM_NTASKS", "SLURM_NPROCS"),
    "ntasks_per_node": ("SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"),
    "gpus_per_node": ("SLURM_GPUS_PER_NODE",),
    "cpus_per_task": ("SLURM_CPUS_PER_TASK",),
    "partition": ("SLURM_JOB_PARTITION",),
}

_INT = re.compile(r"^\d+$")
# SLURM_TASKS_PER_NODE compresses equal counts: "4(x2)" is 4 on each of 2 nodes.
_UNIFORM_TASKS = re.compile(r"^(\d+)\(x\d+\)$")


def _typed(value: str) -> int | str:
    value = value.strip()
    return int(value) if _INT.match(value) else value


def slurm_geometry(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The job geometry from ``SLURM_*`` variables, or ``None`` outside a Slurm job."""
    if not any(name in environ for name in SLURM_FIELDS["job_id"]):
        return None
    geometry: dict[str, Any] = {}
    for field, names in SLURM_FIELDS.items():
        for name in names:
            if environ.get(name, "").strip():
                geometry[field] = _typed(environ[name])
                break
    per_node = geometry.get("ntasks_per_node")
    if isinstance(per_node, str) and (match := _UNIFORM_TASKS.match(per_node)):
        geometry["ntasks_per_node"] = int(match.group(1))
    return geometry


def _ray_if_initialised() -> Any | None:
    ray = sys.modules.get("ray")
    is_initialized = getattr(ray, "is_initialized", None)
    if ray is None or not callable(is_initialized):
        return None
    return ray if is_initialized() else None


def node_role(node: Mapping[str, Any]) -> str:
    """``head`` or ``worker`` for one entry of ``ray.nodes()``."""
    if HEAD_RESOURCE in (node.get("Resources") or {}):
        return "head"
    if any(node.get(key) is True for key in _HEAD_KEYS):
        return "head"
    return "worker"


def _resources(node: Mapping[str, Any]) -> dict[str, float]:
    # ``node:<ip>`` repeats the address, and redaction reads values, not keys: leave it out.
    return {
        name: amount
        for name, amount in (node.get("Resources") or {}).items()
        if not name.startswith("node:") or name.startswith("node:__")
    }


def describe_nodes(nodes: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The alive nodes of a ``ray.nodes()`` answer, head first, then by node id."""
    described = [
        {
            "role": node_role(node),
            "resources": _resources(node),
            "node_id": node.get("NodeID"),
            "address": node.get("NodeManagerAddress"),
            "hostname": node.get("NodeManagerHostname"),
        }
        for node in nodes
        if node.get("Alive", node.get("alive")) is True
    ]
    return sorted(described, key=lambda n: (n["role"] != "head", str(n["node_id"])))


def collect_runtime(ctx: CollectContext) -> dict[str, Any]:
    slurm = slurm_geometry(ctx.environ)
    section: dict[str, Any] = {"mode": "local"}
    if slurm is not None:
        # Without Ray, the allocation is the layout: its node count is the run's.
        section.update(mode="slurm", node_count=slurm.get("nnodes"), slurm=slurm)
    # A command still to be started (generate): the layout its launcher will give rank 0.
    environ = launched_environ(ctx.argv, ctx.environ) if ctx.probe_interpreter else ctx.environ
    torch_layout = layout(environ)
    if torch_layout is not None:
        section["torch_distributed"] = torch_layout.section()
        if slurm is None:
            section.update(mode="torch_distributed", node_count=torch_layout.node_count)
    ray = _ray_if_initialised()
    if ray is None:
        return section
    try:
        nodes = describe_nodes(list(ray.nodes()))
    except Exception as exc:  # a GCS hiccup must not cost the rest of the section
        section.update(mode=None, node_count=None)
        raise Partial(section, f"ray.nodes() failed: {type(exc).__name__}: {exc}") from exc
    section.update(
        mode="multi_node_ray" if len(nodes) > 1 else "single_node_ray",
        node_count=len(nodes),
        nodes=nodes,
    )
    return section
