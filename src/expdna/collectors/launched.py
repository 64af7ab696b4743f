"""What a launcher gives the processes it starts, as ``generate`` models it before the run.

``expdna generate -- torchrun --standalone --nproc-per-node 2 train.py`` runs in the shell,
before the launcher; the hook inside ``train.py`` runs in one of the ranks it starts. For
both to record one setup alike, ``generate`` records the environment and the layout rank 0
will have, as the launcher sets them. Each launcher has its model in :data:`LAUNCHERS`
(keyed by :attr:`~expdna.manifest.command_line.CommandShape.launcher`); a command with no
model there (no launcher) is recorded with the environment it is given.

``torchrun`` (torch 2.13: ``torch/distributed/run.py`` and the local elastic agent,
``torch/distributed/elastic/agent/server/local_elastic_agent.py``):

- ``TORCH_NCCL_ASYNC_ERROR_HANDLING``: every worker gets it, the launcher's own value when
  it has one, else ``1``;
- ``OMP_NUM_THREADS=1`` when the launcher's environment has none and more than one process
  runs per node (``--nproc-per-node`` as a number, or ``cpu``: the CPUs this process may run
  on, as torch's ``cpu_count`` counts them, which generate shares with the launcher it
  precedes; ``gpu`` and ``auto`` count the accelerators torch sees when torchrun starts, so
  then it is not modelled);
- one node (``--standalone``, or ``--nnodes`` 1 or ``1:1``, the default) of N processes: the
  layout variables rank 0 gets (``RANK=0``, ``WORLD_SIZE=N``, ``LOCAL_WORLD_SIZE=N``,
  ``GROUP_WORLD_SIZE=1``…), from which the runtime collector records the one-node
  ``torch_distributed`` layout the hook there records. Several nodes are not modelled (each
  agent's rendezvous decides the layout).

``accelerate launch`` (accelerate 1.16: ``accelerate/commands/launch.py``
``_validate_launch_command`` and ``launch_command``, ``accelerate/utils/launch.py``
``prepare_multi_gpu_env`` and ``prepare_simple_launcher_cmd_env``). Of what it sets, the
config collector's whitelist keeps ``OMP_NUM_THREADS``, ``KMP_*`` and torchrun's
``TORCH_NCCL_ASYNC_ERROR_HANDLING``; ``ACCELERATE_*``, ``FSDP_*`` and ``MASTER_ADDR`` /
``MASTER_PORT`` are not collected (and the DNA leaves ``*_PORT`` and ``*_ADDR`` out anyway):

- ``OMP_NUM_THREADS``: always set, to ``--num_cpu_threads_per_process``, else the launcher's
  own value, else ``1``; with ``--cpu`` and none set, to the physical cores per process on
  this node when that is more than one (the cores as ``psutil`` counts them: generate runs
  on the node it models; without ``psutil`` this one case is not modelled);
- ``--multi_gpu`` (also ``--use_fsdp``, ``--use_megatron_lm``) without ``--cpu``: accelerate
  runs torchrun in its own process with ``--nproc_per_node`` = ``--num_processes`` /
  ``--num_machines``, so its workers get what torchrun's do (the layout of one node
  included; ``OMP_NUM_THREADS`` is already set, so torchrun's rule for it never applies);
- otherwise one process (the simple launcher), with ``KMP_AFFINITY`` and ``KMP_BLOCKTIME``
  under ``--cpu`` and no ``torch.distributed`` layout. Without ``--multi_gpu`` or ``--cpu``
  accelerate itself starts torchrun when it counts several accelerators; generate does not
  count them, so it models the one process of a machine that has fewer;
- not modelled (the environment is recorded as given): a config file (``--config_file``,
  or accelerate's default one, which is read unless ``--cpu``: its settings decide the
  launcher), ``--use_deepspeed``, ``--tpu``, ``--mpirun_hostfile``, and an
  ``OMP_NUM_THREADS`` that is not a whole number. Also not modelled: ``NCCL_P2P_DISABLE`` /
  ``NCCL_IB_DISABLE``, which accelerate sets only on several RTX 40 cards with an old
  driver, and the devices ``--gpu_ids`` selects (``CUDA_VISIBLE_DEVICES``, which the DNA
  leaves out).

``deepspeed`` (deepspeed 0.19.8: ``deepspeed/launcher/runner.py`` ``main``, which starts
``deepspeed/launcher/launch.py`` on this machine when there is no hostfile, and that starts
the ranks):

- ``PYTORCH_NVML_BASED_CUDA_CHECK``: ``import deepspeed`` sets it in the launcher when unset
  (``1``), and the ranks inherit it;
- ``--num_gpus N`` (``--num_accelerators``): one node of N ranks, each told the layout in
  ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` and Horovod's ``LOCAL_SIZE``, ``CROSS_RANK``,
  ``CROSS_SIZE`` (no ``LOCAL_WORLD_SIZE``, no ``TORCH_NCCL_ASYNC_ERROR_HANDLING``), and
  ``CUDA_VISIBLE_DEVICES=0,…,N-1`` (the launcher's own value is dropped) where the
  accelerator is CUDA or the CPU (``DS_ACCELERATOR`` unset, ``cuda`` or ``cpu``; another
  accelerator names other devices);
- without ``--num_gpus`` the launcher counts the devices when it starts (GPUs, or the CPU's
  NUMA nodes), so then the layout is not modelled;
- not modelled (the environment is recorded as given): a hostfile (``--hostfile``, or
  ``/job/hostfile`` where it exists: then pdsh, MPI or Slurm may start the ranks on other
  nodes), ``--include`` / ``--exclude``, ``--force_multi``, ``--autotuning``, and
  ``--bind_cores_to_rank`` (``numactl``, and ``OMP_NUM_THREADS`` from the cores each rank
  is bound to).

Pure but for three reads: whether accelerate's default config file and deepspeed's
hostfile exist, and the physical core count (above). No process is started.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from expdna.manifest.command_line import parse_command

_log = logging.getLogger(__name__)

#: The variable torch's elastic agent gives every worker, and its default.
NCCL_ASYNC = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
#: What torchrun sets ``OMP_NUM_THREADS`` to when it is unset and a node runs several ranks.
OMP_THREADS = ("OMP_NUM_THREADS", "1")
#: What accelerate's simple launcher adds under ``--cpu`` (``prepare_simple_launcher_cmd_env``).
ACCELERATE_CPU_ENV = {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
#: The MPI variables accelerate reads for the processes per node under ``--cpu``.
_MPI_LOCAL_SIZE = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE")
#: ``--nnodes`` values that mean one node.
_ONE_NODE = frozenset({"1", "1:1"})
#: What ``import deepspeed`` sets in the launcher when unset, for its ranks to inherit.
DEEPSPEED_NVML = ("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
#: Where deepspeed's runner looks for its hostfile unless ``--hostfile`` names one.
DEEPSPEED_HOSTFILE = "/job/hostfile"
#: The variable deepspeed's launcher names a node's devices in, by ``DS_ACCELERATOR`` ("":
#: unset, then found at start: modelled as CUDA, whose variable the CPU shares).
DEEPSPEED_VISIBLE_DEVICES = {
    "": "CUDA_VISIBLE_DEVICES",
    "cuda": "CUDA_VISIBLE_DEVICES",
    "cpu": "CUDA_VISIBLE_DEVICES",
}
#: deepspeed options after which its runner does not start one node's ranks itself, or
#: sets what is not modelled (see the module doc).
_DEEPSPEED_NOT_MODELLED = (
    "--include",
    "-i",
    "--exclude",
    "-e",
    "--force-multi",
    "--autotuning",
    "--bind-cores-to-rank",
    "--bind-core-list",
)


def launcher_option(words: Sequence[str], *names: str) -> str | None:
    """The last value of one of ``names`` (dashed) among a launcher's option words
    (``--nproc_per_node 2``, ``--nproc-per-node=2``)."""
    found = None
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name.replace("_", "-") in names:
            found = value if eq else (words[i + 1] if i + 1 < len(words) else None)
    return found


def _flag(words: Sequence[str], name: str) -> bool:
    return any(word.replace("_", "-") == name for word in words)


def _given(words: Sequence[str], name: str) -> bool:
    """Whether option ``name`` (dashed) is among ``words``, alone or as ``name=value``."""
    return any(word.partition("=")[0].replace("_", "-") == name for word in words)


def _count(value: str | None) -> int | None:
    """``value`` as a whole number of zero or more, else None."""
    text = (value or "").strip()
    return int(text) if text.isascii() and text.isdigit() else None


def torch_layout(count: int) -> dict[str, str]:
    """The layout variables torch's elastic agent gives rank 0 of one node of ``count``."""
    size = str(count)
    return {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "GROUP_RANK": "0",
        "WORLD_SIZE": size,
        "LOCAL_WORLD_SIZE": size,
        "GROUP_WORLD_SIZE": "1",
    }


