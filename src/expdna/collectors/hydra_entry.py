"""A Hydra app's command line and entry script, read without running either.

``@hydra.main(config_path=..., config_name=..., version_base=...)`` is read from the entry
script with :mod:`ast` (literal arguments only; the script is never imported), and the
command line's ``--config-path``/``--config-name``/``--config-dir`` flags and override
words are told apart as Hydra's own parser does. :mod:`expdna.collectors.hydra_compose`
composes the files from them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Entry scripts larger than this are not read for ``@hydra.main``.
SCRIPT_MAX = 2 * 1024 * 1024
#: Hydra's flags that take a value (the value is not an override), and which of them
#: say where the configs are.
_VALUE_FLAGS: dict[str, str | None] = {
    "--config-path": "path",
    "--config_path": "path",
    "-cp": "path",
    "--config-name": "name",
    "--config_name": "name",
    "-cn": "name",
    "--config-dir": "dir",
    "--config_dir": "dir",
    "-cd": "dir",
    "--cfg": None,
    "-c": None,
    "--package": None,
    "-p": None,
    "--experimental-rerun": None,
}
#: An override word: ``key=value``, ``+key=value``, ``++key=value``, ``~key[=value]``.
OVERRIDE = re.compile(r"^(~|\+\+|\+)?([A-Za-z_/][\w./@-]*)(?:=(.*))?$", re.DOTALL | re.ASCII)
#: Not given (``@hydra.main()`` without the argument); also "only Hydra can evaluate it".
UNSET: Any = object()


@dataclass
class HydraMain:
    """The literal arguments of ``hydra.main(...)``; a ValueError for a non-literal one."""

    config_path: Any = UNSET
    config_name: Any = None
    version_base: Any = UNSET


def hydra_flags(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """Hydra's ``--config-path/-name/-dir`` values and the override words."""
    flags: dict[str, str] = {}
    overrides: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            if name in _VALUE_FLAGS:
                if not eq:
                    value = words[i] if i < len(words) else ""
                    i += 1
                key = _VALUE_FLAGS[name]
                if key is not None:
                    flags[key] = value
                    flags[f"{key}-flag"] = name
            continue
        if OVERRIDE.match(word):
            overrides.append(word)
    return flags, overrides


def read_hydra_main(script: Path) -> HydraMain | None:
    """The literal arguments of the script's ``hydra.main(...)``, read with :mod:`ast`
    (never imported); None when the script calls no ``hydra.main``."""
    try:
        with open(script, "rb") as f:
            data = f.read(SCRIPT_MAX + 1)
    except OSError:
        return None
    if len(data) > SCRIPT_MAX or b"hydra" not in data or b"main" not in data:
        return None
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return None
    modules: set[str] = set()  # names bound to the hydra module
    mains: set[str] = set()  # names bound to hydra.main
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name == "hydra")
        elif isinstance(node, ast.ImportFrom) and node.module == "hydra":
            mains.update(a.asname or a.name for a in node.names if a.name == "main")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        named = isinstance(func, ast.Name) and func.id in mains
        dotted = (
            isinstance(func, ast.Attribute)
            and func.attr == "main"
            and isinstance(func.value, ast.Name)
            and func.value.id in modules
        )
        if named or dotted:
            return _main_args(node)
    return None


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str)):
        return node.value
    raise ValueError(ast.unparse(node))


def _main_args(call: ast.Call) -> HydraMain:
    main = HydraMain()
    names = ("config_path", "config_name", "version_base")
    given = dict(zip(names, call.args, strict=False))
    given.update({k.arg: k.value for k in call.keywords if k.arg in names})
    for name, node in given.items():
        try:
            setattr(main, name, _literal(node))
        except ValueError as exc:  # os.path.join(...): not knowable without running it
            setattr(main, name, ValueError(f"{name}={exc}"))
    return main


def default_config_path(main: HydraMain) -> Any:
    """Hydra 1.3: an unspecified ``config_path`` is ``.`` for ``version_base`` unspecified
    or below 1.2, else None (no config directory)."""
    if main.config_path is not UNSET:
        return main.config_path
    base = main.version_base
    if base is UNSET:
        return "."
    if isinstance(base, str):
        try:
            major, minor = (int(p) for p in base.split(".")[:2])
        except ValueError:
            return None
        return "." if (major, minor) < (1, 2) else None
    return None
