"""A training command's words split into launcher, interpreter, entry and arguments.

``torchrun --nproc-per-node 2 train.py --lr 0.1``, ``python -u -m pkg.train x=1``,
``accelerate launch --multi_gpu train.py`` and a bare ``train.py --lr 0.1`` (what a hook
sees in ``sys.argv``) all name the same parts: which launcher starts the ranks and with
which of its own options, which interpreter with which of its options, the ``-m`` module or
the entry script, and the program's own arguments. The split is pure (no file is read, no
executable looked up), so it can run on a manifest's hostile ``command.argv`` as well as on
the live command line.

A launcher's options are told apart from the entry by a table of the options that take no
value (``--standalone``); any other option takes the next word unless written
``--opt=value``. Unknown launcher options are therefore read as taking a value, the way all
three launchers' argparse parsers read most of theirs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["WORKER_LAUNCHERS", "CommandShape", "is_interpreter", "parse_command"]


@dataclass(frozen=True)
class CommandShape:
    """The parts of one command line, each word as written."""

    #: "torchrun" (also for ``python -m torch.distributed.run|launch``), "accelerate",
    #: "deepspeed", "ray" (a Ray worker process, whose words are all Ray's), or None when
    #: no launcher starts the program.
    launcher: str | None = None
    #: The launcher's own option words, e.g. ("--nproc-per-node", "2").
    launcher_args: tuple[str, ...] = ()
    #: The interpreter word as written ("python", "/usr/bin/python3.11"); None when absent.
    interpreter: str | None = None
    #: Interpreter options such as "-u", "-O", "-X", "dev".
    interpreter_args: tuple[str, ...] = ()
    #: The ``-m`` module, if any.
    module: str | None = None
    #: The entry script as written, if any.
    script: str | None = None
    #: The program's own arguments (after script or module).
    args: tuple[str, ...] = ()


_INTERPRETER = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[dmt]*(\.exe)?$", re.IGNORECASE)

#: Interpreter short options that take a value (attached, ``-Xdev``, or the next word).
_PY_VALUE_OPTIONS = frozenset("XWcm")
#: Interpreter long options that take the next word.
_PY_LONG_VALUE_OPTIONS = frozenset({"--check-hash-based-pycs"})

#: Launcher options that take no value, by launcher, spelled with dashes (underscores in
#: the command are compared as dashes: torchrun and accelerate accept both).
_TORCHRUN_FLAGS = frozenset(
    {
        "--standalone",
        "--no-python",
        "--run-path",
        "-m",
        "--module",
        "--use-env",
        "--help",
        "-h",
        "--version",
    }
)
_ACCELERATE_FLAGS = frozenset(
    {
        "--cpu",
        "--multi-gpu",
        "--tpu",
        "--ipex",
        "--use-deepspeed",
        "--use-fsdp",
        "--use-megatron-lm",
        "--use-xpu",
        "--debug",
        "-q",
        "--quiet",
        "--same-network",
        "-m",
        "--module",
        "--no-python",
        "--dynamo-use-fullgraph",
        "--dynamo-use-dynamic",
        "--dynamo-use-regional-compilation",
        "--enable-cpu-affinity",
        "--tpu-use-cluster",
        "--tpu-use-sudo",
        "--downcast-bf16",
        "--help",
        "-h",
    }
)
_DEEPSPEED_FLAGS = frozenset(
    {
        "--no-python",
        "--no-local-rank",
        "--module",
        "--force-multi",
        "--save-pid",
        "--elastic-training",
        "--no-ssh-check",
        "--no-ssh",
        "--bind-cores-to-rank",
        "--help",
        "-h",
    }
)
#: The options after which the entry is a module name, not a script path.
_MODULE_FLAGS = frozenset({"-m", "--module"})
_NO_PYTHON_FLAGS = frozenset({"--no-python"})

#: ``python -m <module>`` that is a launcher, by module name.
_LAUNCHER_MODULES = {
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torchrun",
    "accelerate.commands.launch": "accelerate",
    "deepspeed.launcher.runner": "deepspeed",
}


#: Scripts through which a framework runs code it was handed, by the end of their path: a
#: Ray task's, actor's or Tune trial's ``sys.argv`` is Ray's worker with per-process words
#: (ports, session, worker and node ids); the program it runs is not in them.
_WORKER_SCRIPTS = {"ray/_private/workers/default_worker.py": "ray"}
#: The launchers that are a framework's worker process: their words are all per-process.
WORKER_LAUNCHERS = frozenset(_WORKER_SCRIPTS.values())


def _worker(script: str, words: Sequence[str], base: CommandShape) -> CommandShape | None:
    """A framework's worker (``script`` with its ``words``) as its launcher, else None."""
    path = script.replace("\\", "/")
    for ending, launcher in _WORKER_SCRIPTS.items():
        if path == ending or path.endswith("/" + ending):
            return CommandShape(
                launcher=launcher,
                launcher_args=tuple(words),
                interpreter=base.interpreter,
                interpreter_args=base.interpreter_args,
            )
    return None


