"""What ``torchrun`` gives the processes it starts, as ``generate`` models it before the run.

``expdna generate -- torchrun --standalone --nproc-per-node 2 train.py`` runs in the shell,
before torchrun; the hook inside ``train.py`` runs in one of the ranks torchrun starts. For
both to record one setup alike, ``generate`` records the environment and the layout rank 0
will have, as torch's own launcher sets them (``torch/distributed/run.py`` and the local
elastic agent, ``torch/distributed/elastic/agent/server/local_elastic_agent.py``):

- ``TORCH_NCCL_ASYNC_ERROR_HANDLING``: every worker gets it, the launcher's own value when
  it has one, else ``1``;
- ``OMP_NUM_THREADS=1`` when the launcher's environment has none and more than one process
  runs per node (``--nproc-per-node`` as a number; ``gpu``, ``auto`` and ``cpu`` are counted
  only when torchrun starts, so then it is not modelled);
- one node (``--standalone``, or ``--nnodes`` 1 or ``1:1``, the default) of N processes: the
  layout variables rank 0 gets (``RANK=0``, ``WORLD_SIZE=N``, ``LOCAL_WORLD_SIZE=N``,
  ``GROUP_WORLD_SIZE=1``…), from which the runtime collector records the one-node
  ``torch_distributed`` layout the hook there records. Several nodes are not modelled (each
  agent's rendezvous decides the layout).

Pure: no process is started and nothing is read but the words and the environment given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from expdna.manifest.command_line import parse_command

#: The variable torch's elastic agent gives every worker, and its default.
NCCL_ASYNC = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
#: What torchrun sets ``OMP_NUM_THREADS`` to when it is unset and a node runs several ranks.
OMP_THREADS = ("OMP_NUM_THREADS", "1")
#: ``--nnodes`` values that mean one node.
_ONE_NODE = frozenset({"1", "1:1"})


def launcher_option(words: Sequence[str], *names: str) -> str | None:
    """The last value of one of ``names`` (dashed) among a launcher's option words
    (``--nproc_per_node 2``, ``--nproc-per-node=2``)."""
    found = None
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name.replace("_", "-") in names:
            found = value if eq else (words[i + 1] if i + 1 < len(words) else None)
    return found


@dataclass(frozen=True)
class TorchrunPlan:
    """What a ``torchrun`` command line says of the job it starts."""

    #: Processes per node, or None when torchrun counts them at start (``gpu``, ``auto``).
    nproc_per_node: int | None
    #: Whether the job runs on this one node.
    one_node: bool


def torchrun_plan(argv: Sequence[str]) -> TorchrunPlan | None:
    """The plan of a ``torchrun`` (or ``python -m torch.distributed.run|launch``) command;
    None for any other command."""
    shape = parse_command(list(argv))
    if shape.launcher != "torchrun":
        return None
    words = shape.launcher_args
    nproc = launcher_option(words, "--nproc-per-node") or "1"
    nnodes = launcher_option(words, "--nnodes") or "1:1"
    standalone = any(word.replace("_", "-") == "--standalone" for word in words)
    count = int(nproc) if nproc.isascii() and nproc.isdigit() and int(nproc) > 0 else None
    return TorchrunPlan(nproc_per_node=count, one_node=standalone or nnodes.strip() in _ONE_NODE)


def launched_environ(argv: Sequence[str], environ: Mapping[str, str]) -> Mapping[str, str]:
    """``environ`` as rank 0 of ``argv``'s torchrun job will see it (see the module doc);
    ``environ`` itself for any other command."""
    plan = torchrun_plan(argv)
    if plan is None:
        return environ
    name, default = NCCL_ASYNC
    added = {name: environ.get(name, default)}
    count = plan.nproc_per_node
    if OMP_THREADS[0] not in environ and count is not None and count > 1:
        added[OMP_THREADS[0]] = OMP_THREADS[1]
    if plan.one_node and count is not None:
        added.update(
            RANK="0",
            LOCAL_RANK="0",
            GROUP_RANK="0",
            WORLD_SIZE=str(count),
            LOCAL_WORLD_SIZE=str(count),
            GROUP_WORLD_SIZE="1",
        )
    return {**environ, **added}
