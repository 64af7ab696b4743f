"""The hook records the command a shell can run: launcher, interpreter, script, arguments."""

from __future__ import annotations

from collections.abc import Iterable

from expdna.integrations.launch import Ancestors, runnable_command

ARGV = ["train.py", "--lr", "0.1"]


def _from(*cmdlines: list[str]) -> Ancestors:
    def ancestors() -> Iterable[list[str]]:
        return [list(c) for c in cmdlines]

    return ancestors


def test_plain_python_takes_the_interpreter_from_orig_argv() -> None:
    got = runnable_command(
        ARGV, orig_argv=["python", "-u", *ARGV], environ={}, ancestors=_from(["bash"])
    )
    assert got == ["python", "-u", "train.py", "--lr", "0.1"]


def test_module_entry_is_kept_as_dash_m() -> None:
    argv = ["/repo/pkg/train.py", "x=1"]
    got = runnable_command(
        argv, orig_argv=["python3", "-m", "pkg.train", "x=1"], environ={}, ancestors=_from()
    )
    assert got == ["python3", "-m", "pkg.train", "x=1"]


def test_a_rewritten_sys_argv_is_never_paired_with_another_command() -> None:
    got = runnable_command(
        ARGV,
        orig_argv=["python", "-m", "pytest", "-q"],
        environ={},
        ancestors=_from(["bash", "-c", "pytest"]),
    )
    assert got == ARGV


def test_torchrun_from_the_parent_command_line() -> None:
    parent = ["/venv/bin/python3", "/venv/bin/torchrun", "--nproc-per-node", "2", *ARGV]
    got = runnable_command(
        ARGV,
        orig_argv=["/venv/bin/python3", "-u", *ARGV],
        environ={"TORCHELASTIC_RUN_ID": "none", "LOCAL_WORLD_SIZE": "2", "WORLD_SIZE": "2"},
        ancestors=_from(parent, ["bash"]),
    )
    assert got == ["torchrun", "--nproc-per-node", "2", "train.py", "--lr", "0.1"]


def test_torchrun_rebuilt_from_its_variables_without_proc() -> None:
    got = runnable_command(
        ARGV,
        orig_argv=["/venv/bin/python3", "-u", *ARGV],
        environ={"TORCHELASTIC_RUN_ID": "x", "LOCAL_WORLD_SIZE": "2", "WORLD_SIZE": "4"},
        ancestors=_from(),
    )
    assert got == ["torchrun", "--nnodes=2", "--nproc-per-node=2", *ARGV]


def test_deepspeed_grandparent_and_its_local_rank_word() -> None:
    parent = ["python", "-u", "-m", "deepspeed.launcher.launch", "--world_info=abc", *ARGV]
    grandparent = ["/venv/bin/python", "/venv/bin/deepspeed", "--num_gpus", "2", *ARGV]
    got = runnable_command(
        ["train.py", "--local_rank=0", "--lr", "0.1"],
        orig_argv=["python", "-u", "train.py", "--local_rank=0", "--lr", "0.1"],
        environ={"CROSS_SIZE": "1", "LOCAL_SIZE": "2"},
        ancestors=_from(parent, grandparent),
    )
    assert got == ["deepspeed", "--num_gpus", "2", *ARGV]


def test_deepspeed_rebuilt_from_its_variables_without_proc() -> None:
    environ = {"CROSS_SIZE": "1", "LOCAL_SIZE": "2", "WORLD_SIZE": "2"}
    got = runnable_command(
        ["train.py", "--local_rank=0", "--lr", "0.1"],
        orig_argv=None,
        environ=environ,
        ancestors=_from(),
    )
    assert got == ["deepspeed", "--num_nodes=1", "--num_gpus=2", *ARGV]
    # No --local_rank=N word: the launcher was told --no_local_rank; a module stays one.
    got = runnable_command(
        ["/repo/pkg/train.py", "--lr", "0.1"],
        orig_argv=["python", "-u", "-m", "pkg.train", "--lr", "0.1"],
        environ=environ,
        ancestors=_from(["python", "-u", "-m", "deepspeed.launcher.launch", "--world_info=x"]),
    )
    assert got == [
        "deepspeed", "--num_nodes=1", "--num_gpus=2", "--no_local_rank", "--module", "pkg.train",
        "--lr", "0.1",
    ]  # fmt: skip


def test_accelerate_is_named_though_torchrun_variables_are_set_too() -> None:
    parent = ["/venv/bin/python", "/venv/bin/accelerate", "launch", "--multi_gpu", *ARGV]
    got = runnable_command(
        ARGV,
        orig_argv=["python", *ARGV],
        environ={"TORCHELASTIC_RUN_ID": "1", "ACCELERATE_MIXED_PRECISION": "no"},
        ancestors=_from(parent),
    )
    assert got == ["accelerate", "launch", "--multi_gpu", *ARGV]


def test_a_spawn_child_takes_its_parents_command() -> None:
    got = runnable_command(
        ARGV,
        orig_argv=["python", "-c", "from multiprocessing.spawn import spawn_main"],
        environ={},
        ancestors=_from(["python", *ARGV], ["bash"]),
    )
    assert got == ["python", *ARGV]