def is_interpreter(word: str) -> bool:
    """True for a Python interpreter word: ``python``, ``python3.11``, ``/usr/bin/python3``,
    ``pypy3``, ``python.exe``."""
    return bool(_INTERPRETER.match(_basename(word)))


def _basename(word: str) -> str:
    return word.replace("\\", "/").rsplit("/", 1)[-1]


def _dashed(option: str) -> str:
    """An option's name with underscores as dashes (``--nproc_per_node`` as
    ``--nproc-per-node``), its ``=value`` dropped."""
    name = option.split("=", 1)[0]
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


@dataclass(frozen=True)
class _LauncherOptions:
    """What one launcher's option words are, up to its entry."""

    options: tuple[str, ...]
    rest: tuple[str, ...]
    module_entry: bool
    no_python: bool


def _launcher_options(words: Sequence[str], flags: frozenset[str]) -> _LauncherOptions:
    options: list[str] = []
    module_entry = no_python = False
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            options.append(word)
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name = _dashed(word)
        options.append(word)
        i += 1
        if name in _MODULE_FLAGS and name in flags:
            module_entry = True
        if name in _NO_PYTHON_FLAGS:
            no_python = True
        if "=" in word or name in flags or _attached_short_value(word):
            continue
        if i < len(words):
            options.append(words[i])
            i += 1
    return _LauncherOptions(tuple(options), tuple(words[i:]), module_entry, no_python)


def _attached_short_value(word: str) -> bool:
    """``-r3`` (a short option with its value attached) is one word."""
    return not word.startswith("--") and len(word) > 2


@dataclass(frozen=True)
class _Interpreted:
    """An interpreter's options and what follows them."""

    options: tuple[str, ...]
    module: str | None
    rest: tuple[str, ...]


def _interpreter_options(words: Sequence[str]) -> _Interpreted:
    """Split ``-u -X dev -m pkg.mod a b`` into options, the module and the rest. A ``-c``
    program text stays among the options; the words after it are its arguments."""
    options: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-" or not word.startswith("-"):
            break
        i += 1
        if word == "--":
            options.append(word)
            break
        if word.startswith("--"):
            options.append(word)
            if word in _PY_LONG_VALUE_OPTIONS and i < len(words):
                options.append(words[i])
                i += 1
            continue
        # A cluster of short flags, the last of which may take a value: ``-uO``, ``-Xdev``.
        for pos, char in enumerate(word[1:], start=1):
            if char not in _PY_VALUE_OPTIONS:
                continue
            attached = word[pos + 1 :]
            if not attached and i < len(words):
                attached = words[i]
                i += 1
            if char == "m":
                if pos > 1:
                    options.append(word[:pos])
                return _Interpreted(tuple(options), attached or None, tuple(words[i:]))
            options.append(word[: pos + 1])
            if attached:
                options.append(attached)
            if char == "c":
                return _Interpreted(tuple(options), None, tuple(words[i:]))
            break
        else:
            options.append(word)
    return _Interpreted(tuple(options), None, tuple(words[i:]))


