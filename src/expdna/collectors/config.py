"""Resolved arguments parsed from argv, and the whitelisted environment."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from expdna.collectors.context import CollectContext
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
)
ENV_NAMES: frozenset[str] = frozenset(
    {"PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS"}
)

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
# A letter of any script or "_" first (``--学习率``, ``--ключ``), never a digit (``-1``).
_OPTION = re.compile(r"^--?[^\W\d][\w.-]*(=.*)?$", re.DOTALL)


def typed(word: str) -> Any:
    """``word`` as an int or float when it is written as one; otherwise the string."""
    if _INT.match(word):
        return int(word)
    if _FLOAT.match(word):
        return float(word)
    return word


def _is_option(word: str) -> bool:
    return word != "--" and _OPTION.match(word) is not None


_PYTHON = re.compile(r"^(python|pypy)[\d.]*(\.exe)?$")


def script_argv(argv: Sequence[str]) -> list[str]:
    """The program's own words when ``argv`` starts with an interpreter or a launcher.

    ``python -u train.py --lr 1`` -> ``["--lr", "1"]``; ``python -m pkg.train --lr 1`` ->
    ``["--lr", "1"]``: interpreter options (-u, -O, -X dev...) are not training arguments
    (:func:`expdna.manifest.command_line.parse_command`). A launcher's options are kept
    before them (``torchrun --nproc-per-node 2 train.py --lr 1`` ->
    ``["--nproc-per-node", "2", "--lr", "1"]``): they shape the run.
    """
    words = list(argv)
    shape = parse_command(words)
    if shape.launcher is None and shape.interpreter is None:
        return words
    return [*shape.launcher_args, *shape.args]


def parse_args(argv: Sequence[str]) -> dict[str, Any]:
    """``--key value``, ``--key=value`` and ``-k value`` pairs; a bare ``--flag`` is True.

    Keys read ``-`` as ``_`` (as argparse's ``dest`` does); numbers are typed; numbers that
    follow the first value join it as a list (``--betas 0.9 0.999``); a key given more than
    once keeps every value in a list. Positional words are not arguments, and neither are
    a leading interpreter's own options (see :func:`script_argv`).
    """
    args: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        key = key.lstrip("-").replace("-", "_")
        if key in args:
            previous = args[key]
            args[key] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            args[key] = value

    words = script_argv(argv)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not _is_option(word):
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
    return args


def select_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The whitelisted variables of ``environ``, sorted by name."""
    return {
        name: environ[name]
        for name in sorted(environ)
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES)
    }


def collect_config(ctx: CollectContext) -> dict[str, Any]:
    resolved = dict(ctx.resolved_args) if ctx.resolved_args is not None else parse_args(ctx.argv)
    return {"resolved_args": resolved, "selected_env": select_env(ctx.environ)}
