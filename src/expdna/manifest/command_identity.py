"""The command's part of the DNA (version 3): what of ``command.argv`` names the setup.

``command.argv`` is split by :func:`expdna.manifest.command_line.parse_command` and
projected to:

- ``launcher``: the launcher's name and its option words, names read with ``_`` as ``-``,
  ``--opt=value`` as two words, and the per-run options (:data:`PER_RUN_LAUNCHER_OPTIONS`:
  rendezvous ids and endpoints, addresses, ports, node ranks, log folders) left out; a Ray
  worker (``.../ray/_private/workers/default_worker.py``, the ``sys.argv`` of every Ray task,
  actor and Tune trial) is the launcher ``ray`` with no option words;
- ``interpreter``: ``"python"`` when a Python interpreter runs the entry (named, or
  implied by a ``-m`` module, a ``.py`` script or a launcher), else absent; and its options
  but those that change no result (``-u``, ``-B``);
- ``module``, or ``script``: the entry script relative to its repository
  (``command.entry``, which the collector writes, when it names the same file as argv's
  entry word), else as written without a leading ``./``;
- ``args``: the program's words, ``--key=value`` as two words, without the options the
  config rules leave out of ``resolved_args`` (per-run names such as ``--output_dir``,
  config-file arguments, ``dna_ignore``'d ones, redacted values), each with its value;
  Hydra overrides (``key=value``) by the last part of their key, ``hydra.*`` always; a
  redacted positional word becomes ``"<masked>"``.

A word that is not a string makes the projection ``{"argv": argv}`` as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from expdna.manifest.command_line import WORKER_LAUNCHERS, parse_command
from expdna.manifest.globs import compile_globs

MASK = "<masked>"

#: Launcher options (dashed, without the leading ``--``) that name one allocation or its logs.
PER_RUN_LAUNCHER_OPTIONS: tuple[str, ...] = (
    "rdzv-id",
    "rdzv-endpoint",
    "rdzv-conf",
    "master-addr",
    "master-port",
    "main-process-ip",
    "main-process-port",
    "node-rank",
    "machine-rank",
    "local-addr",
    "log-dir",
    "logs-specs",
    "redirects",
    "tee",
    "local-ranks-filter",
    "monitor-interval",
    "hostfile",
    "include",
    "exclude",
    "save-pid",
    "ssh-port",
    "comment",
    "r",
    "t",
    "H",
    "i",
    "e",
)
#: Interpreter options that change no result.
NEUTRAL_INTERPRETER_OPTIONS = frozenset({"-u", "-B"})

_PER_RUN_LAUNCHER = compile_globs(PER_RUN_LAUNCHER_OPTIONS)
# ASCII \w, as every language reads it.
_OPTION = re.compile(r"^--?[A-Za-z_][\w.-]*$", re.ASCII)
_OVERRIDE = re.compile(r"^[+~]{0,2}([A-Za-z_][\w.@/-]*)=(.*)$", re.DOTALL | re.ASCII)

Hidden = Callable[[str, str], bool]


def _split_assignments(words: Sequence[str]) -> list[str]:
    """``--key=value`` as ``--key``, ``value``."""
    out: list[str] = []
    for word in words:
        name, eq, value = word.partition("=")
        if eq and word.startswith("-") and _OPTION.match(name):
            out += [name, value]
        else:
            out.append(word)
    return out


def _launcher_words(words: Sequence[str]) -> list[str]:
    """The launcher's options, dashed, per-run ones and their values left out."""
    out: list[str] = []
    previous_hidden = False
    for word in _split_assignments(words):
        if word.startswith("-") and _OPTION.match(word):
            name = word.lstrip("-").replace("_", "-")
            previous_hidden = _PER_RUN_LAUNCHER.match(name) is not None
            if not previous_hidden:
                out.append(("--" if word.startswith("--") else "-") + name)
            continue
        if not previous_hidden:
            out.append(word)
        previous_hidden = False
    return out


def masked_args(words: Sequence[str], hidden: Hidden, *, hydra: bool = True) -> list[str]:
    """The program's words without the options ``hidden(key, value)`` names (left out with
    their values, as their keys leave ``resolved_args``), ``hidden("", word)`` positional
    words masked, and, with ``hydra``, every ``hydra.*`` override left out."""
    out: list[str] = []
    pending: str | None = None  # an option whose value may come next
    for word in _split_assignments(words):
        if word.startswith("-") and _OPTION.match(word):
            if pending is not None and not hidden(pending.lstrip("-"), ""):
                out.append(pending)  # a flag of its own
            pending = word
            continue
        if pending is not None:
            if not hidden(pending.lstrip("-"), word):
                out += [pending, word]
            pending = None
            continue
        override = _OVERRIDE.match(word)
        if override is not None:
            name, value = override.group(1), override.group(2)
            last = name.rsplit(".", 1)[-1].rsplit("/", 1)[-1]
            if not ((hydra and name.split(".", 1)[0] == "hydra") or hidden(last, value)):
                out.append(word)
        else:
            out.append(MASK if hidden("", word) else word)
    if pending is not None and not hidden(pending.lstrip("-"), ""):
        out.append(pending)
    return out


def _script(script: str, entry: Any) -> str:
    written = script.replace("\\", "/")
    while written.startswith("./"):
        written = written[2:]
    same_file = isinstance(entry, str) and entry.rsplit("/", 1)[-1] == written.rsplit("/", 1)[-1]
    return entry if same_file and isinstance(entry, str) and entry else written


def project_command(command: Mapping[str, Any], hidden: Hidden) -> dict[str, Any]:
    """The command's identity (see the module doc); ``hidden(key, value)`` says which
    argument values the config rules leave out (key ``""`` for a positional word)."""
    argv = command.get("argv")
    if not isinstance(argv, list):
        return {}
    if not all(isinstance(word, str) for word in argv):
        return {"argv": argv}
    shape = parse_command(argv)
    projected: dict[str, Any] = {}
    if shape.launcher is not None:
        projected["launcher"] = {
            "name": shape.launcher,
            "args": (
                [] if shape.launcher in WORKER_LAUNCHERS else _launcher_words(shape.launcher_args)
            ),
        }
    python = (
        shape.interpreter is not None
        or shape.module is not None
        or shape.launcher is not None
        or (shape.script or "").endswith(".py")
    )
    if python:
        projected["interpreter"] = {
            "name": "python",
            "args": [a for a in shape.interpreter_args if a not in NEUTRAL_INTERPRETER_OPTIONS],
        }
    if shape.module is not None:
        projected["module"] = shape.module
    elif shape.script is not None:
        projected["script"] = _script(shape.script, command.get("entry"))
    projected["args"] = masked_args(shape.args, hidden)
    return projected
