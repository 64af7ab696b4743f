"""A training script's parsed arguments as plain JSON values for ``config.resolved_args``.

The hook records what the script actually runs with (defaults included), not the words on
its command line, so it reads the parsed object: an ``argparse.Namespace``, a mapping, an
OmegaConf ``DictConfig`` (Hydra's composed configuration, interpolations resolved), a
dataclass instance, a pydantic model (v2 or v1) or any object with attributes
(``types.SimpleNamespace``).

Values become what canonical JSON can hash the same way on every run: paths become
strings, enums their value, tuples and sets lists (sets sorted), tensors and NumPy scalars
their Python number, and functions or classes (``set_defaults(func=train)``) their dotted
name. Anything else is its ``repr`` with memory addresses removed, because
``<object at 0x7f...>`` differs on every run and would change the DNA for nothing.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence, Set
from typing import Any

#: Nesting beyond this is written as text (a self-referencing config must not recurse forever).
MAX_DEPTH = 32

_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")
_OBJECT_REPR: Any = object.__repr__


class UnsupportedArgs(TypeError):
    """``args`` is of a kind the hook cannot read arguments from."""


def _is_pydantic_v2(obj: Any) -> bool:
    return callable(getattr(obj, "model_dump", None)) and hasattr(type(obj), "model_fields")


def _is_pydantic_v1(obj: Any) -> bool:
    return callable(getattr(obj, "dict", None)) and hasattr(type(obj), "__fields__")


def _is_omegaconf(obj: Any) -> bool:
    return type(obj).__module__.startswith("omegaconf.")


def _omegaconf_container(obj: Any) -> Any:
    """An OmegaConf ``DictConfig``/``ListConfig`` resolved as the app sees it (Hydra's
    composed configuration); left unresolved where an interpolation cannot be resolved.
    omegaconf is imported only here, when such an object is passed."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.to_container(obj, resolve=True)
    except Exception:  # an interpolation without its resolver: keep the text
        return OmegaConf.to_container(obj, resolve=False)


def _fields(obj: Any) -> Mapping[Any, Any] | None:
    """The name -> value view of a structured object, or ``None`` when it is not one."""
    if _is_omegaconf(obj):
        obj = _omegaconf_container(obj)
    if isinstance(obj, Mapping):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # Not dataclasses.asdict: it deep-copies every value, tensors included.
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if _is_pydantic_v2(obj):
        return {name: getattr(obj, name) for name in type(obj).model_fields}
    if _is_pydantic_v1(obj):
        return {name: getattr(obj, name) for name in type(obj).__fields__}
    return None


def _qualified(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)
    return f"{module}.{name}" if module else str(name)


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-like data: dicts with string keys, lists, str, int, float, bool, None."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value  # non-finite floats are kept: canonical JSON writes them as markers
    if isinstance(value, enum.Enum):
        return plain(value.value, depth + 1)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if depth >= MAX_DEPTH:
        return _ADDRESS.sub("", repr(value))
    if _is_omegaconf(value):
        value = _omegaconf_container(value)
    fields = _fields(value)
    if fields is not None:
        return {str(k): plain(v, depth + 1) for k, v in fields.items()}
    if isinstance(value, Set):
        return sorted((plain(v, depth + 1) for v in value), key=_sort_key)
    if isinstance(value, Sequence):
        return [plain(v, depth + 1) for v in value]
    if callable(value) and hasattr(value, "__qualname__"):
        return _qualified(value)  # functions, classes, bound methods
    item = getattr(value, "item", None)
    if callable(item):  # a 0-d tensor or a NumPy scalar
        try:
            number = item()
        except (TypeError, ValueError, RuntimeError):
            number = None
        if isinstance(number, (bool, int, float)):
            return number
    if callable(getattr(value, "tolist", None)):  # a small array saved as a default
        try:
            return plain(value.tolist(), depth + 1)
        except (TypeError, ValueError, RuntimeError):
            pass
    if hasattr(value, "__dict__") and type(value).__repr__ is _OBJECT_REPR:
        # A plain object whose repr would only say where it lives: record its attributes.
        return {str(k): plain(v, depth + 1) for k, v in vars(value).items()}
    return _ADDRESS.sub("", repr(value))


def resolved_args(args: Any) -> dict[str, Any]:
    """The arguments held by ``args`` as a JSON-like dict (see the module doc).

    Raises :class:`UnsupportedArgs` for something that holds no named arguments (a string,
    a number, a list).
    """
    if isinstance(args, (str, bytes, bytearray, int, float, bool)) or args is None:
        raise UnsupportedArgs(f"cannot read arguments from a {type(args).__name__}")
    fields = _fields(args)
    if fields is None:
        if isinstance(args, (Sequence, Set)) or not hasattr(args, "__dict__"):
            raise UnsupportedArgs(
                f"cannot read arguments from a {type(args).__name__}: pass an "
                "argparse.Namespace, a dict, a dataclass or a pydantic model"
            )
        fields = vars(args)  # argparse.Namespace, SimpleNamespace, a plain config object
    return {str(k): plain(v, 1) for k, v in fields.items()}


#: ``config.settings_source`` for settings the program handed over in code.
FROM_CODE = "code"


def _from_argv_parser(args: Any) -> bool:
    """Whether ``args`` is what an argv parser returns: an ``argparse.Namespace``, an
    OmegaConf ``DictConfig`` (Hydra composes it from config files and argv overrides, which
    the DNA covers already) or a dataclass (``HfArgumentParser``, tyro, simple_parsing)."""
    import argparse

    if isinstance(args, argparse.Namespace) or _is_omegaconf(args):
        return True
    return dataclasses.is_dataclass(args) and not isinstance(args, type)


def in_tune_trial() -> bool:
    """Whether this process runs a Ray Tune trial (its settings come from the search).

    Reads the session of a module Tune has already imported in every trial; ray is never
    imported here, so a process without ray pays nothing.
    """
    session_module = sys.modules.get("ray.train._internal.session")
    get_session = getattr(session_module, "get_session", None)
    if not callable(get_session):
        return False
    try:
        session = get_session()
    except Exception:  # another ray than the one read: no trial known
        return False
    return session is not None and bool(getattr(session, "trial_id", None))


def settings_source(args: Any) -> str | None:
    """``config.settings_source`` for settings passed to the hook: ``None`` (argv's rule)
    for what an argv parser returns, ``"code"`` for a mapping, any other object, or
    anything passed inside a Ray Tune trial."""
    if args is None:
        return None
    if in_tune_trial() or not _from_argv_parser(args):
        return FROM_CODE
    return None
