"""Resolved arguments parsed from argv, and the whitelisted environment."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from expdna.collectors.context import CollectContext

#: Environment variables are collected only by these prefixes or exact names.
ENV_PREFIXES: tuple[str, ...] = (
    "CUDA_", "NCCL_", "RAY_", "SLURM_", "HF_", "SGLANG_", "TORCH_", "PYTORCH_",
)
ENV_NAMES: frozenset[str] = frozenset(
    {"PYTHONHASHSEED", "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS"}
)

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_OPTION = re.compile(r"^--?[A-Za-z_][\w.-]*(=.*)?$", re.DOTALL)


def typed(word: str) -> Any:
    """``word`` as an int or float when it is written as one; otherwise the string."""
    if _INT.match(word):
        return int(word)
    if _FLOAT.match(word):
        return float(word)
    return word


def _is_option(word: str) -> bool:
    return word != "--" and _OPTION.match(word) is not None


def parse_args(argv: Sequence[str]) -> dict[str, Any]:
    """``--key value``, ``--key=value`` and ``-k value`` pairs; a bare ``--flag`` is True.

    Keys read ``-`` as ``_`` (as argparse's ``dest`` does); numbers are typed; a key given
    more than once keeps every value in a list. Positional words are not arguments.
    """
    args: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        key = key.lstrip("-").replace("-", "_")
        if key in args:
            previous = args[key]
            args[key] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            args[key] = value

    words = list(argv)
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
            put(word, typed(words[i]))
            i += 1
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
    return {"resolved_args": parse_args(ctx.argv), "selected_env": select_env(ctx.environ)}
