"""Each Ray node's hardware fingerprint, from one small task pinned to that node.

A node's fingerprint is ``blake3:<hex>`` of the canonical JSON of the DNA projection of
the hardware section its hardware collectors (``system``, ``gpu``, any registered for the
``hardware`` section) report there. It is the same digest as ``dna.sections.hardware`` of a
manifest collected on that node, so nodes compare with each other and with single-node
runs. Device masks (``CUDA_VISIBLE_DEVICES`` and the other ``*_VISIBLE_DEVICES``) are
removed first: Ray hides every GPU from a task that asked for none, and a node's
fingerprint describes the machine, not one task's share of it.

The probe asks for no CPU (``num_cpus=0``), so a busy node runs it at once, and its
node affinity is hard (``soft=False``): a dead node fails it rather than letting it run
elsewhere under that node's name. The driver waits at most the deadline (``ray.wait``);
whatever has not answered by then is cancelled and becomes a warning, never a hang.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from expdna.digest.refs import ref

log = logging.getLogger(__name__)

#: Hardware fields a node entry repeats for people (the fingerprint is what compares).
SUMMARY_FIELDS = (
    "cpu_model",
    "cpu_count",
    "memory_gb",
    "gpu_model",
    "gpu_count",
    "driver_version",
    "cuda_version",
)


def _node_environ(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if not k.endswith("_VISIBLE_DEVICES")}


def node_hardware(deadline_s: float, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This machine's fingerprint, hardware summary and collector warnings.

    Runs on each node (inside the Ray task) and on the driver for the driver's own node.
    """
    from expdna.api import collect
    from expdna.collectors import default_registry

    registry = default_registry()
    names = [c.name for c in registry.collectors.values() if c.section == "hardware"]
    manifest = collect(
        collectors=names,
        registry=registry,
        deadline_s=deadline_s,
        environ=_node_environ(os.environ if environ is None else environ),
    )
    assert manifest.dna is not None
    hardware = manifest.hardware.model_dump(mode="python")
    return {
        "fingerprint": ref(manifest.dna.sections["hardware"]),
        "hardware": {k: hardware[k] for k in SUMMARY_FIELDS if hardware.get(k) is not None},
        "warnings": [
            f"{name}: {warning}"
            for name, status in manifest.collection.collectors.items()
            if status.status != "skipped"
            for warning in status.warnings
        ],
    }


def _probe(deadline_s: float) -> dict[str, Any]:
    """The Ray task body: this node's hardware, labelled with the node it really ran on."""
    import ray

    result = node_hardware(deadline_s)
    result["node_id"] = ray.get_runtime_context().get_node_id()
    return result


@functools.lru_cache(maxsize=1)
def _remote_probe() -> Any:
    import ray

    # Retrying on another worker would only spend the deadline again.
    return ray.remote(num_cpus=0, max_retries=0)(_probe)


@dataclass
class Fingerprints:
    """What the per-node collection found: results by node id, and what went wrong."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timed_out: int = 0
    expected: int = 0
    duration_ms: float = 0.0

    @property
    def status(self) -> str:
        if len(self.nodes) == self.expected:
            return "ok"
        if self.nodes:
            return "partial"
        return "timeout" if self.timed_out else "failed"

    def record(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "duration_ms": round(self.duration_ms, 2),
            "warnings": list(self.warnings),
        }


def _driver_node_id(ray: Any) -> str | None:
    """The node the driver runs on, or ``None`` for a Ray Client driver (not on a node)."""
    try:
        from ray.util.client import ray as client

        if client.is_connected():  # type: ignore[no-untyped-call]
            return None
    except ImportError:
        pass
    node_id = ray.get_runtime_context().get_node_id()
    return str(node_id) if node_id else None


def fingerprint_nodes(
    ray: Any,
    node_ids: list[str],
    *,
    deadline_s: float,
    local: dict[str, Any] | None = None,
) -> Fingerprints:
    """Fingerprint every node in ``node_ids`` within ``deadline_s``.

    The driver's own node needs no task: ``local`` (this process's :func:`node_hardware`,
    or a value computed the same way) stands for it, which spares one worker start.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    started = time.perf_counter()
    found = Fingerprints(expected=len(node_ids))
    driver = _driver_node_id(ray)
    probe = _remote_probe()
    refs: dict[Any, str] = {}
    for node_id in node_ids:
        if node_id == driver and local is not None:
            found.nodes[node_id] = local
            continue
        strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        refs[probe.options(scheduling_strategy=strategy).remote(deadline_s)] = node_id

    if refs:
        left = max(0.0, deadline_s - (time.perf_counter() - started))
        ready, pending = ray.wait(list(refs), num_returns=len(refs), timeout=left)
        for ref in ready:
            node_id = refs[ref]
            try:
                result = ray.get(ref, timeout=0)
            except Exception as exc:  # the node died, the task crashed: a warning per node
                found.warnings.append(
                    f"node {node_id[:12]}: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''}"
                )
                continue
            if result.get("node_id") != node_id:
                found.warnings.append(
                    f"node {node_id[:12]}: the probe ran on {str(result.get('node_id'))[:12]}"
                )
                continue
            found.nodes[node_id] = result
        for ref in pending:
            found.timed_out += 1
            found.warnings.append(
                f"node {refs[ref][:12]}: no answer within {deadline_s:g} s; cancelled"
            )
            try:
                ray.cancel(ref, force=True)
            except Exception as exc:  # cancelling is best effort; the warning stands
                log.debug("cancelling the probe on %s failed: %s", refs[ref], exc)
    for node_id, result in found.nodes.items():
        found.warnings += [f"node {node_id[:12]}: {w}" for w in result.get("warnings", [])]
    found.duration_ms = (time.perf_counter() - started) * 1000
    return found
