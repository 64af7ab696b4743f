"""The config files a Hydra app composes, found the way Hydra composes them; nothing run.

A Hydra app's configuration is its primary config (``--config-name`` in ``--config-path``,
else what ``@hydra.main(config_path=..., config_name=...)`` says, read from the entry script
with :mod:`ast`) and every file its defaults lists pull in: ``group: option``,
``group@pkg: option``, ``optional``, ``override``, ``_self_``, option lists, the defaults
lists of group files (relative to their group, absolute with a leading ``/``), and the
command line's group choices (``trainer=cpu``, ``+experiment=foo``, ``~logger``). This module
follows Hydra 1.3's own algorithm (``hydra/_internal/defaults_list.py``): a config's defaults
are expanded last to first, so an ``override`` in a later config (an experiment) wins over
an earlier default, and the command line wins over both; the files come out in Hydra's
composition order.

Search path as Hydra builds it: Hydra's own package configs first (never recorded: they
are part of the installed package), then the primary config's directory, ``--config-dir``,
and ``hydra.searchpath`` (``file://`` entries). Options Hydra finds elsewhere (plugins'
packages, the ConfigStore of structured configs in Python code) are not files here: a
missing option of a ``hydra/`` group or an ``optional`` default is expected; any other is
a warning, never an error.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from expdna.collectors.hydra_entry import (
    OVERRIDE,
    UNSET,
    HydraMain,
    default_config_path,
    hydra_flags,
    read_hydra_main,
)

log = logging.getLogger(__name__)

#: Configs loaded per composition, and how deep defaults lists nest, at most.
MAX_NODES = 256
MAX_DEPTH = 32

#: Hydra 1.3's own ``hydra/config`` defaults (a structured config in ``hydra.conf``): the
#: groups a primary config can ``override hydra/<group>: <option>`` with its own file.
HYDRA_OWN_DEFAULTS: tuple[Any, ...] = (
    {"output": "default"},
    {"launcher": "basic"},
    {"sweeper": "basic"},
    {"help": "default"},
    {"hydra_help": "default"},
    {"hydra_logging": "default"},
    {"job_logging": "default"},
    {"callbacks": None},
    {"env": "default"},
    "_self_",
)
_HYDRA_OWN = "hydra/config"
#: Hydra's primary config when the app names none.
_EMPTY = "_dummy_empty_config_"
_INTERPOLATION = re.compile(r"\$\{([^${}]+)\}")


@dataclass(frozen=True)
class HydraFile:
    """One config file of the composition."""

    path: Path
    #: Hydra's name for it: ``trainer/cpu`` (the primary: its config name).
    config: str
    #: The group choice that selected it (``trainer``, ``db@backup``); None for the primary
    #: and for a plain config entry (``- model_checkpoint``).
    group: str | None
    primary: bool = False


@dataclass
class Composition:
    files: list[HydraFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The flag that gave the config directory on the command line (``-cp``), if any.
    path_flag: str | None = None


# --- the search path ---------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _hydra_package_conf() -> Path | None:
    """Hydra's own ``hydra/conf`` folder (first on every search path), without importing."""
    module = sys.modules.get("hydra")
    origin = getattr(module, "__file__", None)
    if origin is None:
        try:
            spec = importlib.util.find_spec("hydra")
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    if not origin:
        return None
    conf = Path(origin).parent / "conf"
    return conf if conf.is_dir() else None


def _file_source(word: str, cwd: Path) -> Path | None:
    if word.startswith("pkg://") or word.startswith("structured://"):
        return None
    if word.startswith("file://"):
        word = word[len("file://") :]
    return Path(os.path.abspath(cwd / os.path.expanduser(word)))


# --- defaults lists ----------------------------------------------------------------------


