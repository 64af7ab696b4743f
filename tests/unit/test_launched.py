"""What generate models of a launcher's command: the environment and layout its ranks get.

The rules follow torch 2.13's torch/distributed/run.py (OMP_NUM_THREADS) and its local
elastic agent (TORCH_NCCL_ASYNC_ERROR_HANDLING, the layout variables), accelerate 1.16's
launch command (accelerate/commands/launch.py, accelerate/utils/launch.py) and deepspeed
0.19.8's runner and launcher (deepspeed/launcher/runner.py, launch.py); the real torchrun,
accelerate and deepspeed are compared with generate in tests/integration/test_path_agree.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from expdna.collectors.config import collect_config, select_env
from expdna.collectors.context import CollectContext
from expdna.collectors.launched import (
    DEEPSPEED_HOSTFILE,
    LAUNCHERS,
    default_accelerate_config,
    launch_plan,
    launched_environ,
)
from expdna.collectors.runtime import collect_runtime
from expdna.manifest.dna import is_per_allocation_env

TWO = ["torchrun", "--standalone", "--nproc-per-node", "2", "train.py", "--lr", "0.2"]


def test_plan_reads_the_launchers_options() -> None:
    assert set(LAUNCHERS) == {"torchrun", "accelerate", "deepspeed"}
    assert launch_plan(TWO, {}) is not None
    assert launch_plan(["python", "train.py"], {}) is None
    plan = launch_plan(["python", "-m", "torch.distributed.run", "--nproc_per_node=4", "t.py"], {})
    assert plan is not None and (plan.nproc_per_node, plan.one_node) == (4, True)
    plan = launch_plan(["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "t.py"], {})
    assert plan is not None and (plan.nproc_per_node, plan.one_node) == (8, False)
    plan = launch_plan(["torchrun", "--nproc-per-node", "gpu", "t.py"], {})
    assert plan is not None and plan.nproc_per_node is None
    plan = launch_plan(["torchrun", "--nproc-per-node", "cpu", "t.py"], {})
    assert plan is not None and plan.nproc_per_node == len(os.sched_getaffinity(0))


def test_environment_of_the_ranks() -> None:
    env = launched_environ(TWO, {"PATH": "/bin"})
    assert env["OMP_NUM_THREADS"] == "1" and env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert (env["RANK"], env["WORLD_SIZE"], env["GROUP_WORLD_SIZE"]) == ("0", "2", "1")
    # The launcher's own values pass through; one process per node sets no OMP_NUM_THREADS.
    own = {"OMP_NUM_THREADS": "4", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}
    assert {k: launched_environ(TWO, own)[k] for k in own} == own
    one = launched_environ(["torchrun", "train.py"], {})
    assert "OMP_NUM_THREADS" not in one and one["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    # Several nodes: the variables every worker gets, but no layout.
    many = launched_environ(["torchrun", "--nnodes", "2", "--nproc-per-node", "2", "t.py"], {})
    assert "WORLD_SIZE" not in many and many["OMP_NUM_THREADS"] == "1"
    assert launched_environ(["python", "train.py"], {"A": "1"}) == {"A": "1"}


def test_generate_records_what_the_ranks_will_see(tmp_path: Path) -> None:
    ctx = CollectContext(argv=tuple(TWO), cwd=tmp_path, environ={}, probe_interpreter=True)
    assert collect_config(ctx)["selected_env"] == {
        "OMP_NUM_THREADS": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }
    runtime = collect_runtime(ctx)
    assert runtime["mode"] == "torch_distributed" and runtime["node_count"] == 1
    assert runtime["torch_distributed"]["world_size"] == 2
    # In the process itself (the hook), the environment is what it is.
    inside = CollectContext(argv=tuple(TWO), cwd=tmp_path, environ={})
    assert collect_config(inside)["selected_env"] == {}
    assert collect_runtime(inside)["mode"] == "local"


ACCELERATE = ["accelerate", "launch"]
MULTI = [*ACCELERATE, "--multi_gpu", "--num_processes", "2", "train.py", "--lr", "0.1"]
#: What the whitelist keeps of what accelerate sets (ACCELERATE_*, MASTER_* are not kept).
KEPT = ("OMP_NUM_THREADS", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "KMP_AFFINITY", "KMP_BLOCKTIME")


def _set(argv: list[str], environ: dict[str, str]) -> dict[str, str]:
    """What the model adds to ``environ`` for ``argv``, of the whitelisted variables."""
    seen = launched_environ(argv, environ)
    return {k: v for k, v in seen.items() if k in KEPT and environ.get(k) != v}


def test_accelerate_multi_gpu_gives_what_torchrun_gives(tmp_path: Path) -> None:
    env = {"HF_HOME": str(tmp_path)}  # no accelerate config file
    seen = launched_environ(MULTI, env)
    assert _set(MULTI, env) == {"OMP_NUM_THREADS": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    assert (seen["RANK"], seen["WORLD_SIZE"], seen["LOCAL_WORLD_SIZE"]) == ("0", "2", "2")
    # --use_fsdp and --use_megatron_lm start torchrun as well; dashes and "=" are read alike.
    fsdp = [*ACCELERATE, "--use-fsdp", "--num-processes=4", "t.py"]
    assert launched_environ(fsdp, env)["WORLD_SIZE"] == "4"
    # The launcher's own values, or --num_cpu_threads_per_process, pass through.
    own = {**env, "OMP_NUM_THREADS": "4", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}
    assert {k: launched_environ(MULTI, own)[k] for k in KEPT[:2]} == {
        "OMP_NUM_THREADS": "4",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3",
    }
    threads = [*ACCELERATE, "--multi_gpu", "--num_cpu_threads_per_process", "3", "t.py"]
    assert launched_environ(threads, own)["OMP_NUM_THREADS"] == "3"
    # Counted at start (no --num_processes), or several machines: no layout.
    assert "WORLD_SIZE" not in launched_environ(threads, env)
    nodes = [*ACCELERATE, "--multi_gpu", "--num_processes", "8", "--num_machines", "2", "t.py"]
    many = launched_environ(nodes, env)
    assert "WORLD_SIZE" not in many and many["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    plan = launch_plan(nodes, env)
    assert plan is not None and (plan.nproc_per_node, plan.one_node) == (4, False)


def test_accelerate_on_cpu_starts_one_process(tmp_path: Path) -> None:
    env = {"HF_HOME": str(tmp_path)}
    cores = psutil.cpu_count(logical=False)

    def per_process(local: int) -> str:
        return str(int(cores / local)) if int(cores / local) > 1 else "1"

    kmp = {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
    cpu = [*ACCELERATE, "--cpu", "train.py"]
    assert _set(cpu, env) == {"OMP_NUM_THREADS": per_process(1), **kmp}
    two = [*ACCELERATE, "--cpu", "--num_processes", "2", "train.py"]
    assert _set(two, env) == {"OMP_NUM_THREADS": per_process(2), **kmp}
    mpi = {**env, "MPI_LOCALNRANKS": "4"}
    assert launched_environ(cpu, mpi)["OMP_NUM_THREADS"] == per_process(4)
    assert launched_environ(cpu, {**env, "OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"
    # Neither --cpu nor --multi_gpu: one process (on a machine without several devices).
    plain = [*ACCELERATE, "--num_processes", "2", "train.py"]
    assert _set(plain, env) == {"OMP_NUM_THREADS": "1"}
    assert "RANK" not in launched_environ(cpu, env)


def test_accelerate_commands_not_modelled(tmp_path: Path) -> None:
    env = {"HF_HOME": str(tmp_path)}
    unchanged = [
        [*ACCELERATE, "--config_file", "c.yaml", "--multi_gpu", "t.py"],
        [*ACCELERATE, "--use_deepspeed", "--num_processes", "2", "t.py"],
        [*ACCELERATE, "--tpu", "t.py"],
        [*ACCELERATE, "--cpu", "--mpirun_hostfile", "hosts", "--num_processes", "4", "t.py"],
        [*ACCELERATE, "--multi_gpu", "--cpu", "t.py"],  # accelerate refuses it
    ]
    for argv in unchanged:
        assert launched_environ(argv, env) == env, argv
    assert launched_environ(MULTI, {**env, "OMP_NUM_THREADS": "two"}) == {
        **env,
        "OMP_NUM_THREADS": "two",
    }
    # accelerate's default config file decides the launcher, unless --cpu.
    config = Path(default_accelerate_config(env))
    config.parent.mkdir(parents=True)
    config.write_text("distributed_type: MULTI_GPU\n")
    assert launched_environ(MULTI, env) == env
    assert "KMP_BLOCKTIME" in launched_environ([*ACCELERATE, "--cpu", "t.py"], env)


def test_per_allocation_values_stay_out(tmp_path: Path) -> None:
    env = {"HF_HOME": str(tmp_path), "MASTER_PORT": "29501"}
    argv = [*MULTI[:2], "--main_process_port", "29501", *MULTI[2:]]
    kept = select_env(launched_environ(argv, env))
    assert not [k for k in kept if k.startswith(("MASTER_", "ACCELERATE_"))]
    assert is_per_allocation_env("MASTER_PORT") and is_per_allocation_env("MASTER_ADDR")


def test_generate_records_what_accelerate_ranks_will_see(tmp_path: Path) -> None:
    env = {"HF_HOME": str(tmp_path)}
    ctx = CollectContext(argv=tuple(MULTI), cwd=tmp_path, environ=env, probe_interpreter=True)
    assert {k: v for k, v in collect_config(ctx)["selected_env"].items() if k in KEPT} == {
        "OMP_NUM_THREADS": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    }
    runtime = collect_runtime(ctx)
    assert runtime["mode"] == "torch_distributed" and runtime["node_count"] == 1
    assert runtime["torch_distributed"]["world_size"] == 2
    cpu = CollectContext(
        argv=(*ACCELERATE, "--cpu", "t.py"), cwd=tmp_path, environ=env, probe_interpreter=True
    )
    assert collect_runtime(cpu)["mode"] == "local"


DEEPSPEED = ["deepspeed", "--num_gpus", "2", "train.py", "--lr", "0.2"]


def test_deepspeed_gives_one_node_its_own_layout_variables(tmp_path: Path) -> None:
    hostfile = tmp_path / "absent"
    argv = [DEEPSPEED[0], "--hostfile", str(hostfile), *DEEPSPEED[1:]]
    seen = launched_environ(argv, {"CUDA_VISIBLE_DEVICES": "3"})
    # deepspeed's launch.py: Horovod's names, no LOCAL_WORLD_SIZE, no torchrun variables.
    assert {k: seen[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_SIZE", "CROSS_SIZE")} == {
        "RANK": "0",
        "WORLD_SIZE": "2",
        "LOCAL_SIZE": "2",
        "CROSS_SIZE": "1",
    }
    assert "LOCAL_WORLD_SIZE" not in seen and "TORCH_NCCL_ASYNC_ERROR_HANDLING" not in seen
    # --num_gpus N names devices 0..N-1, whatever the shell had; import deepspeed sets NVML's.
    assert seen["CUDA_VISIBLE_DEVICES"] == "0,1" and seen["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"
    own = launched_environ(argv, {"PYTORCH_NVML_BASED_CUDA_CHECK": "0", "DS_ACCELERATOR": "xpu"})
    assert own["PYTORCH_NVML_BASED_CUDA_CHECK"] == "0" and "CUDA_VISIBLE_DEVICES" not in own
    module = ["python", "-m", "deepspeed.launcher.runner", "--num_accelerators=3", "t.py"]
    assert launched_environ(module, {})["WORLD_SIZE"] == "3"


def test_deepspeed_commands_whose_layout_is_not_modelled(tmp_path: Path) -> None:
    # Without --num_gpus it counts the devices when it starts: only what every rank gets.
    counted = launched_environ(["deepspeed", "train.py"], {})
    assert counted == {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
    unchanged = [
        [*DEEPSPEED[:3], "--include", "localhost:0,1", "t.py"],
        [*DEEPSPEED[:3], "--exclude=localhost:1", "t.py"],
        [*DEEPSPEED[:3], "--force_multi", "t.py"],
        [*DEEPSPEED[:3], "--bind_cores_to_rank", "t.py"],
        [*DEEPSPEED[:3], "--num_nodes", "2", "t.py"],  # refused without a hostfile
    ]
    for argv in unchanged:
        assert launched_environ(argv, {"A": "1"}) == {"A": "1"}, argv
    # A hostfile: pdsh, MPI or Slurm may start the ranks on other nodes.
    hosts = tmp_path / "hostfile"
    hosts.write_text("worker-0 slots=2\n")
    assert launch_plan(["deepspeed", "-H", str(hosts), *DEEPSPEED[1:]], {}) is None
    assert DEEPSPEED_HOSTFILE == "/job/hostfile"


def test_generate_records_what_deepspeed_ranks_will_see(tmp_path: Path) -> None:
    ctx = CollectContext(argv=tuple(DEEPSPEED), cwd=tmp_path, environ={}, probe_interpreter=True)
    assert collect_config(ctx)["selected_env"] == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
    }
    runtime = collect_runtime(ctx)
    assert runtime["mode"] == "torch_distributed" and runtime["node_count"] == 1
    torchrun = CollectContext(argv=tuple(TWO), cwd=tmp_path, environ={}, probe_interpreter=True)
    assert runtime["torch_distributed"] == collect_runtime(torchrun)["torch_distributed"]
