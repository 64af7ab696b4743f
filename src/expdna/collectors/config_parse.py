"""Config file text to values, with safe loaders only; never runs anything.

YAML through ``yaml.safe_load``'s loader (PyYAML, optional), JSON, TOML (``tomllib``, or
``tomli`` on Python 3.10), INI through ``configparser`` without interpolation, and ``.py``
files through :mod:`expdna.collectors.pyconfig`'s tokenizer. :func:`jsonable` bounds what a
parser built (YAML aliases can expand a small file into an exponential tree).
"""

from __future__ import annotations

import configparser
import importlib
import json
from collections.abc import Mapping
from typing import Any

#: Parsed values deeper or larger than this are not kept (YAML aliases can expand a small
#: file into an exponential tree).
MAX_DEPTH = 32
MAX_NODES = 20_000


def sniff(text: str) -> str:
    return "json" if text.lstrip()[:1] in ("{", "[") else "yaml"


#: Why a YAML file has no values on a core install, with the fix (like pyarrow's hint).
NO_PYYAML = "YAML not parsed: PyYAML is not installed (pip install 'expdna[yaml]')"


def parse_text(text: str, fmt: str) -> Any:
    """The values of ``text`` in format ``fmt``, read by a safe loader; raises ValueError
    (the message says why) when it cannot be parsed here."""
    if fmt == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"JSON: {exc}") from None
    if fmt == "yaml":
        try:
            yaml: Any = importlib.import_module("yaml")
        except ImportError:
            raise ValueError(NO_PYYAML) from None
        # A safe loader only: the full loader would build any Python object the file names.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            documents = list(yaml.load_all(text, Loader=loader))
        except yaml.YAMLError as exc:
            raise ValueError(f"YAML: {' '.join(str(exc).split())}") from None
        return documents[0] if len(documents) == 1 else documents or None
    if fmt == "toml":
        return _toml(text)
    if fmt == "ini":
        parser = configparser.RawConfigParser(strict=False)
        try:
            parser.read_string(text)
        except configparser.Error as exc:
            raise ValueError(f"INI: {' '.join(str(exc).split())}") from None
        values: dict[str, Any] = dict(parser.defaults())
        values.update({name: dict(parser.items(name, raw=True)) for name in parser.sections()})
        return values
    if fmt == "python":
        return python_values(text)[0]
    raise ValueError(f"no parser for {fmt}")


def python_values(text: str) -> tuple[dict[str, Any], list[str]]:
    """A Python config's literal constants and the names it assigns something else."""
    import tokenize

    from expdna.collectors.pyconfig import read_python_config

    try:
        return read_python_config(text)
    except (tokenize.TokenError, SyntaxError) as exc:
        raise ValueError(f"Python: {exc}") from None


def _toml(text: str) -> Any:
    try:
        toml: Any = importlib.import_module("tomllib")
    except ImportError:  # Python 3.10
        try:
            toml = importlib.import_module("tomli")
        except ImportError:
            raise ValueError("TOML not parsed: Python 3.10 without tomli") from None
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ValueError(f"TOML: {exc}") from None


class _TooBig(ValueError):
    pass


def jsonable(value: Any) -> Any:
    """Parsed values as JSON data: string keys, lists, ISO dates; bounded in size and depth."""
    budget = [MAX_NODES]

    def walk(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > MAX_DEPTH:
            raise _TooBig(
                f"values too large to keep (over {MAX_NODES} nodes or deeper than {MAX_DEPTH})"
            )
        if item is None or isinstance(item, (bool, int, float, str)):
            return item
        if isinstance(item, Mapping):
            return {str(k): walk(v, depth + 1) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v, depth + 1) for v in item]
        if isinstance(item, (set, frozenset)):
            return sorted((walk(v, depth + 1) for v in item), key=repr)
        if isinstance(item, (bytes, bytearray)):
            return f"<{len(item)} bytes>"
        isoformat = getattr(item, "isoformat", None)
        if callable(isoformat):
            return str(isoformat())
        return str(item)

    return walk(value, 0)


def resolve_hydra(values: Any, text: str) -> tuple[Any, str | None]:
    """Hydra's saved config with its interpolations resolved, as the app saw it."""
    if "${" not in text or not isinstance(values, dict):
        return values, None
    try:
        from omegaconf import OmegaConf
    except ImportError:
        return values, "interpolations not resolved: omegaconf is not installed"
    try:
        return OmegaConf.to_container(OmegaConf.create(values), resolve=True), None
    except Exception as exc:  # a resolver only the app registers: keep the text
        return values, f"interpolations not resolved: {type(exc).__name__}: {exc}"