@dataclass
class _Default:
    """One defaults-list entry, as Hydra's ``GroupDefault``/``ConfigDefault``."""

    group: str | None = None  # a group default: its group, as written
    path: str | None = None  # a config default: its path, as written
    value: Any = None  # a group default's option, options list, or None
    package: str | None = None
    optional: bool = False
    override: bool = False
    primary: bool = False
    base: str = ""  # the containing config's group
    parent_package: str = ""
    header: str | None = None

    def is_self(self) -> bool:
        return (self.path if self.group is None else self.value) == "_self_"

    def _relative_group(self) -> str:
        if self.group is not None:
            return self.group.lstrip("/")
        return (self.path or "").lstrip("/").rpartition("/")[0]

    def group_path(self) -> str:
        if self.group is not None:
            group = self.group
            if group.startswith("/") or not self.base:
                return group.lstrip("/")
            return f"{self.base}/{group}"
        path = self.path or ""
        group = path.lstrip("/").rpartition("/")[0]
        if path.startswith("/") or not self.base:
            return group
        return f"{self.base}/{group}" if group else self.base

    def name(self) -> str | None:
        if self.group is not None:
            return self.value if isinstance(self.value, str) else None
        return (self.path or "").rpartition("/")[2]

    def config_path(self) -> str:
        if self.group is not None:
            return f"{self.group_path()}/{self.name()}"
        path = self.path or ""
        if path.startswith("/") or not self.base:
            return path.lstrip("/")
        return f"{self.base}/{path}"

    def final_package(self, with_header: bool = True) -> str:
        package = self.package
        if package is None and with_header:
            package = self.header
        if package is None:
            package = self._relative_group().replace("/", ".")
        if not self.parent_package:
            final = package
        else:
            final = self.parent_package if not package else f"{self.parent_package}.{package}"
        cut = final.rfind("_global_")
        return final if cut == -1 else final[cut + len("_global_") + 1 :]

    def override_key(self) -> str:
        key = self.group_path()
        final = self.final_package(with_header=False)
        if key.replace("/", ".") != final:
            key = f"{key}@{final or '_global_'}"
        return key

    def set_parent(self, parent: _Default) -> None:
        self.base = parent.group_path()
        self.parent_package = parent.final_package()


def _entry(item: Any) -> _Default | None:
    """A defaults-list item (``"db/mysql@pkg"``, ``{"optional db@pkg": "mysql"}``)."""
    if isinstance(item, str):
        path, _, package = item.partition("@")
        return _Default(path=path, package=package.partition(":")[0] or None)
    if isinstance(item, dict) and len(item) == 1:
        ((key, value),) = item.items()
        if not isinstance(key, str):
            return None
        words = key.split(" ")
        group, _, package = words[-1].partition("@")
        keywords = {w for w in words[:-1] if w}
        if value is not None and not isinstance(value, (str, list)):
            return None
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            return None
        return _Default(
            group=group,
            value=value,
            package=package.partition(":")[0] or None,
            optional="optional" in keywords,
            override="override" in keywords,
        )
    return None


def _header_package(text: str) -> str | None:
    """The ``# @package`` header as Hydra reads it (its first 512 characters)."""
    for line in text[:512].splitlines():
        line = line.strip()
        if not line:
            continue
        if not re.match(r"^\s*#\s*@", line):
            break
        words = [w for w in line.lstrip("#").strip().split(" ") if w]
        if len(words) == 2 and words[0] == "@package":
            header = words[1]
            if header != "_global_" and not header.startswith("_global_."):
                header = "_global_" if header == "" else f"_global_.{header}"
            return header
    return None


@dataclass
class _Loaded:
    path: Path | None  # None: Hydra's own (package or structured), not recorded
    defaults: list[Any]
    header: str | None


