"""One hardware fingerprint per node of a ``torch.distributed`` job, and one run id for all ranks.

Every rank calls the hook (``start`` → ``add_runtime`` → ``finish``); global rank 0 alone
collects and writes the manifest. In ``add_runtime`` each other node's local rank 0
computes its node's fingerprint (:func:`expdna.integrations.ray_nodes.node_hardware`, the
digest a manifest collected there would carry as ``dna.sections.hardware``) and posts it;
rank 0 waits for them at most the deadline, records a node that has not answered by then
as unknown (``fingerprint: null`` with the reason), and posts the run id and DNA, which
the other ranks read when they ask for ``run.run_id`` / ``run.dna``.

The exchange goes through the key-value store of the default process group (the TCPStore
``init_process_group`` rendezvoused on), not through ``all_gather_object``. A collective
must be entered by every rank: one rank that does not call the hook (a script that calls
it under ``if rank == 0``) would leave the others blocked, on NCCL with no timeout that
can be trusted, and an extra collective or an extra group (a gloo group with a timeout
also needs ``new_group`` on every rank) shifts the sequence numbers of the training's own
collectives. Store keys are set without waiting, and read by rank 0 with a polled,
deadline-bounded check, so no rank ever waits on another for longer than the deadline and
the training's process groups are never touched. Keys are namespaced by a per-process
count of runs started (``expdna/<n>/…``), which every rank advances the same way.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from expdna.collectors.distributed import Layout
from expdna.integrations.recording import guarded
from expdna.manifest.model import Manifest

log = logging.getLogger(__name__)

_POLL_S = 0.02

_count_lock = threading.Lock()
_count = 0


def _next_sequence() -> int:
    global _count
    with _count_lock:
        _count += 1
        return _count


def default_store() -> Any | None:
    """The default process group's store, or ``None`` when no group is initialised."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    # The store init_process_group rendezvoused on; torch has no public getter for it.
    getter = getattr(dist.distributed_c10d, "_get_default_store", None)
    return getter() if callable(getter) else None


@dataclass
class Peers:
    """This process's part in one run of a ``torch.distributed`` job."""

    layout: Layout
    sequence: int = field(default_factory=_next_sequence)
    announced: dict[str, Any] | None = None
    #: The layout the framework gave where the launcher set no variables (ddp_spawn).
    hint: dict[str, int] | None = None

    def key(self, what: str) -> str:
        return f"expdna/{self.sequence}/{what}"

    def post_node(self, payload: dict[str, Any], store: Any | None = None) -> None:
        """A node leader's fingerprint, for rank 0 (no wait)."""
        store = store if store is not None else default_store()
        if store is None:
            raise RuntimeError("torch.distributed is not initialised: nowhere to post")
        store.set(self.key(f"node/{self.layout.node_rank}"), json.dumps(payload))

    def announce(self, run_id: str, dna: str | None, store: Any | None = None) -> None:
        """Rank 0: the run id and DNA, for the other ranks (no wait)."""
        self.announced = {"run_id": run_id, "dna": dna}
        store = store if store is not None else default_store()
        if store is not None:
            store.set(self.key("run"), json.dumps(self.announced))

    def lookup(self, store: Any | None = None) -> dict[str, Any] | None:
        """Another rank: rank 0's announcement if it is there now (never waits for it)."""
        if self.announced is None:
            store = store if store is not None else default_store()
            if store is not None and store.check([self.key("run")]):
                self.announced = json.loads(store.get(self.key("run")))
        return self.announced


