"""The command a rerun starts, rebuilt from the recorded one.

The recorded words are kept (``python train.py …``, ``torchrun --nproc-per-node 2 --nnodes
1 train.py …``, ``accelerate launch …``, ``python -m pkg.mod …``), with two changes:

- a command that starts with its script and names no interpreter (``sys.argv`` as an
  older hook recorded it) gets one: ``python`` in the script, this interpreter in
  ``--confirm``;
- a launcher's per-allocation rendezvous values (``--rdzv-endpoint``, ``--rdzv-id``,
  master address and port, the node rank) belong to the allocation the run had, not to
  its setup: they become shell variables the user sets for this one (:data:`RENDEZVOUS`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from expdna.manifest.command_line import CommandShape, parse_command

#: Launcher options (dashes for underscores) whose value names one allocation, and the
#: variable a rerun takes it from.
RENDEZVOUS: dict[str, str] = {
    "--rdzv-endpoint": "RDZV_ENDPOINT",
    "--rdzv-id": "RDZV_ID",
    "--master-addr": "MASTER_ADDR",
    "--master-port": "MASTER_PORT",
    "--node-rank": "NODE_RANK",
    "--main-process-ip": "MASTER_ADDR",
    "--main-process-port": "MASTER_PORT",
    "--machine-rank": "NODE_RANK",
}
#: The interpreter a script-first command is given in the dry-run's script.
SCRIPT_INTERPRETER = "python"


@dataclass(frozen=True)
class Rendezvous:
    """One per-allocation value in the launcher's options."""

    index: int  # the argv index of the word holding the value
    option: str  # the option as written ("--master-port")
    variable: str  # the shell variable that gives it ("MASTER_PORT")
    recorded: str  # the value as recorded
    attached: bool  # written as one word, "--master-port=29500"


@dataclass(frozen=True)
class Relaunch:
    """The recorded words, what they are, and what a rerun changes in them."""

    argv: tuple[str, ...]
    shape: CommandShape
    #: True when the recorded command named no interpreter and one is put first.
    needs_interpreter: bool
    rendezvous: tuple[Rendezvous, ...]

    def words(self, interpreter: str = SCRIPT_INTERPRETER) -> list[str]:
        """The recorded words, with ``interpreter`` first where none was recorded."""
        return [interpreter, *self.argv] if self.needs_interpreter else list(self.argv)

    def offset(self) -> int:
        """How far :meth:`words` shifts the recorded argv indexes."""
        return 1 if self.needs_interpreter else 0

    def missing(self, environ: Mapping[str, str]) -> list[str]:
        """The rendezvous variables ``environ`` does not give, in order, each once."""
        names = [r.variable for r in self.rendezvous if not environ.get(r.variable)]
        return list(dict.fromkeys(names))

    def resolved(self, environ: Mapping[str, str]) -> list[str]:
        """The words ``--confirm`` starts: this interpreter where none was recorded and
        the rendezvous values from ``environ`` (see :meth:`missing`)."""
        words = self.words(sys.executable)
        for r in self.rendezvous:
            value = environ[r.variable]
            i = r.index + self.offset()
            words[i] = f"{r.option}={value}" if r.attached else value
        return words


def _launcher_start(argv: Sequence[str], options: Sequence[str]) -> int | None:
    """Where the launcher's option words begin in ``argv``."""
    n = len(options)
    if n == 0:
        return None
    return next(
        (i for i in range(1, len(argv) - n + 1) if tuple(argv[i : i + n]) == tuple(options)),
        None,
    )


def _dashed(option: str) -> str:
    name = option.split("=", 1)[0]
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name


def _rendezvous(argv: Sequence[str], shape: CommandShape) -> list[Rendezvous]:
    start = _launcher_start(argv, shape.launcher_args)
    if start is None:
        return []
    found = []
    options = shape.launcher_args
    i = 0
    while i < len(options):
        word = options[i]
        variable = RENDEZVOUS.get(_dashed(word))
        if variable is not None and "=" in word:
            option, value = word.split("=", 1)
            found.append(Rendezvous(start + i, option, variable, value, attached=True))
        elif variable is not None and i + 1 < len(options):
            found.append(Rendezvous(start + i + 1, word, variable, options[i + 1], False))
            i += 1
        i += 1
    return found


def plan(argv: Sequence[str]) -> Relaunch:
    """What a rerun of ``argv`` starts."""
    shape = parse_command(argv)
    needs = (
        shape.launcher is None
        and shape.interpreter is None
        and shape.script is not None
        and shape.script.endswith(".py")
    )
    return Relaunch(tuple(argv), shape, needs, tuple(_rendezvous(argv, shape)))