def _entry(
    words: Sequence[str], *, module_entry: bool
) -> tuple[str | None, str | None, tuple[str, ...]]:
    """(module, script, args) of the words that start with the entry."""
    if not words:
        return None, None, ()
    if module_entry:
        return words[0], None, tuple(words[1:])
    return None, words[0], tuple(words[1:])


def _launched(
    launcher: str, words: Sequence[str], flags: frozenset[str], base: CommandShape
) -> CommandShape:
    """The shape of a launcher's words (its options, then the program it starts)."""
    parsed = _launcher_options(words, flags)
    program = parsed.rest
    if parsed.no_python and program and is_interpreter(program[0]):
        inner = _python(program[0], program[1:])
        return CommandShape(
            launcher=launcher,
            launcher_args=base.launcher_args + parsed.options,
            interpreter=inner.interpreter,
            interpreter_args=inner.interpreter_args,
            module=inner.module,
            script=inner.script,
            args=inner.args,
        )
    module, script, args = _entry(program, module_entry=parsed.module_entry)
    return CommandShape(
        launcher=launcher,
        launcher_args=base.launcher_args + parsed.options,
        interpreter=base.interpreter,
        interpreter_args=base.interpreter_args,
        module=module,
        script=script,
        args=args,
    )


def _python(interpreter: str, words: Sequence[str]) -> CommandShape:
    parsed = _interpreter_options(words)
    launcher = _LAUNCHER_MODULES.get(parsed.module or "")
    if launcher is not None:
        base = CommandShape(interpreter=interpreter, interpreter_args=parsed.options)
        return _launched(launcher, parsed.rest, _LAUNCHER_FLAGS[launcher], base)
    if parsed.module is not None:
        return CommandShape(
            interpreter=interpreter,
            interpreter_args=parsed.options,
            module=parsed.module,
            args=parsed.rest,
        )
    if "-c" in parsed.options:
        return CommandShape(
            interpreter=interpreter, interpreter_args=parsed.options, args=parsed.rest
        )
    _, script, args = _entry(parsed.rest, module_entry=False)
    base = CommandShape(interpreter=interpreter, interpreter_args=parsed.options)
    worker = _worker(script, args, base) if script is not None else None
    if worker is not None:
        return worker
    return CommandShape(
        interpreter=interpreter, interpreter_args=parsed.options, script=script, args=args
    )


_LAUNCHER_FLAGS = {
    "torchrun": _TORCHRUN_FLAGS,
    "accelerate": _ACCELERATE_FLAGS,
    "deepspeed": _DEEPSPEED_FLAGS,
}


def _torchrun(words: Sequence[str]) -> CommandShape | None:
    return _launched("torchrun", words[1:], _TORCHRUN_FLAGS, CommandShape())


def _accelerate(words: Sequence[str]) -> CommandShape | None:
    if len(words) < 2 or words[1] != "launch":
        return None  # ``accelerate config`` or ``env`` starts no program
    return _launched("accelerate", words[2:], _ACCELERATE_FLAGS, CommandShape())


def _deepspeed(words: Sequence[str]) -> CommandShape | None:
    return _launched("deepspeed", words[1:], _DEEPSPEED_FLAGS, CommandShape())


#: Launcher executables by base name.
_LAUNCHERS: dict[str, Callable[[Sequence[str]], CommandShape | None]] = {
    "torchrun": _torchrun,
    "accelerate": _accelerate,
    "deepspeed": _deepspeed,
}


def parse_command(argv: Sequence[str]) -> CommandShape:
    """The parts of ``argv``. A first word that is neither a launcher nor an interpreter is
    the entry script (``sys.argv`` as a hook sees it, or an executable)."""
    words = [str(word) for word in argv]
    if not words:
        return CommandShape()
    first = words[0]
    name = (
        os.path.splitext(_basename(first))[0]
        if _basename(first).endswith(".exe")
        else _basename(first)
    )
    launch = _LAUNCHERS.get(name)
    if launch is not None:
        shape = launch(words)
        if shape is not None:
            return shape
    if is_interpreter(first):
        return _python(first, words[1:])
    worker = _worker(first, words[1:], CommandShape())
    if worker is not None:
        return worker
    return CommandShape(script=first, args=tuple(words[1:]))