@dataclass
class NodePrints:
    """The nodes of the job as rank 0 found them, and what went wrong."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    duration_ms: float = 0.0

    @property
    def status(self) -> str:
        known = sum(1 for n in self.nodes if n.get("fingerprint"))
        if known == len(self.nodes):
            return "ok"
        return "partial" if known else "failed"

    def record(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "duration_ms": round(self.duration_ms, 2),
            "warnings": list(self.warnings),
        }


def node_entry(node_rank: int, head: bool, ranks: int | None) -> dict[str, Any]:
    """One node of a torch.distributed job, its fingerprint still to come."""
    # resources carries the node's rank count into the DNA (as a Ray node's CPUs/GPUs do).
    return {
        "role": "head" if head else "worker",
        "node_rank": node_rank,
        "resources": {"ranks": ranks} if ranks else {},
        "fingerprint": None,
    }


def gather_nodes(
    peers: Peers, *, deadline_s: float, local: dict[str, Any], store: Any | None = None
) -> NodePrints:
    """Rank 0: its own node from ``local``, every other node from the store, within the deadline.

    ``store`` is the default process group's unless given (a ``torch.distributed.Store``).
    """
    started = time.perf_counter()
    found = NodePrints()
    lay = peers.layout
    own = lay.node_rank if lay.node_rank is not None else 0
    head = node_entry(own, True, lay.local_world_size)
    head.update(fingerprint=local["fingerprint"], hardware=local["hardware"])
    found.nodes.append(head)
    found.warnings += [f"node {own}: {w}" for w in local.get("warnings", [])]
    others = [k for k in range(lay.node_count or 1) if k != own]
    if not others:
        found.duration_ms = (time.perf_counter() - started) * 1000
        return found
    if lay.node_rank is None or lay.local_rank is None:
        for k in others:
            found.nodes.append({**node_entry(k, False, None), "unknown": "no node rank given"})
        found.warnings.append(
            "the launcher set no GROUP_RANK/LOCAL_RANK: other nodes' hardware is unknown"
        )
        found.duration_ms = (time.perf_counter() - started) * 1000
        return found
    store = store if store is not None else default_store()
    if store is None:
        reason = "torch.distributed was not initialised at add_runtime()"
        found.nodes += [{**node_entry(k, False, None), "unknown": reason} for k in others]
        found.warnings.append(f"{reason}: other nodes' hardware is unknown")
        found.duration_ms = (time.perf_counter() - started) * 1000
        return found
    answers: dict[int, dict[str, Any]] = {}
    pending = {k: peers.key(f"node/{k}") for k in others}
    while pending:
        for k, key in list(pending.items()):
            if store.check([key]):
                answers[k] = json.loads(store.get(key))
                del pending[k]
        if not pending or time.perf_counter() - started >= deadline_s:
            break
        time.sleep(_POLL_S)
    for k in others:
        answer = answers.get(k)
        if answer is None:
            reason = f"no answer within {deadline_s:g} s"
            found.nodes.append({**node_entry(k, False, lay.local_world_size), "unknown": reason})
            found.warnings.append(f"node {k}: {reason}; recorded as unknown")
            continue
        entry = node_entry(k, False, answer.get("ranks"))
        entry.update(fingerprint=answer.get("fingerprint"), hardware=answer.get("hardware", {}))
        found.nodes.append(entry)
        found.warnings += [f"node {k}: {w}" for w in answer.get("warnings", [])]
    found.duration_ms = (time.perf_counter() - started) * 1000
    return found


def post_fingerprint(peers: Peers, deadline_s: float) -> str | None:
    """A node leader other than rank 0: compute and post this node's fingerprint; a warning."""
    from expdna.integrations.ray_nodes import node_hardware

    payload = {"ranks": peers.layout.local_world_size}
    _, warning = guarded(
        "posting this node's fingerprint",
        lambda: peers.post_node({**payload, **node_hardware(deadline_s)}),
        deadline_s + 1.0,
    )
    return warning


def announce(peers: Peers, manifest: Manifest, deadline_s: float) -> str | None:
    """Rank 0: post the run id and DNA for the other ranks; a warning."""
    run_id, dna = manifest.run_id, manifest.dna.value if manifest.dna else None
    _, warning = guarded("announcing the run id", lambda: peers.announce(run_id, dna), deadline_s)
    return warning
