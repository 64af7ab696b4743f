"""Config files the run reads: found in argv, digested by their redacted text, parsed safely.

Which files (:func:`find_config_files`):

- every argv word, positional or option value (``--config x.yaml``, ``--config=x.yaml``,
  ``-c x.yaml``), that names an existing file ending in ``.yaml``, ``.yml``, ``.json``,
  ``.toml``, ``.ini`` or ``.cfg``, unless it is larger than :data:`READ_MAX` (data, such as
  ``--train_file train.json``), the value of a per-run argument (``--log-file x.json``), or
  under the run's output directory;
- ``.py`` files given as positional arguments after the entry script (nanoGPT's
  ``python train.py config/train_gpt2.py``); the entry script itself is code, not config;
- the value of a well-known flag whatever its extension: ``--config``, ``--config-file``,
  ``--cfg``, ``--deepspeed``, ``--hparams`` (see :data:`CONFIG_FLAGS`), and Hydra's
  ``--config-path DIR --config-name NAME`` (the primary config, ``DIR/NAME.yaml``);
- Hydra's composed configuration, ``.hydra/config.yaml``, in the run's output directory
  (``start(output_dir=...)``, the working directory, or the output directory of a Hydra
  app running in this process), with its overrides.

Each file is opened only when it is a regular file, read up to :data:`READ_MAX` bytes and
never executed. Its text is redacted (:func:`expdna.manifest.redact.redact_text`) before
anything else, so the digest (``config.config_files``, part of the DNA) and the stored blob
never hold a secret. Files up to :data:`TEXT_MAX` bytes keep their redacted text (inline in
the manifest file, a blob in the store) and are parsed with safe loaders only
(``yaml.safe_load``, ``json``, ``tomllib``, ``configparser``, and for ``.py`` a tokenizer
that reads literal assignments); larger ones are recorded by digest, ``truncated: true``.
A file that cannot be read (permissions, vanished, not a regular file, binary, over
:data:`READ_MAX`) is recorded with the reason and makes the config section unknown.
"""

from __future__ import annotations

import configparser
import importlib
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expdna.collectors.config import script_argv
from expdna.collectors.context import CollectContext, NotAvailable, Unknown
from expdna.digest import ref_of
from expdna.regular import NotRegularFileError, open_regular

log = logging.getLogger(__name__)

#: Redacted text kept (inline, and as a blob in the store) and parsed up to this size.
TEXT_MAX = 256 * 1024
#: Larger files are not configuration: recorded as unknown rather than read.
READ_MAX = 4 * 1024 * 1024
#: At most this many config files per run (a glob of data files is not configuration).
MAX_FILES = 32
#: Parsed values kept per run, as JSON characters (the manifest file is capped at 100 KB).
VALUES_MAX_CHARS = 32_000
#: Parsed values deeper or larger than this are not kept (YAML aliases can expand a small
#: file into an exponential tree).
MAX_DEPTH = 32
MAX_NODES = 20_000

SUFFIX_FORMATS: dict[str, str] = {
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".py": "python",
}
#: Flags whose value is a config file whatever its extension.
CONFIG_FLAGS: frozenset[str] = frozenset(
    {
        "--config",
        "--configs",
        "--config-file",
        "--config_file",
        "--cfg",
        "--cfg-file",
        "--cfg_file",
        "--deepspeed",
        "--deepspeed-config",
        "--deepspeed_config",
        "--hparams",
        "--hparams-file",
        "--hparams_file",
        "-c",
    }
)
_HYDRA_PATH = frozenset({"--config-path", "--config_path", "-cp"})
_HYDRA_NAME = frozenset({"--config-name", "--config_name", "-cn"})
#: ``python -m <launcher> ... train.py``: the first ``.py`` word is the entry script.
_LAUNCHER_MODULES = frozenset(
    {"torch.distributed.run", "torch.distributed.launch", "accelerate.commands.launch"}
)


@dataclass(frozen=True)
class Candidate:
    path: Path
    #: How the run names it: ``argument``, a flag (``--config``), or ``hydra``.
    source: str
    #: The argument (as parse_args names it) whose value names the file, if any.
    arg: str | None = None


class _Unreadable(Exception):
    """The file cannot be recorded; the message is the reason."""


# --- finding -------------------------------------------------------------------------------