class _Composer:
    def __init__(self, sources: list[Path], own: Path | None) -> None:
        self.sources = sources
        self.own = own
        self.choices: dict[str, Any] = {}  # override key -> option (first wins)
        self.deletions: dict[str, str | None] = {}
        self.appends: list[_Default] = []
        self.known: dict[str, str | None] = {}
        self.loaded: dict[str, _Loaded | None] = {}
        self.warnings: list[str] = []
        self.nodes = 0

    # -- the files --

    def group_exists(self, group: str) -> bool:
        dirs = [*([self.own] if self.own else []), *self.sources]
        return any(os.path.isdir(d / group) for d in dirs)

    def load(self, config_path: str) -> _Loaded | None:
        if config_path in self.loaded:
            return self.loaded[config_path]
        found: _Loaded | None = None
        if config_path == _HYDRA_OWN:
            found = _Loaded(None, list(HYDRA_OWN_DEFAULTS), None)
        elif config_path == _EMPTY:
            found = _Loaded(None, [], None)
        else:
            name = config_path if config_path.endswith(".yaml") else f"{config_path}.yaml"
            own = self.own is not None and os.path.isfile(self.own / name)
            where = self.own / name if own and self.own else None
            for directory in [] if own else self.sources:
                if os.path.isfile(directory / name):
                    where = directory / name
                    break
            if where is not None:
                found = self._read(where, recorded=not own)
        self.loaded[config_path] = found
        return found

    def _read(self, where: Path, recorded: bool) -> _Loaded:
        from expdna.collectors.config_parse import parse_text

        path = where if recorded else None
        try:
            text = where.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            self.warnings.append(f"Hydra config {where}: unreadable ({exc})")
            return _Loaded(path, [], None)
        if "defaults" not in text:  # most group files: nothing to expand, no YAML to parse
            return _Loaded(path, [], _header_package(text))
        try:
            values = parse_text(text, "yaml")
        except ValueError as exc:
            self.warnings.append(f"Hydra config {where}: defaults list not read ({exc})")
            return _Loaded(path, [], _header_package(text))
        defaults = values.get("defaults") if isinstance(values, dict) else None
        if defaults is not None and not isinstance(defaults, list):
            self.warnings.append(f"Hydra config {where}: defaults is not a list")
            defaults = None
        return _Loaded(path, list(defaults or []), _header_package(text))

    # -- the command line --

    def add_overrides(self, words: Iterable[str]) -> None:
        for word in words:
            match = OVERRIDE.match(word)
            if match is None:
                continue
            prefix, key, value = match.group(1) or "", match.group(2), match.group(3)
            group = key.partition("@")[0]
            if not self.group_exists(group):
                continue  # a value override (lr=0.1), not a group choice
            parsed = _value(value) if value is not None else None
            if parsed is UNSET:
                self.warnings.append(f"Hydra override {word}: its config files are not read")
                continue
            if prefix == "~":
                self.deletions[key] = parsed if isinstance(parsed, str) else None
            elif prefix == "+":
                name, _, package = key.partition("@")
                self.appends.append(_Default(group=name, value=parsed, package=package or None))
            elif prefix == "":
                self.choices.setdefault(key, parsed)

    # -- the tree --

    def expand(self, node: _Default, depth: int, is_root: bool = False) -> list[HydraFile]:
        """The files ``node`` composes, in Hydra's order (``_create_defaults_tree_impl``)."""
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            if self.nodes == MAX_NODES + 1 or depth == MAX_DEPTH + 1:
                self.warnings.append(
                    f"Hydra defaults: more than {MAX_NODES} configs or {MAX_DEPTH} levels; "
                    "the rest not read"
                )
            return []
        missing = node.name() in (None, "???")
        loaded = None if missing else self.load(node.config_path())
        if loaded is not None:
            node.header = loaded.header
        if node.group is not None:
            key = node.override_key()
            if key in self.deletions and self.deletions[key] in (None, node.name()):
                return []
            self.known.setdefault(key, node.name())
        if missing:
            if node.name() == "???":
                self.warnings.append(f"Hydra config group {node.override_key()}: no option chosen")
            return []
        if loaded is None:
            if not node.optional and not node.config_path().startswith("hydra/"):
                where = ", ".join(str(s) for s in self.sources) or "no config directory"
                self.warnings.append(f"Hydra config {node.config_path()} not found in {where}")
            return []
        defaults = [d for d in map(_entry, loaded.defaults) if d is not None]
        if len(defaults) < len(loaded.defaults):
            self.warnings.append(
                f"Hydra config {node.config_path()}: defaults entries not understood"
            )
        if defaults or (is_root and self.appends):
            has_self = any(d.is_self() for d in defaults)
            non_override = any(not d.override for d in defaults)
            if (not has_self and non_override) or not defaults:
                defaults.append(_Default(path="_self_"))
        if is_root:
            defaults.extend(replace(d) for d in self.appends)
        for d in defaults:
            if d.is_self():
                continue
            d.set_parent(node)
            if d.group is not None and d.override:
                self.choices.setdefault(d.override_key(), d.value)
        own = (
            [HydraFile(loaded.path, node.config_path(), self._group_key(node), node.primary)]
            if loaded.path is not None
            else []
        )
        children: list[list[HydraFile] | None] = []
        deferred: list[tuple[int, _Default]] = []
        for d in reversed(defaults):
            if d.is_self():
                children.append(None)
                continue
            if d.override:
                continue
            d.set_parent(node)
            if d.group is not None and d.override_key() in self.choices:
                d.value = self.choices[d.override_key()]
            if d.group is not None and isinstance(d.value, list):
                for item in reversed(d.value):
                    child = _Default(
                        path=f"{d.group}/{item}", package=d.package, optional=d.optional
                    )
                    child.set_parent(node)
                    children.append(self.expand(child, depth + 1))
            elif "${" in str(d.value if d.group is not None else d.path):
                deferred.append((len(children), d))
                children.append([])
            else:
                children.append(self.expand(d, depth + 1))
        for index, later in deferred:
            resolved = self._interpolate(later)
            if resolved is not None:
                children[index] = self.expand(resolved, depth + 1)
        if not children:
            return own
        out: list[HydraFile] = []
        for files in reversed(children):
            out.extend(own if files is None else files)
        return out

    @staticmethod
    def _group_key(node: _Default) -> str | None:
        return node.override_key() if node.group is not None else None

    def _interpolate(self, d: _Default) -> _Default | None:
        text = str(d.value if d.group is not None else d.path)

        def known(match: re.Match[str]) -> str:
            value = self.known.get(match.group(1).strip())
            if value is None:
                raise KeyError(match.group(1))
            return value

        try:
            resolved = _INTERPOLATION.sub(known, text)
        except KeyError as exc:
            self.warnings.append(f"Hydra defaults interpolation {text}: {exc} is not a choice")
            return None
        if d.group is not None:
            return replace(d, value=resolved)
        return replace(d, path=resolved)


