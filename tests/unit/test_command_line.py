"""A command line splits into launcher, interpreter, entry and arguments the way each
launcher and Python itself read it."""

from __future__ import annotations

import pytest

from expdna.manifest.command_line import CommandShape, is_interpreter, parse_command

RAY_WORKER = "ray/_private/workers/default_worker.py"

CASES: list[tuple[list[str], CommandShape]] = [
    (
        ["python", "train.py", "--lr", "0.1"],
        CommandShape(interpreter="python", script="train.py", args=("--lr", "0.1")),
    ),
    (
        ["/usr/bin/python3.11", "-u", "-X", "dev", "-O", "train.py", "config/x.py"],
        CommandShape(
            interpreter="/usr/bin/python3.11",
            interpreter_args=("-u", "-X", "dev", "-O"),
            script="train.py",
            args=("config/x.py",),
        ),
    ),
    (
        ["python3", "-uO", "-Wignore", "train.py"],
        CommandShape(
            interpreter="python3", interpreter_args=("-uO", "-W", "ignore"), script="train.py"
        ),
    ),
    (
        ["python", "-m", "pkg.train", "model.lr=0.1", "+trainer=gpu"],
        CommandShape(
            interpreter="python", module="pkg.train", args=("model.lr=0.1", "+trainer=gpu")
        ),
    ),
    (
        ["python", "-um", "pkg.train"],
        CommandShape(interpreter="python", interpreter_args=("-u",), module="pkg.train"),
    ),
    (
        ["python", "-mpkg.train", "x"],
        CommandShape(interpreter="python", module="pkg.train", args=("x",)),
    ),
    (
        ["python", "-c", "print(1)", "a"],
        CommandShape(interpreter="python", interpreter_args=("-c", "print(1)"), args=("a",)),
    ),
    (
        ["torchrun", "--standalone", "--nproc-per-node", "2", "train.py", "--lr", "0.1"],
        CommandShape(
            launcher="torchrun",
            launcher_args=("--standalone", "--nproc-per-node", "2"),
            script="train.py",
            args=("--lr", "0.1"),
        ),
    ),
    (
        ["torchrun", "--nproc_per_node=2", "--nnodes", "1", "-m", "pkg.train", "--x"],
        CommandShape(
            launcher="torchrun",
            launcher_args=("--nproc_per_node=2", "--nnodes", "1", "-m"),
            module="pkg.train",
            args=("--x",),
        ),
    ),
    (
        ["/opt/venv/bin/torchrun", "--no-python", "python", "-u", "train.py", "a"],
        CommandShape(
            launcher="torchrun",
            launcher_args=("--no-python",),
            interpreter="python",
            interpreter_args=("-u",),
            script="train.py",
            args=("a",),
        ),
    ),
    (
        ["python", "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py", "--lr", "1"],
        CommandShape(
            launcher="torchrun",
            launcher_args=("--nproc-per-node", "2"),
            interpreter="python",
            script="train.py",
            args=("--lr", "1"),
        ),
    ),
    (
        [
            "python3",
            "-u",
            "-m",
            "torch.distributed.launch",
            "--use_env",
            "--nproc_per_node",
            "4",
            "main.py",
        ],
        CommandShape(
            launcher="torchrun",
            launcher_args=("--use_env", "--nproc_per_node", "4"),
            interpreter="python3",
            interpreter_args=("-u",),
            script="main.py",
        ),
    ),
    (
        ["accelerate", "launch", "--multi_gpu", "--num_processes", "2", "run_glue.py", "--bs", "8"],
        CommandShape(
            launcher="accelerate",
            launcher_args=("--multi_gpu", "--num_processes", "2"),
            script="run_glue.py",
            args=("--bs", "8"),
        ),
    ),
    (
        ["accelerate", "launch", "-m", "pkg.train", "a"],
        CommandShape(launcher="accelerate", launcher_args=("-m",), module="pkg.train", args=("a",)),
    ),
    (
        ["deepspeed", "--num_gpus", "2", "--no_local_rank", "train.py", "--deepspeed", "ds.json"],
        CommandShape(
            launcher="deepspeed",
            launcher_args=("--num_gpus", "2", "--no_local_rank"),
            script="train.py",
            args=("--deepspeed", "ds.json"),
        ),
    ),
    (
        ["train.py", "config/train_shakespeare_char.py", "--compile=False"],
        CommandShape(
            script="train.py", args=("config/train_shakespeare_char.py", "--compile=False")
        ),
    ),
    (
        ["accelerate", "config"],
        CommandShape(script="accelerate", args=("config",)),
    ),
    ([], CommandShape()),
    (["python"], CommandShape(interpreter="python")),
    # A Ray worker's sys.argv (a task, actor or Tune trial): Ray's words, no program.
    (
        [f"/v/lib/python3.11/site-packages/{RAY_WORKER}", "--node-ip-address=10.0.0.7"],
        CommandShape(launcher="ray", launcher_args=("--node-ip-address=10.0.0.7",)),
    ),
    (
        ["/v/bin/python", f"/v/site-packages/{RAY_WORKER}", "--worker-id=7d65"],
        CommandShape(
            launcher="ray", launcher_args=("--worker-id=7d65",), interpreter="/v/bin/python"
        ),
    ),
    # Only Ray's own worker script is one: a file of that name elsewhere is a program.
    (
        ["myproj/workers/default_worker.py", "--lr", "1"],
        CommandShape(script="myproj/workers/default_worker.py", args=("--lr", "1")),
    ),
]


@pytest.mark.parametrize(
    ("argv", "expected"), CASES, ids=[" ".join(a) or "empty" for a, _ in CASES]
)
def test_parse_command(argv: list[str], expected: CommandShape) -> None:
    assert parse_command(argv) == expected


def test_an_option_without_its_value_at_the_end_is_kept() -> None:
    assert parse_command(["torchrun", "--nproc-per-node"]) == CommandShape(
        launcher="torchrun", launcher_args=("--nproc-per-node",)
    )


@pytest.mark.parametrize(
    "word",
    [
        "python",
        "python3",
        "python3.11",
        "/usr/bin/python3.12",
        "pypy3",
        "python.exe",
        "python3.13t",
    ],
)
def test_interpreter_words(word: str) -> None:
    assert is_interpreter(word)


@pytest.mark.parametrize("word", ["train.py", "pythonic", "ipython", "torchrun", "python-config"])
def test_other_words_are_no_interpreter(word: str) -> None:
    assert not is_interpreter(word)