def _entry_and_words(argv: tuple[str, ...]) -> tuple[str | None, list[str], list[str]]:
    """(the entry script as written, a launcher's words before it, the words after it)."""
    from expdna.collectors.config import _PYTHON

    words = list(argv)
    if not words:
        return None, [], []
    if _PYTHON.match(os.path.basename(words[0])):
        rest = script_argv(words)
        before = words[: len(words) - len(rest)]
        if len(before) >= 3 and before[-2] == "-m":
            if before[-1] in _LAUNCHER_MODULES:
                return _first_script(rest)
            return None, [], rest
        if len(before) >= 3 and before[-2] == "-c":
            return None, [], rest
        return (before[-1] if len(before) >= 2 else None), [], rest
    if words[0].endswith(".py"):
        return words[0], [], words[1:]
    return _first_script(words[1:])  # torchrun, accelerate launch, deepspeed ...


def _first_script(words: list[str]) -> tuple[str | None, list[str], list[str]]:
    for i, word in enumerate(words):
        if word.endswith(".py") and not word.startswith("-"):
            return word, words[:i], words[i + 1 :]
    return None, [], words


def _suffix_format(word: str) -> str | None:
    return SUFFIX_FORMATS.get(os.path.splitext(word)[1].lower())


def _existing(cwd: Path, word: str, max_size: int | None = None) -> Path | None:
    """``word`` as a path when it names something that is not a directory (nor, with
    ``max_size``, a regular file larger than that)."""
    if not word or "\0" in word or len(word) > 4096:
        return None
    path = Path(os.path.abspath(cwd / os.path.expanduser(word)))
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    if max_size is not None and stat.S_ISREG(st.st_mode) and st.st_size > max_size:
        return None
    return path


