"""The ``torch.distributed`` layout of this process: its rank, the world, the node it is on.

Read from the launcher's variables (``torchrun`` and ``torch.distributed.launch`` set
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``,
``GROUP_WORLD_SIZE``; ``deepspeed`` sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and
Horovod's names for the rest, ``LOCAL_SIZE``, ``CROSS_RANK``, ``CROSS_SIZE``; ``srun``
sets the ``SLURM_*`` fallbacks), and from the default process group when the training
script has initialised one, which then wins for the rank, the world size and the backend.
torch is never imported here: it is consulted only when the caller has imported it
(``"torch" in sys.modules``).

Where the launcher sets no local variables (Lightning's ``ddp_spawn`` starts its ranks with
``multiprocessing`` and initialises the group itself, so only the group knows the world), a
framework's own view of the layout stands in for them (:func:`hinted_environ`): one node
of two ranks then records the same ``runtime`` as under torchrun or accelerate.

The runtime collector records the layout as ``runtime.torch_distributed``; the hook reads
it to decide which process writes the manifest (global rank 0) and which gather a node's
hardware fingerprint (each node's local rank 0).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# First variable present wins; the SLURM_* ones are what ``srun`` gives each task.
_RANK = ("RANK", "SLURM_PROCID")
_WORLD = ("WORLD_SIZE",)
_LOCAL_RANK = ("LOCAL_RANK", "SLURM_LOCALID")
_LOCAL_WORLD = ("LOCAL_WORLD_SIZE", "LOCAL_SIZE")
_NODE_RANK = ("GROUP_RANK", "NODE_RANK", "CROSS_RANK", "SLURM_NODEID")
_NODE_COUNT = ("GROUP_WORLD_SIZE", "CROSS_SIZE")


#: The layout a framework knows, by the variable a launcher would have set for it.
HINT_VARIABLES: dict[str, str] = {
    "local_rank": "LOCAL_RANK",
    "local_world_size": "LOCAL_WORLD_SIZE",
    "node_rank": "GROUP_RANK",
    "node_count": "GROUP_WORLD_SIZE",
}


def hinted_environ(environ: Mapping[str, str], hint: Mapping[str, int] | None) -> Mapping[str, str]:
    """``environ`` with the variables ``hint`` stands for where the launcher set none
    (the launcher's own values always win)."""
    if not hint:
        return environ
    filled = {
        HINT_VARIABLES[name]: str(value)
        for name, value in hint.items()
        if name in HINT_VARIABLES
        and isinstance(value, int)
        and not isinstance(value, bool)
        and value >= 0
    }
    return {**filled, **environ}


def _first_int(environ: Mapping[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


@dataclass(frozen=True)
class Layout:
    """Where this process sits in a ``torch.distributed`` job (``None``: not known)."""

    rank: int
    world_size: int
    local_rank: int | None = None
    local_world_size: int | None = None
    node_rank: int | None = None
    node_count: int | None = None
    backend: str | None = None
    initialised: bool = False

    @property
    def writes(self) -> bool:
        """Global rank 0 writes the run's one manifest."""
        return self.rank == 0

    @property
    def leads_node(self) -> bool:
        """Local rank 0 answers for its node's hardware."""
        return self.local_rank == 0

    def section(self) -> dict[str, Any]:
        """``runtime.torch_distributed``: the job's shape, none of this process's own ids."""
        return {
            "world_size": self.world_size,
            "backend": self.backend,
            "ranks_per_node": self.local_world_size,
            "node_count": self.node_count,
            "initialised": self.initialised,
        }


def _process_group() -> tuple[int, int, str | None] | None:
    """(rank, world size, backend) of the default process group, if one is initialised."""
    torch = sys.modules.get("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    try:
        backend: str | None = str(dist.get_backend())
    except Exception:  # a custom backend may not say: the rank and world still count
        backend = None
    return int(dist.get_rank()), int(dist.get_world_size()), backend


def layout(environ: Mapping[str, str]) -> Layout | None:
    """This process's layout, or ``None`` when it is not part of a multi-process job."""
    group = _process_group()
    if group is not None:
        rank, world, backend = group
    else:
        env_rank, env_world = _first_int(environ, _RANK), _first_int(environ, _WORLD)
        if env_rank is None or env_world is None:
            return None
        rank, world, backend = env_rank, env_world, None
    if world < 2:
        return None
    local_world = _first_int(environ, _LOCAL_WORLD)
    node_count = _first_int(environ, _NODE_COUNT)
    if node_count is None and local_world:
        node_count = -(-world // local_world)
    return Layout(
        rank=rank,
        world_size=world,
        local_rank=_first_int(environ, _LOCAL_RANK),
        local_world_size=local_world,
        node_rank=_first_int(environ, _NODE_RANK),
        node_count=node_count,
        backend=backend,
        initialised=group is not None,
    )
