"""The command a shell can run to start this process's run again, as the hook records it.

Inside the training script ``sys.argv`` is only the script and its arguments
(``["train.py", "--lr", "0.1"]``): the interpreter, its options and any launcher are gone.
The hook records the whole command in ``command.argv`` instead, from what the process can
see of how it was started:

1. A launcher, when the environment says one started this process: torchrun
   (``TORCHELASTIC_RUN_ID``), ``accelerate launch`` (``ACCELERATE_MIXED_PRECISION``…) or
   deepspeed (``CROSS_SIZE``). Its command line is read from the nearest ancestor process
   whose ``/proc/<pid>/cmdline`` is that launcher starting this script with these
   arguments (``python /venv/bin/torchrun`` becomes ``torchrun``; deepspeed's is the
   grandparent, its parent being ``python -u -m deepspeed.launcher.launch
   --world_info=…``). Where no ancestor can be read, the command is rebuilt from the
   launcher's variables (``torchrun --nnodes=1 --nproc-per-node=2 train.py …``,
   ``deepspeed --num_nodes=1 --num_gpus=2 train.py …``).
2. Otherwise ``sys.orig_argv`` (the interpreter as invoked, its options, ``-m``), when it
   starts this script with these arguments.
3. Otherwise the parent's command line when it does (a ``multiprocessing`` spawn child,
   such as a Lightning ``ddp_spawn`` rank, runs ``python -c …`` itself).
4. Otherwise ``sys.argv`` as it is.

A command that does not start *this* script with *these* arguments (``sys.argv`` rewritten
by the program or a test) is never taken: then ``sys.argv`` stands.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from expdna.manifest.command_line import CommandShape, is_interpreter, parse_command

#: A launcher's variables in its workers, by launcher (any one of them names it).
LAUNCHER_ENV: dict[str, tuple[str, ...]] = {
    "accelerate": ("ACCELERATE_MIXED_PRECISION", "ACCELERATE_DYNAMO_BACKEND", "ACCELERATE_USE_CPU"),
    "deepspeed": ("CROSS_SIZE",),
    "torchrun": ("TORCHELASTIC_RUN_ID",),
}
#: Launcher executables whose command line starts with the interpreter running them.
_LAUNCHER_EXECUTABLES = frozenset({"torchrun", "accelerate", "deepspeed"})
#: How many ancestors are read (deepspeed's runner is the worker's grandparent).
MAX_ANCESTORS = 4
#: ``--local_rank=N`` that torch.distributed.launch and deepspeed add to the script's words.
_LOCAL_RANK = re.compile(r"^--local[-_]rank=\d+$")

Ancestors = Callable[[], Iterable[list[str]]]


def launcher_from_env(environ: Mapping[str, str]) -> str | None:
    """The launcher whose variables ``environ`` holds (accelerate and deepspeed start their
    workers through torch's elastic agent too, so they are asked first)."""
    for name, variables in LAUNCHER_ENV.items():
        if any(environ.get(variable) for variable in variables):
            return name
    return None


def _basename(word: str) -> str:
    return word.replace("\\", "/").rsplit("/", 1)[-1]


def _own_args(argv: Sequence[str]) -> tuple[str, ...]:
    """The script's words without the ``--local_rank=N`` a launcher added."""
    return tuple(word for word in argv[1:] if not _LOCAL_RANK.match(word))


def _entry_name(word: str) -> str:
    return os.path.splitext(_basename(word))[0]


def _starts_this(shape: CommandShape, argv: Sequence[str]) -> bool:
    """Whether ``shape`` starts the script ``argv[0]`` (or its ``-m`` module) with ``argv``'s
    arguments."""
    if not argv or tuple(shape.args) != _own_args(argv):
        return False
    if shape.script is not None:
        return _basename(shape.script) == _basename(argv[0])
    if shape.module is not None:
        # ``python -m pkg.train``: sys.argv[0] is pkg/train.py (or pkg/train/__main__.py).
        name = _entry_name(argv[0])
        last = shape.module.rsplit(".", 1)[-1]
        return name == last or (name == "__main__" and _basename(os.path.dirname(argv[0])) == last)
    return False


def _as_typed(cmdline: Sequence[str]) -> list[str]:
    """A launcher's command line as a shell runs it: ``python /venv/bin/torchrun …`` and
    ``/venv/bin/torchrun …`` as ``torchrun …``."""
    words = list(cmdline)
    if (
        len(words) >= 2
        and is_interpreter(words[0])
        and _basename(words[1]) in _LAUNCHER_EXECUTABLES
    ):
        words = words[1:]
    if words and _basename(words[0]) in _LAUNCHER_EXECUTABLES:
        words[0] = _basename(words[0])
    return words


def _entry_words(argv: Sequence[str], orig_argv: Sequence[str] | None) -> list[str]:
    """The entry as the launcher is told it: ``-m pkg.train`` or the script path."""
    if orig_argv:
        shape = parse_command(orig_argv)
        if shape.module is not None and _starts_this(shape, argv):
            return ["-m", shape.module]
    return [argv[0]]


def _torchrun_words(entry: list[str], argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    options = []
    local = environ.get("LOCAL_WORLD_SIZE", "")
    world = environ.get("WORLD_SIZE", "")
    if local.isdigit() and world.isdigit() and int(local) > 0:
        options = [f"--nnodes={int(world) // int(local)}", f"--nproc-per-node={local}"]
    return ["torchrun", *options, *entry, *_own_args(argv)]


def _accelerate_words(
    entry: list[str], argv: Sequence[str], environ: Mapping[str, str]
) -> list[str]:
    return ["accelerate", "launch", *entry, *_own_args(argv)]


def _deepspeed_words(
    entry: list[str], argv: Sequence[str], environ: Mapping[str, str]
) -> list[str]:
    options = []
    nodes = environ.get("CROSS_SIZE", "")
    local = environ.get("LOCAL_SIZE", "")
    if nodes.isdigit() and local.isdigit() and int(local) > 0:
        options = [f"--num_nodes={nodes}", f"--num_gpus={local}"]
    # Its launcher adds --local_rank=N to every rank's words unless told not to.
    if not any(_LOCAL_RANK.match(word) for word in argv[1:]):
        options.append("--no_local_rank")
    module = ["--module", *entry[1:]] if entry[0] == "-m" else entry
    return ["deepspeed", *options, *module, *_own_args(argv)]


#: Launcher -> its command rebuilt from the entry words (``-m pkg`` or the script), the
#: rank's ``sys.argv`` and the variables the launcher set, where no ancestor can be read.
REBUILT: dict[str, Callable[[list[str], Sequence[str], Mapping[str, str]], list[str]]] = {
    "torchrun": _torchrun_words,
    "accelerate": _accelerate_words,
    "deepspeed": _deepspeed_words,
}
assert set(REBUILT) == set(LAUNCHER_ENV)


def runnable_command(
    argv: Sequence[str],
    *,
    orig_argv: Sequence[str] | None,
    environ: Mapping[str, str],
    ancestors: Ancestors,
) -> list[str]:
    """The whole command that started ``argv`` (see the module doc). Pure but for
    ``ancestors``, which yields the parent's command line, then the grandparent's…"""
    words = [str(word) for word in argv]
    if not words:
        return list(orig_argv or [])
    launcher = launcher_from_env(environ)
    if launcher is not None:
        for cmdline in ancestors():
            typed = _as_typed(cmdline)
            shape = parse_command(typed)
            if shape.launcher is not None and _starts_this(shape, words):
                return typed
        return REBUILT[launcher](_entry_words(words, orig_argv), words, environ)
    if orig_argv and _starts_this(parse_command(orig_argv), words):
        return list(orig_argv)
    for cmdline in ancestors():
        if _starts_this(parse_command(cmdline), words):
            return _as_typed(cmdline)
        break  # only the parent can be a spawn child's own command
    return words


def _read_cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    words = raw.split(b"\0")
    if words and words[-1] == b"":
        words.pop()
    return [os.fsdecode(word) for word in words] or None


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ")".
    fields = stat.rsplit(")", 1)[-1].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def proc_ancestors(pid: int | None = None, depth: int = MAX_ANCESTORS) -> Iterator[list[str]]:
    """Command lines of this process's parent, grandparent… (Linux ``/proc``; none where it
    cannot be read). Stops at init."""
    current: int | None = os.getppid() if pid is None else pid
    for _ in range(depth):
        if current is None or current <= 1:
            return
        cmdline = _read_cmdline(current)
        if cmdline is None:
            return
        yield cmdline
        current = _parent_of(current)


def this_command() -> list[str]:
    """The whole command that started this process's training script."""
    return runnable_command(
        list(getattr(sys, "argv", [])),
        orig_argv=getattr(sys, "orig_argv", None),
        environ=os.environ,
        ancestors=proc_ancestors,
    )