def _under(path: Path, roots: list[Path]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def find_config_files(ctx: CollectContext) -> list[Candidate]:
    """The config files named by ``ctx.argv`` and Hydra's output directory, in argv order."""
    entry, launcher, words = _entry_and_words(ctx.argv)
    skip = {os.path.realpath(ctx.cwd / entry)} if entry else set()
    if ctx.caller_file is not None:
        skip.add(os.path.realpath(ctx.cwd / ctx.caller_file))
    found: dict[str, Candidate] = {}
    # Loaded by api.collect already (see worktree.output_roots): no import in this thread.
    from expdna.collectors.worktree import output_roots
    from expdna.manifest.dna import is_per_run_arg

    # A root at or above the working directory (``--output_dir .``) would take every file.
    roots = [r for r in output_roots(ctx) if not _under(ctx.cwd, [r])]

    def add(word: str, source: str, flag: str | None = None) -> None:
        arg = flag.lstrip("-").replace("-", "_") if flag else None
        named = source in CONFIG_FLAGS or source in ("hydra", "--config-name")
        if not named and arg is not None and is_per_run_arg(arg):
            return  # --log-file train.json: the run's own output, not its setup
        # A file found by its extension alone and larger than a config file can be is data
        # (--train_file train.json): not a config file, so never an unknown one either.
        path = _existing(ctx.cwd, word, None if named else READ_MAX)
        if path is None or os.path.realpath(path) in skip:
            return
        if source != "hydra" and _under(path, roots):
            return  # written by this run (under its output directory)
        found.setdefault(os.path.realpath(path), Candidate(path, source, arg))

    hydra_path: str | None = None
    hydra_name: str | None = None
    flag: str | None = None  # the previous word, when it was an option without "=value"
    # A launcher's own config (accelerate's --config_file) counts too; its .py words do not.
    for position, word in enumerate([*launcher, *words]):
        after_entry = position >= len(launcher)
        if word.startswith("-") and len(word) > 1 and not _is_number(word):
            name, eq, value = word.partition("=")
            flag = None if eq else name
            if eq and name in _HYDRA_PATH:
                hydra_path = value
            elif eq and name in _HYDRA_NAME:
                hydra_name = value
            elif eq and (name in CONFIG_FLAGS or _suffix_format(value) not in (None, "python")):
                add(value, name if name in CONFIG_FLAGS else "argument", name)
            continue
        if flag in _HYDRA_PATH:
            hydra_path = word
        elif flag in _HYDRA_NAME:
            hydra_name = word
        elif flag in CONFIG_FLAGS:
            add(word, flag, flag)
        elif _suffix_format(word) == "python":
            if flag is None and after_entry:  # nanoGPT: positional .py files after the script
                add(word, "argument")
        elif _suffix_format(word) is not None:
            add(word, "argument", flag)
        flag = None
    if hydra_name is not None:
        _add_hydra_primary(ctx, entry, hydra_path, hydra_name, add)
    for directory in _hydra_output_dirs(ctx):
        add(str(directory / ".hydra" / "config.yaml"), "hydra")
    return list(found.values())[:MAX_FILES]


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _add_hydra_primary(
    ctx: CollectContext, entry: str | None, config_path: str | None, name: str, add: Any
) -> None:
    """Hydra's primary config: ``--config-name`` inside ``--config-path`` (relative to the
    working directory, or to the entry script's folder as in ``@hydra.main``)."""
    if config_path is None:
        return
    file = name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"
    bases = [ctx.cwd]
    if entry:
        bases.append((ctx.cwd / entry).parent)
    for base in bases:
        candidate = base / config_path / file
        if _existing(ctx.cwd, str(candidate)) is not None:
            add(str(candidate), "--config-name", "--config-path")
            return


def _hydra_runtime() -> dict[str, Any] | None:
    """The running Hydra app's output directory, config name and overrides, when this
    process is one (Hydra already imported and initialised; never imported here)."""
    module = sys.modules.get("hydra.core.hydra_config")
    hydra_config = getattr(module, "HydraConfig", None)
    if hydra_config is None:
        return None
    try:
        if not hydra_config.initialized():
            return None
        cfg = hydra_config.get()
        return {
            "output_dir": str(cfg.runtime.output_dir),
            "config_name": cfg.job.config_name,
            "overrides": [str(o) for o in cfg.overrides.task],
        }
    except Exception as exc:  # another Hydra version's layout: say so, record the rest
        log.info("reading HydraConfig failed: %s", exc)
        return None


def _hydra_output_dirs(ctx: CollectContext) -> list[Path]:
    dirs = [Path(os.path.abspath(ctx.cwd / r)) for r in ctx.output_roots]
    dirs.append(Path(os.path.abspath(ctx.cwd)))
    runtime = _hydra_runtime()
    if runtime is not None:
        dirs.append(Path(os.path.abspath(ctx.cwd / runtime["output_dir"])))
    return [d for d in dict.fromkeys(dirs) if os.path.isfile(d / ".hydra" / "config.yaml")]


# --- reading -------------------------------------------------------------------------------


def _read(path: Path, deadline: float) -> bytes:
    """The bytes of a regular file of at most :data:`READ_MAX` bytes, or :class:`_Unreadable`."""
    try:
        fd = open_regular(str(path))
    except NotRegularFileError as exc:
        raise _Unreadable(f"not a regular file ({exc.kind})") from None
    except FileNotFoundError:
        raise _Unreadable("vanished before it could be read") from None
    except OSError as exc:
        raise _Unreadable(f"unreadable: {exc.strerror or exc}") from None
    try:
        size = os.fstat(fd).st_size
        if size > READ_MAX:
            raise _Unreadable(f"too large for a config file ({size} bytes > {READ_MAX})")
        chunks: list[bytes] = []
        total = 0
        while True:
            if time.monotonic() > deadline:
                raise _Unreadable("not read before the collector's deadline")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            total += len(chunk)
            if total > READ_MAX:  # grew while being read
                raise _Unreadable(f"too large for a config file (over {READ_MAX} bytes)")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _Unreadable(f"unreadable: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _decode(data: bytes) -> str:
    if b"\0" in data[:8192]:
        raise _Unreadable("binary (holds NUL bytes), not a config file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"not UTF-8 text (byte {exc.start})") from None


# --- parsing -------------------------------------------------------------------------------


def _sniff(text: str) -> str:
    return "json" if text.lstrip()[:1] in ("{", "[") else "yaml"


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
            raise ValueError("YAML not parsed: PyYAML is not installed") from None
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
        return _python(text)[0]
    raise ValueError(f"no parser for {fmt}")


def _python(text: str) -> tuple[dict[str, Any], list[str]]:
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


def _resolve_hydra(values: Any, text: str) -> tuple[Any, str | None]:
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


# --- recording -----------------------------------------------------------------------------


def _labels(paths: list[Path]) -> dict[Path, str]:
    """A short unique name per file: its name, with parent folders only where two clash."""
    depth = {p: 1 for p in paths}
    while True:
        labels = {p: "/".join(p.parts[-depth[p] :]) for p in paths}
        clashes = [p for p in paths if list(labels.values()).count(labels[p]) > 1]
        grown = [p for p in clashes if depth[p] < len(p.parts)]
        if not grown:
            return labels
        for p in grown:
            depth[p] += 1


def _record(candidate: Candidate, deadline: float) -> tuple[dict[str, Any], Any, str | None]:
    """(the file's details, its parsed values or None, why it is unknown or None)."""
    from expdna.manifest.redact import redact_text

    path = candidate.path
    fmt = _suffix_format(path.name)
    details: dict[str, Any] = {"source": candidate.source, "format": fmt}
    try:
        data = _read(path, deadline)
        text = _decode(data)
    except _Unreadable as exc:
        details["unknown"] = str(exc)
        return details, None, f"config file {path}: {exc}"
    redacted = redact_text(text)
    encoded = redacted.encode("utf-8")
    details.update(size=len(data), digest=ref_of(encoded), truncated=len(encoded) > TEXT_MAX)
    if details["truncated"]:
        details["parse_error"] = f"not parsed: over {TEXT_MAX} bytes"
        return details, None, None
    details["text"] = redacted
    fmt = fmt if fmt is not None else _sniff(text)
    details["format"] = fmt
    skipped: list[str] = []
    try:
        if fmt == "python":
            values, skipped = _python(text)
        else:
            values = parse_text(text, fmt)
        note = None
        if candidate.source == "hydra":
            values, note = _resolve_hydra(values, text)
        values = jsonable(values)
        if note:
            details["parse_error"] = note
    except ValueError as exc:
        details["parse_error"] = str(exc)[:500]
        return details, None, None
    if skipped:
        details["not_literal"] = skipped
    return details, values, None


def parsed_config_values(ctx: CollectContext) -> list[Any]:
    """The parsed values of each config file the run reads, in argv order (for the
    training collector; unreadable and unparsed files are left out)."""
    deadline = time.monotonic() + ctx.timeout_s
    values = []
    for candidate in find_config_files(ctx):
        try:
            _, parsed, _ = _record(candidate, deadline)
        except Exception as exc:  # training fields from argv must not depend on this
            log.debug("config file %s: %s", candidate.path, exc)
            continue
        if parsed is not None:
            values.append(parsed)
    return values


def collect_config_files(ctx: CollectContext) -> dict[str, Any]:
    from expdna.manifest.redact import redact_text

    deadline = time.monotonic() + ctx.timeout_s
    candidates = find_config_files(ctx)
    runtime = _hydra_runtime()
    if not candidates and runtime is None:
        raise NotAvailable("no config files in argv")
    labels = _labels([c.path for c in candidates])
    args = sorted({c.arg for c in candidates if c.arg is not None})
    files: dict[str, str] = {}
    details: dict[str, Any] = {}
    values: dict[str, Any] = {}
    unknown: list[str] = []
    room = VALUES_MAX_CHARS
    hydra: dict[str, Any] = {}
    for candidate in candidates:
        key = redact_text(str(candidate.path))
        record, parsed, why = _record(candidate, deadline)
        record["name"] = labels[candidate.path]
        details[key] = record
        if why is not None:
            unknown.append(why)
            continue
        files[key] = record["digest"]
        if parsed is not None:
            size = len(json.dumps(parsed, default=str))
            if size > room:
                record["values_omitted"] = f"{size} characters of values; room for {room}"
            else:
                room -= size
                values[record["name"]] = parsed
        if candidate.source == "hydra" and "overrides" not in hydra:
            overrides = _saved_overrides(candidate.path.parent / "overrides.yaml", deadline)
            if overrides is not None:
                hydra["overrides"] = overrides
    if runtime is not None:
        hydra.update(config_name=runtime["config_name"], overrides=runtime["overrides"])
    section: dict[str, Any] = {"config_files": files, "config_file_details": details}
    if args:
        section["config_file_args"] = args
    if values:
        section["config_values"] = values
    if hydra:
        section["hydra"] = hydra
    if unknown:
        raise Unknown(section, "; ".join(unknown))
    return section


def _saved_overrides(path: Path, deadline: float) -> list[str] | None:
    """Hydra's ``.hydra/overrides.yaml``: the command-line overrides of the run."""
    try:
        listed = parse_text(_decode(_read(path, deadline)), "yaml")
    except (_Unreadable, ValueError):
        return None
    return [str(o) for o in listed] if isinstance(listed, list) else None