def deepspeed_layout(count: int) -> dict[str, str]:
    """The layout variables deepspeed's launcher gives rank 0 of one node of ``count``."""
    size = str(count)
    return {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": size,
        "LOCAL_SIZE": size,
        "CROSS_RANK": "0",
        "CROSS_SIZE": "1",
    }


@dataclass(frozen=True)
class LaunchPlan:
    """What a launcher's command line says of the processes it starts."""

    #: The variables it sets for them (over its own environment), layout aside.
    environment: Mapping[str, str] = field(default_factory=dict)
    #: Processes per node, or None when the launcher counts them at start (``gpu``, ``auto``).
    nproc_per_node: int | None = None
    #: Whether they form a ``torch.distributed`` job on this one node (its layout is known).
    one_node: bool = False
    #: The variables that tell rank 0 of one node of N ranks its layout, by this launcher.
    layout: Callable[[int], Mapping[str, str]] = torch_layout

    def rank_zero_environ(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``environ`` as rank 0 will see it."""
        added = dict(self.environment)
        if self.one_node and self.nproc_per_node is not None:
            added.update(self.layout(self.nproc_per_node))
        return {**environ, **added}


def _torch_workers(
    environ: Mapping[str, str], count: int | None, one_node: bool, omp_set: bool
) -> LaunchPlan:
    """What torchrun's agent gives its workers; ``omp_set``: whether ``OMP_NUM_THREADS`` is
    set in torchrun's own process (torchrun sets it to 1 only when unset and several ranks
    run per node)."""
    name, default = NCCL_ASYNC
    added = {name: environ.get(name, default)}
    if not omp_set and count is not None and count > 1:
        added[OMP_THREADS[0]] = OMP_THREADS[1]
    return LaunchPlan(environment=added, nproc_per_node=count, one_node=one_node)


def _usable_cpus() -> int | None:
    """torch's ``_utils.cpu_count``: the CPUs this process may run on (cgroups, taskset)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