def _value(text: str) -> Any:
    """A command-line group choice: a name, a quoted name, ``[a,b]``, ``null``; a sweep
    ``a,b`` gives every option it names. ``UNSET`` for what only Hydra can evaluate."""
    text = text.strip()
    if text == "null":
        return None
    if "${" in text or re.match(r"^\w+\(", text):
        return UNSET  # interpolations, choice(...), range(...), glob(...)
    if text.startswith("[") and text.endswith("]"):
        return [_unquote(p) for p in text[1:-1].split(",") if p.strip()]
    if "," in text:
        return [_unquote(p) for p in text.split(",") if p.strip()]
    return _unquote(text)


def _unquote(word: str) -> str:
    word = word.strip()
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


# --- the whole composition ---------------------------------------------------------------


def compose_files(cwd: Path, entry: str | None, words: list[str]) -> Composition | None:
    """The config files of a Hydra invocation (``entry`` and its ``words``), or None when
    it is not one (no ``hydra.main`` in the entry script and no Hydra flag)."""
    flags, overrides = hydra_flags(words)
    script = Path(os.path.abspath(cwd / entry)) if entry and entry.endswith(".py") else None
    main = read_hydra_main(script) if script is not None else None
    if main is None and not {"path", "name", "dir"} & set(flags):
        return None
    main = main or HydraMain()
    composition = Composition(path_flag=flags.get("path-flag"))
    config_path = flags["path"] if "path" in flags else default_config_path(main)
    config_name = flags.get("name", main.config_name)
    for value in (config_path, config_name):
        if isinstance(value, ValueError):
            composition.warnings.append(f"Hydra: @hydra.main({value}) is not a literal")
    sources: list[Path] = []
    if isinstance(config_path, str) and not config_path.startswith("pkg://"):
        if os.path.isabs(os.path.expanduser(config_path)):
            sources.append(Path(os.path.expanduser(config_path)))
        elif script is not None:  # relative to the script's folder, as Hydra has it
            sources.append(
                Path(os.path.normpath(Path(os.path.realpath(script.parent)) / config_path))
            )
        else:
            sources.append(Path(os.path.abspath(cwd / config_path)))
    elif isinstance(config_path, str):
        composition.warnings.append(f"Hydra: config_path {config_path} is a package, not read")
    if "dir" in flags:
        sources.append(Path(os.path.abspath(cwd / os.path.expanduser(flags["dir"]))))
    composer = _Composer(sources, _hydra_package_conf())
    name = config_name if isinstance(config_name, str) else None
    if name is not None:
        primary = composer.load(name)
        searchpath = _searchpath(primary.path if primary else None, overrides)
        composer.sources.extend(p for p in (_file_source(w, cwd) for w in searchpath) if p)
    composer.add_overrides(overrides)
    # Hydra's root: [hydra/config, primary], expanded last to first (the primary's
    # ``override hydra/...`` entries first), composed first to last.
    files = composer.expand(_Default(path=name or _EMPTY, primary=True), 1, is_root=True)
    hydra_own = composer.expand(_Default(path=_HYDRA_OWN), 1)
    loaded = composer.loaded.get(name) if name is not None else None
    if loaded is not None and loaded.path is not None and not any(f.primary for f in files):
        # Its defaults list shaped the composition even where Hydra merges none of its
        # content (a defaults list of overrides only, before +group=option appends).
        files.insert(0, HydraFile(loaded.path, name or "", None, primary=True))
    seen: set[str] = set()
    for f in [*hydra_own, *files]:
        real = os.path.realpath(f.path)
        if real not in seen:
            seen.add(real)
            composition.files.append(f)
    composition.warnings.extend(composer.warnings)
    return composition


def _searchpath(primary: Path | None, overrides: list[str]) -> list[str]:
    """``hydra.searchpath``: the command line's, else the primary config's."""
    for word in overrides:
        if word.startswith("hydra.searchpath="):
            value = _value(word.partition("=")[2])
            return value if isinstance(value, list) else [value] if value else []
    if primary is None:
        return []
    from expdna.collectors.config_parse import parse_text

    try:
        values = parse_text(primary.read_text(encoding="utf-8-sig"), "yaml")
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    hydra = values.get("hydra") if isinstance(values, dict) else None
    listed = hydra.get("searchpath") if isinstance(hydra, dict) else None
    return [w for w in listed if isinstance(w, str)] if isinstance(listed, list) else []
