"""Resolved arguments parsed from argv, and the whitelisted environment."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from expdna.collectors.context import CollectContext
from expdna.collectors.launched import launched_environ
from expdna.manifest.command_line import parse_command

#: Environment variables are collected only by these prefixes or exact names.
ENV_PREFIXES: tuple[str, ...] = (
    "CUDA_",
    "NCCL_",
    "RAY_",
    "SLURM_",
    "HF_",
    "SGLANG_",
    "TORCH_",
    "PYTORCH_",
    "MKL_",
    "OPENBLAS_",
    "KMP_",
)
ENV_NAMES: frozenset[str] = frozenset(
    {"PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS"}
)

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
# A letter of any script or "_" first (``--学习率``, ``--ключ``), never a digit (``-1``).
_OPTION = re.compile(r"^--?[^\W\d][\w.-]*(=.*)?$", re.DOTALL)


#: Words that are booleans however a script reads them (nanoGPT's ``literal_eval``,
#: ``HfArgumentParser``'s ``string_to_bool``), so the CLI records what the hook records.
_BOOLEANS = {"True": True, "true": True, "False": False, "false": False}
#: A Hydra override word: ``key=value``, ``+key=value``, ``++key=value`` (a dotted key).
_OVERRIDE = re.compile(r"^(\+{0,2})([A-Za-z_][\w.@/-]*)=(.*)$", re.DOTALL | re.ASCII)
#: A Hydra deletion: ``~key`` or ``~key=value``.
_DELETION = re.compile(r"^~([A-Za-z_][\w.@/-]*)(=.*)?$", re.DOTALL | re.ASCII)


def typed(word: str) -> Any:
    """``word`` as an int, float or boolean when it is written as one; otherwise the string."""
    if word in _BOOLEANS:
        return _BOOLEANS[word]
    if _INT.match(word):
        return int(word)
    if _FLOAT.match(word):
        return float(word)
    return word


def _is_option(word: str) -> bool:
    return word != "--" and _OPTION.match(word) is not None


_PYTHON = re.compile(r"^(python|pypy)[\d.]*(\.exe)?$")


def script_argv(argv: Sequence[str], *, launcher: bool = False) -> list[list[str]]:
    """The program's own words when ``argv`` starts with an interpreter or a launcher, each
    part of the command on its own (a value never runs on from one part into the next).

    ``python -u train.py --lr 1`` -> ``[["--lr", "1"]]``; ``python -m pkg.train --lr 1`` ->
    ``[["--lr", "1"]]``: interpreter options (-u, -O, -X dev...) are not training arguments
    (:func:`expdna.manifest.command_line.parse_command`). A launcher's options are not the
    program's either (``torchrun --nproc-per-node 2 train.py 50 10`` -> ``[["50", "10"]]``):
    the process started by the launcher never sees them, so ``resolved_args`` recorded from
    the command line names what the hook inside that process records. With ``launcher``
    they are kept before the program's words (``[["--nproc-per-node", "2"], ["50",
    "10"]]``), for the training fields a launcher sets (accelerate's ``--mixed_precision``).
    """
    words = list(argv)
    shape = parse_command(words)
    if shape.launcher is None and shape.interpreter is None:
        return [words]
    if launcher:
        return [list(shape.launcher_args), list(shape.args)]
    return [list(shape.args)]


def parse_args(argv: Sequence[str], *, launcher: bool = False) -> dict[str, Any]:
    """``--key value``, ``--key=value`` and ``-k value`` pairs; a bare ``--flag`` is True.

    Keys read ``-`` as ``_`` (as argparse's ``dest`` does); numbers and booleans are typed;
    numbers that follow the first value join it as a list (``--betas 0.9 0.999``); a key
    given more than once keeps every value in a list. Hydra overrides are arguments too
    (``model.lr=0.1``, ``+trainer=gpu``, ``++x=1`` by their dotted key; ``~key`` as
    ``"<deleted>"``). Other positional words are not arguments, and neither are a leading
    interpreter's own options nor (unless ``launcher``) a launcher's (see
    :func:`script_argv`).
    """
    args: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        key = key.lstrip("-").replace("-", "_")
        if key in args:
            previous = args[key]
            args[key] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            args[key] = value

    for words in script_argv(argv, launcher=launcher):
        _parse_words(words, put)
    return args


def _parse_words(words: Sequence[str], put: Callable[[str, Any], None]) -> None:
    """Each argument of one part of a command, given to ``put`` (see :func:`parse_args`)."""
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not _is_option(word):
            override = _OVERRIDE.match(word)
            deletion = _DELETION.match(word)
            if override is not None:
                put(override.group(2), typed(override.group(3)))
            elif deletion is not None:
                put(deletion.group(1), "<deleted>")
            continue
        if "=" in word:
            key, value = word.split("=", 1)
            put(key, typed(value))
        elif i < len(words) and not _is_option(words[i]) and words[i] != "--":
            values = [typed(words[i])]
            i += 1
            while (
                i < len(words)
                and not isinstance(values[0], str)
                and not isinstance(typed(words[i]), str)
            ):
                values.append(typed(words[i]))
                i += 1
            put(word, values[0] if len(values) == 1 else values)
        else:
            put(word, True)


def select_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The whitelisted variables of ``environ``, sorted by name."""
    return {
        name: environ[name]
        for name in sorted(environ)
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES)
    }


def collect_config(ctx: CollectContext) -> dict[str, Any]:
    resolved = dict(ctx.resolved_args) if ctx.resolved_args is not None else parse_args(ctx.argv)
    # A command still to be started (generate): the environment its launcher will give it.
    environ = launched_environ(ctx.argv, ctx.environ) if ctx.probe_interpreter else ctx.environ
    section: dict[str, Any] = {"resolved_args": resolved, "selected_env": select_env(environ)}
    if ctx.settings_source is not None and ctx.resolved_args is not None:
        section["settings_source"] = ctx.settings_source
    return section