#: ``--nproc-per-node`` words torchrun counts when it starts, and how (torch 2.13
#: ``determine_local_world_size``); ``gpu``, ``auto`` and ``xpu`` count devices, not modelled.
_NPROC_WORDS: Mapping[str, Callable[[], int | None]] = {"cpu": _usable_cpus}


def _torchrun(words: Sequence[str], environ: Mapping[str, str]) -> LaunchPlan:
    nproc = launcher_option(words, "--nproc-per-node") or "1"
    nnodes = launcher_option(words, "--nnodes") or "1:1"
    counted = _NPROC_WORDS.get(nproc.strip())
    count = counted() if counted is not None else _count(nproc)
    one_node = _flag(words, "--standalone") or nnodes.strip() in _ONE_NODE
    return _torch_workers(environ, count or None, one_node, OMP_THREADS[0] in environ)


def _int_from_env(environ: Mapping[str, str], names: Sequence[str]) -> int | None:
    """accelerate's ``get_int_from_env``: the first of ``names`` set to a number >= 0."""
    for name in names:
        value = int(environ.get(name, -1))  # accelerate fails on a non-number as well
        if value >= 0:
            return value
    return None


def _physical_cores() -> int | None:
    try:  # accelerate's own dependency, not expdna's
        psutil = importlib.import_module("psutil")
    except ImportError:
        return None
    cores = psutil.cpu_count(logical=False)
    return int(cores) if cores else None


def default_accelerate_config(environ: Mapping[str, str]) -> str:
    """Where ``accelerate`` looks for its default config file (``config_args.py``)."""
    home = environ.get("HF_HOME") or os.path.join(
        environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface"
    )
    return os.path.join(os.path.expanduser(home), "accelerate", "default_config.yaml")


