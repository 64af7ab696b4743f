"""Which files a run reads as configuration: argv words, well-known flags, Hydra.

See :mod:`expdna.collectors.config_files` for the rules; this module only finds the files
(a ``stat`` each, nothing opened).
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expdna.collectors.context import CollectContext
from expdna.manifest.command_line import parse_command

log = logging.getLogger(__name__)

#: Larger files are not configuration: recorded as unknown rather than read.
READ_MAX = 4 * 1024 * 1024
#: At most this many config files per run named by argv (a glob of data files is not
#: configuration), and per Hydra composition (its defaults lists).
MAX_FILES = 32
MAX_HYDRA_FILES = 128

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
#: Flags whose value may be a local model directory (Hugging Face scripts): its
#: ``config.json`` (the architecture: layers, sizes) is recorded as a config file, so a
#: 1-layer and a 2-layer local model are two setups, and moving the directory is not.
MODEL_DIR_FLAGS: frozenset[str] = frozenset(
    {
        "--model_name_or_path",
        "--model-name-or-path",
        "--model_path",
        "--model-path",
        "--config_name",
        "--config-name",
        "--model_dir",
        "--model-dir",
        "--pretrained_model_name_or_path",
    }
)
#: The file of a model directory that says what the model is.
MODEL_CONFIG = "config.json"
#: Hydra's flags whose value names its configs (read by :mod:`.hydra_compose`).
_HYDRA_FLAGS = frozenset(
    {"--config-path", "--config_path", "-cp", "--config-name", "--config_name", "-cn"}
    | {"--config-dir", "--config_dir", "-cd"}
)


@dataclass(frozen=True)
class Candidate:
    path: Path
    #: How the run names it: ``argument``, a flag (``--config``), or ``hydra``.
    source: str
    #: The argument (as parse_args names it) whose value names the file, if any.
    arg: str | None = None
    #: A Hydra app's config: Hydra's name for it (``trainer/cpu``) and the group choice
    #: that selected it (``trainer``; None for the primary and plain config entries).
    hydra_config: str | None = None
    hydra_group: str | None = None


def _entry_and_words(argv: tuple[str, ...]) -> tuple[str | None, list[str], list[str]]:
    """(the entry script as written, a launcher's words before it, the words after it)."""
    words = list(argv)
    if not words:
        return None, [], []
    shape = parse_command(words)
    if shape.launcher is None and shape.interpreter is None and not words[0].endswith(".py"):
        return _first_script(words[1:])  # mpirun -np 2 ... train.py: an unknown launcher
    return shape.script, list(shape.launcher_args), list(shape.args)


def _first_script(words: list[str]) -> tuple[str | None, list[str], list[str]]:
    for i, word in enumerate(words):
        if word.endswith(".py") and not word.startswith("-"):
            return word, words[:i], words[i + 1 :]
    return None, [], words


def suffix_format(word: str) -> str | None:
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


def find_config_files(ctx: CollectContext, warnings: list[str] | None = None) -> list[Candidate]:
    """The config files named by ``ctx.argv``, composed by a Hydra app and in Hydra's output
    directory, in argv order; what could not be found is said in ``warnings``."""
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

    def model_dir(word: str, name: str) -> bool:
        """A local model directory's config.json, added; whether the word was one."""
        if not word or "\0" in word or len(word) > 4096:
            return False
        folder = Path(os.path.abspath(ctx.cwd / os.path.expanduser(word)))
        if not (folder / MODEL_CONFIG).is_file():
            return False
        add(str(folder / MODEL_CONFIG), "model", name)
        return True

    flag: str | None = None  # the previous word, when it was an option without "=value"
    # A launcher's own config (accelerate's --config_file) counts too; its .py words do not.
    for position, word in enumerate([*launcher, *words]):
        after_entry = position >= len(launcher)
        if word.startswith("-") and len(word) > 1 and not _is_number(word):
            name, eq, value = word.partition("=")
            flag = None if eq else name
            local_model = eq and after_entry and name in MODEL_DIR_FLAGS and model_dir(value, name)
            if local_model or (eq and name in _HYDRA_FLAGS):
                pass
            elif eq and (name in CONFIG_FLAGS or suffix_format(value) not in (None, "python")):
                add(value, name if name in CONFIG_FLAGS else "argument", name)
            continue
        local_model = flag in MODEL_DIR_FLAGS and after_entry and model_dir(word, str(flag))
        if local_model or flag in _HYDRA_FLAGS:
            pass
        elif flag in CONFIG_FLAGS:
            add(word, flag, flag)
        elif suffix_format(word) == "python":
            if flag is None and after_entry:  # nanoGPT: positional .py files after the script
                add(word, "argument")
        elif suffix_format(word) is not None:
            add(word, "argument", flag)
        flag = None
    named = list(found.values())
    if len(named) > MAX_FILES:
        _said(warnings, f"{len(named)} config files in argv; the first {MAX_FILES} recorded")
    found = {os.path.realpath(c.path): c for c in named[:MAX_FILES]}
    for candidate in _hydra_files(ctx, entry, words, warnings):
        found.setdefault(os.path.realpath(candidate.path), candidate)
    for directory in _hydra_output_dirs(ctx):
        add(str(directory / ".hydra" / "config.yaml"), "hydra")
    return list(found.values())


def _said(warnings: list[str] | None, message: str) -> None:
    log.info("%s", message)
    if warnings is not None:
        warnings.append(message)


def _hydra_files(
    ctx: CollectContext, entry: str | None, words: list[str], warnings: list[str] | None
) -> list[Candidate]:
    """A Hydra app's primary config and the files its defaults lists compose."""
    from expdna.collectors.hydra_compose import compose_files

    # In a Hydra app that changed directory (hydra.job.chdir), argv is relative to where
    # it started.
    runtime = hydra_runtime()
    cwd = Path(runtime["cwd"]) if runtime is not None and runtime.get("cwd") else ctx.cwd
    composition = compose_files(cwd, entry, words)
    if composition is None:
        return []
    for message in composition.warnings:
        _said(warnings, message)
    files = composition.files
    if len(files) > MAX_HYDRA_FILES:
        _said(warnings, f"Hydra composes {len(files)} files; the first {MAX_HYDRA_FILES} recorded")
    # Its value is the directory, whose files' digests stand for it (as parse_args names it).
    flag = composition.path_flag
    path_arg = flag.lstrip("-").replace("-", "_") if flag else None
    return [
        Candidate(
            f.path,
            "--config-name" if f.primary else "hydra-defaults",
            path_arg if f.primary else None,
            f.config,
            f.group,
        )
        for f in files[:MAX_HYDRA_FILES]
    ]


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def hydra_runtime() -> dict[str, Any] | None:
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
            "cwd": str(cfg.runtime.cwd),
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
    runtime = hydra_runtime()
    if runtime is not None:
        dirs.append(Path(os.path.abspath(ctx.cwd / runtime["output_dir"])))
    return [d for d in dict.fromkeys(dirs) if os.path.isfile(d / ".hydra" / "config.yaml")]
