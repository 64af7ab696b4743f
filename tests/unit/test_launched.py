"""What generate models of a torchrun command: the environment and layout its ranks get.

The rules follow torch 2.13's torch/distributed/run.py (OMP_NUM_THREADS) and its local
elastic agent (TORCH_NCCL_ASYNC_ERROR_HANDLING, the layout variables); the real torchrun
is compared with generate in tests/integration/test_path_agree.py.
"""

from __future__ import annotations

from pathlib import Path

from expdna.collectors.config import collect_config
from expdna.collectors.context import CollectContext
from expdna.collectors.launched import launched_environ, torchrun_plan
from expdna.collectors.runtime import collect_runtime

TWO = ["torchrun", "--standalone", "--nproc-per-node", "2", "train.py", "--lr", "0.2"]


def test_plan_reads_the_launchers_options() -> None:
    assert torchrun_plan(TWO) is not None
    assert torchrun_plan(["python", "train.py"]) is None
    assert torchrun_plan(["accelerate", "launch", "train.py"]) is None
    plan = torchrun_plan(["python", "-m", "torch.distributed.run", "--nproc_per_node=4", "t.py"])
    assert plan is not None and (plan.nproc_per_node, plan.one_node) == (4, True)
    plan = torchrun_plan(["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "t.py"])
    assert plan is not None and (plan.nproc_per_node, plan.one_node) == (8, False)
    plan = torchrun_plan(["torchrun", "--nproc-per-node", "gpu", "t.py"])
    assert plan is not None and plan.nproc_per_node is None


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