def _accelerate_threads(
    words: Sequence[str], environ: Mapping[str, str], cpu: bool, processes: int | None
) -> int | None:
    """``OMP_NUM_THREADS`` as ``accelerate launch`` sets it (``_validate_launch_command``);
    None where not modelled. Raises ValueError where accelerate would fail on a variable."""
    given = _count(launcher_option(words, "--num-cpu-threads-per-process"))
    if given is not None:
        return given
    own = _int_from_env(environ, (OMP_THREADS[0],))
    threads = 1 if own is None else own
    # --cpu: the device count is 0, so --num_processes defaults to 1.
    processes = 1 if processes is None else processes
    if cpu and processes >= 1 and not own:
        machines = _count(launcher_option(words, "--num-machines")) or 1
        local = _int_from_env(environ, _MPI_LOCAL_SIZE)
        local = local if local is not None else max(int(processes / machines), 1)
        cores = _physical_cores()
        if cores is None:
            _log.debug("no psutil: OMP_NUM_THREADS of accelerate launch --cpu not modelled")
            return None
        if local and int(cores / local) > 1:
            threads = int(cores / local)
    return threads


def _accelerate(words: Sequence[str], environ: Mapping[str, str]) -> LaunchPlan | None:
    cpu = _flag(words, "--cpu")
    if launcher_option(words, "--config-file") is not None or (
        not cpu and os.path.isfile(default_accelerate_config(environ))
    ):
        return None  # the file's settings decide the launcher
    if launcher_option(words, "--mpirun-hostfile") is not None:
        return None  # mpirun starts the processes
    kinds = ("--multi-gpu", "--tpu", "--use-deepspeed", "--use-fsdp", "--use-megatron-lm")
    chosen = {kind for kind in kinds if _flag(words, kind)}
    if len(chosen) + cpu > 1 or (not cpu and chosen & {"--tpu", "--use-deepspeed"}):
        return None  # refused by accelerate, or a launcher not modelled
    processes = _count(launcher_option(words, "--num-processes"))
    machines = _count(launcher_option(words, "--num-machines")) or 1
    try:
        threads = _accelerate_threads(words, environ, cpu, processes)
    except ValueError:
        return None
    environment = {} if threads is None else {OMP_THREADS[0]: str(threads)}
    if chosen and not cpu:
        # torchrun in accelerate's process, OMP_NUM_THREADS set: what torchrun's workers get.
        per_node = None if processes is None else processes // machines
        workers = _torch_workers(environ, per_node or None, machines == 1, omp_set=True)
        return LaunchPlan(
            {**environment, **workers.environment}, workers.nproc_per_node, workers.one_node
        )
    if cpu:
        environment.update(ACCELERATE_CPU_ENV)
    return LaunchPlan(environment)


def _deepspeed(words: Sequence[str], environ: Mapping[str, str]) -> LaunchPlan | None:
    hostfile = launcher_option(words, "--hostfile", "-H") or DEEPSPEED_HOSTFILE
    if os.path.isfile(hostfile) or any(_given(words, o) for o in _DEEPSPEED_NOT_MODELLED):
        return None
    if (_count(launcher_option(words, "--num-nodes")) or 1) > 1:
        return None  # refused without a hostfile
    name, default = DEEPSPEED_NVML
    environment = {name: environ.get(name, default)}
    count = _count(launcher_option(words, "--num-gpus", "--num-accelerators")) or None
    visible = DEEPSPEED_VISIBLE_DEVICES.get(environ.get("DS_ACCELERATOR", "").strip().lower())
    if count is not None and visible is not None:
        environment[visible] = ",".join(str(device) for device in range(count))
    return LaunchPlan(environment, count, one_node=True, layout=deepspeed_layout)


#: Launcher (as :func:`~expdna.manifest.command_line.parse_command` names it) -> its model:
#: the plan of its option words under the environment it is started with, or None when the
#: command's words do not say enough.
LAUNCHERS: Mapping[str, Callable[[Sequence[str], Mapping[str, str]], LaunchPlan | None]] = {
    "torchrun": _torchrun,
    "accelerate": _accelerate,
    "deepspeed": _deepspeed,
}


def launch_plan(argv: Sequence[str], environ: Mapping[str, str]) -> LaunchPlan | None:
    """The plan of ``argv``'s launcher started with ``environ``; None for a command no
    model covers."""
    shape = parse_command(list(argv))
    model = LAUNCHERS.get(shape.launcher or "")
    return None if model is None else model(shape.launcher_args, environ)


def launched_environ(argv: Sequence[str], environ: Mapping[str, str]) -> Mapping[str, str]:
    """``environ`` as rank 0 of the job ``argv`` launches will see it (see the module doc);
    ``environ`` itself for any other command."""
    plan = launch_plan(argv, environ)
    return environ if plan is None else plan.rank_zero_environ(environ)
