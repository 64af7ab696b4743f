"""The second phase of the hook: the run's Ray topology and its nodes' fingerprints.

Called after ``ray.init``. The ``runtime`` collector describes the layout (mode, node
count, each alive node's role and resources); on Ray, every node then gets the hardware
fingerprint from :mod:`expdna.integrations.ray_nodes`, in a ``torch.distributed`` job
from :mod:`expdna.integrations.torch_nodes`, and the DNA is recomputed, because the
runtime section's identity includes the fingerprints.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from expdna.api import collect
from expdna.collectors import Registry, default_registry
from expdna.collectors.distributed import hinted_environ
from expdna.digest.refs import ref
from expdna.integrations.ray_nodes import SUMMARY_FIELDS, fingerprint_nodes, node_hardware
from expdna.integrations.torch_nodes import Peers, gather_nodes, node_entry
from expdna.manifest.dna import compute_dna
from expdna.manifest.model import Manifest

FINGERPRINTS = "node_fingerprints"
_RAY_MODES = ("single_node_ray", "multi_node_ray")


def hardware_collectors(registry: Registry) -> list[str]:
    return [c.name for c in registry.collectors.values() if c.section == "hardware"]


def _reusable_local(manifest: Manifest, reusable: bool) -> dict[str, Any] | None:
    """The driver's node fingerprint taken from the first phase, when it is the same value.

    It is when the first phase ran the default hardware collectors, all answered, and no
    device mask shaped what they saw: the node probe computes exactly this digest then.
    """
    if not reusable or manifest.dna is None:
        return None
    if any(k.endswith("_VISIBLE_DEVICES") for k in os.environ):
        return None
    statuses = manifest.collection.collectors
    names = hardware_collectors(default_registry(plugins=False))
    if not all(n in statuses and statuses[n].status == "ok" for n in names):
        return None
    hardware = manifest.hardware.model_dump(mode="python")
    return {
        "fingerprint": ref(manifest.dna.sections["hardware"]),
        "hardware": {k: hardware[k] for k in SUMMARY_FIELDS if hardware.get(k) is not None},
        "warnings": [],
    }


def with_runtime(
    manifest: Manifest,
    *,
    registry: Registry | None,
    deadline_s: float,
    reuse_hardware: bool,
    peers: Peers | None = None,
) -> Manifest:
    """``manifest`` with its runtime section collected now and its DNA recomputed."""
    if registry is None or "runtime" not in registry.collectors:
        registry = default_registry()
    environ = hinted_environ(os.environ, peers.hint if peers is not None else None)
    found = collect(
        collectors=["runtime"], registry=registry, deadline_s=deadline_s, environ=environ
    )
    doc = manifest.to_dict()
    doc["runtime"] = found.to_dict()["runtime"]
    collection = doc["collection"]
    collection["collectors"]["runtime"] = found.collection.collectors["runtime"].model_dump()
    collection["redacted"] = sorted(
        {p for p in collection.get("redacted", []) if not p.startswith("runtime.")}
        | {p for p in found.collection.redacted if p.startswith("runtime.")}
    )
    runtime = doc["runtime"]
    ray = sys.modules.get("ray")
    if runtime.get("mode") in _RAY_MODES and ray is not None:
        nodes = [n for n in runtime.get("nodes") or [] if isinstance(n.get("node_id"), str)]
        local = _reusable_local(manifest, reuse_hardware)
        if local is None:
            local = node_hardware(deadline_s)
        prints = fingerprint_nodes(
            ray, [n["node_id"] for n in nodes], deadline_s=deadline_s, local=local
        )
        for node in nodes:
            result = prints.nodes.get(node["node_id"])
            if result is not None:
                node["fingerprint"] = result["fingerprint"]
                node["hardware"] = result["hardware"]
        collection["collectors"][FINGERPRINTS] = prints.record()
    elif peers is not None and runtime.get("torch_distributed"):
        local = _reusable_local(manifest, reuse_hardware) or node_hardware(deadline_s)
        gathered = gather_nodes(peers, deadline_s=deadline_s, local=local)
        runtime["nodes"] = gathered.nodes
        collection["collectors"][FINGERPRINTS] = gathered.record()
    updated = Manifest.model_validate(doc)
    updated.dna = compute_dna(updated)
    return updated


def with_planned_nodes(manifest: Manifest, *, deadline_s: float) -> Manifest:
    """``generate``'s manifest of a one-node launcher's command (``torchrun``, ``accelerate
    launch --multi_gpu``, ``deepspeed --num_gpus N``) with the node entry the hook in rank 0
    will record (:mod:`expdna.collectors.launched`): this machine, its rank count and its
    hardware fingerprint, taken as the hook takes it. Unchanged otherwise."""
    runtime = manifest.runtime.model_dump(mode="python")
    planned = runtime.get("torch_distributed")
    if (
        not isinstance(planned, dict)
        or planned.get("initialised")
        or planned.get("node_count") != 1
        or runtime.get("nodes")
        or "runtime" in (manifest.unknown or {})
    ):
        return manifest
    local = _reusable_local(manifest, True) or node_hardware(deadline_s)
    head = node_entry(0, True, planned.get("ranks_per_node"))
    head.update(fingerprint=local["fingerprint"], hardware=local["hardware"])
    doc = manifest.to_dict()
    doc["runtime"]["nodes"] = [head]
    warnings = [f"node 0: {w}" for w in local.get("warnings", [])]
    doc["collection"]["collectors"][FINGERPRINTS] = {
        "status": "ok" if head["fingerprint"] else "failed",
        "warnings": warnings,
    }
    updated = Manifest.model_validate(doc)
    updated.dna = compute_dna(updated)
    return updated


def with_note(manifest: Manifest, name: str, status: str, warnings: list[str]) -> Manifest:
    """``manifest`` with one more ``collection.collectors`` entry (outside the DNA)."""
    doc = manifest.to_dict()
    doc["collection"]["collectors"][name] = {"status": status, "warnings": warnings}
    return Manifest.model_validate(doc)
