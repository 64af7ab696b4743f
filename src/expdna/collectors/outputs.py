"""Which untracked files in a checkout are some tool's outputs rather than the user's code.

An untracked file is code unless it is (in this order):

- under a known tool output location (:data:`OUTPUT_DIRS`: W&B's ``wandb/``, MLflow's
  ``mlruns/``, Lightning's ``lightning_logs/``, ``__pycache__/``…, at any depth), a Hydra
  run folder (a folder holding a ``.hydra`` folder, grouped under ``outputs/`` or
  ``multirun/`` where it lies in one), a known output
  file (:data:`OUTPUT_FILES`: ``mlflow.db``, TensorBoard event files), or the places
  ``WANDB_DIR`` and a local ``MLFLOW_TRACKING_URI`` name;
- an expdna manifest, recognised by its content wherever it is and whatever its name
  (:func:`is_manifest_file`);
- a checkpoint pinned to a run in the store (by its path: ``expdna.store.pinned_paths``,
  asked only when untracked files remain), grouped as :data:`PINNED_GROUP`.

A folder is never an output folder because a manifest sits in it, and the repository root
never is. Each group left out is named once for the manifest's ``collection``
(``wandb/ (12 entries)``: a folder git was told not to walk is counted by its entries, not
its files, which would cost more than the whole collection). A ``.expdnaignore`` file
(gitignore syntax) at the top of the checkout covers the rest; git applies it
(:func:`ignore_options`), and what it leaves out that nothing else would is named too
(``left out by .expdnaignore: *.ckpt (3 files)``, a folder by its entries:
:func:`add_ignored`).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

#: Directory names whose whole tree is a tool's output, wherever they are in the checkout.
OUTPUT_DIRS: tuple[str, ...] = (
    "wandb",
    "mlruns",
    "lightning_logs",
    "__pycache__",
    ".ipynb_checkpoints",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
)
#: Hydra's run folders: outputs only when a run left its ``.hydra`` folder in them.
HYDRA_DIRS: tuple[str, ...] = ("outputs", "multirun")
#: File names (globs) that are a tool's output wherever they are.
OUTPUT_FILES: tuple[str, ...] = ("mlflow.db", "events.out.tfevents.*", "*.pyc")
#: The ignore file, at the top of the checkout, in gitignore syntax.
IGNORE_FILE = ".expdnaignore"
#: The group pinned checkpoints are named as in ``collection``.
PINNED_GROUP = "checkpoints pinned in the store"
#: How much of a ``.json`` file is read to tell whether it is an expdna manifest.
SNIFF_BYTES = 4096

_MANIFEST_SCHEMA = re.compile(rb'"schema_version"\s*:\s*"\d+\.\d+"')
_MANIFEST_RUN_ID = re.compile(rb'"run_id"\s*:\s*"')


def is_manifest_file(path: Path) -> bool:
    """Whether ``path`` holds an expdna manifest: a JSON object naming a schema version and
    a run id near its start (as every manifest expdna writes does)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    start = head.lstrip()
    return (
        start.startswith(b"{")
        and _MANIFEST_SCHEMA.search(head) is not None
        and _MANIFEST_RUN_ID.search(head) is not None
    )


@dataclass
class LeftOut:
    """Untracked files judged outputs, counted by group (``wandb/``, ``expdna manifests``)."""

    #: Files counted one by one (listed by git): group -> files.
    groups: dict[str, int] = field(default_factory=dict)
    #: Folders git never walked: folder -> entries directly in it.
    folders: dict[str, int] = field(default_factory=dict)
    #: Left out by ``.expdnaignore`` alone: its pattern -> files, and folders -> entries.
    ignored: dict[str, int] = field(default_factory=dict)
    ignored_folders: dict[str, int] = field(default_factory=dict)

    def add(self, group: str) -> None:
        self.groups[group] = self.groups.get(group, 0) + 1

    def notes(self) -> list[str]:
        return _said("left out as outputs", self.groups, self.folders) + _said(
            f"left out by {IGNORE_FILE}", self.ignored, self.ignored_folders
        )


def _said(why: str, files: Mapping[str, int], folders: Mapping[str, int]) -> list[str]:
    said = {group: _count(count, "file") for group, count in files.items()}
    said |= {folder: _count(count, "entry") for folder, count in folders.items()}
    return [f"{why}: {group} ({said[group]})" for group in sorted(said)]


def _count(count: int, noun: str) -> str:
    plural = noun if count == 1 else ("entries" if noun == "entry" else f"{noun}s")
    return f"{count} {plural}"


def named_places(environ: Mapping[str, str], cwd: Path) -> list[Path]:
    """Output places the tools' variables name: ``$WANDB_DIR/wandb`` and a file or SQLite
    ``MLFLOW_TRACKING_URI`` (left out like this run's own output roots)."""
    places: list[str] = []
    wandb_dir = environ.get("WANDB_DIR")
    if wandb_dir:
        places.append(str(cwd / wandb_dir / "wandb"))
    uri = environ.get("MLFLOW_TRACKING_URI", "")
    if uri.startswith("sqlite:///"):
        places.append(str(cwd / unquote(uri[len("sqlite:///") :])))
    elif uri.startswith("file:"):
        places.append(unquote(urlparse(uri).path) or uri[len("file:") :])
    elif uri and "://" not in uri:
        places.append(str(cwd / uri))
    return [Path(os.path.abspath(place)) for place in places]


def _hydra_roots(paths: Iterable[str]) -> set[str]:
    """Hydra run folders: an ``outputs/`` or ``multirun/`` folder (with its prefix) that
    holds a ``.hydra``, else the folder a ``.hydra`` sits in (a ``hydra.run.dir=out/a``),
    never the repository root (there only ``.hydra/`` itself)."""
    roots: set[str] = set()
    for path in paths:
        parts = path.split("/")
        if ".hydra" not in parts:
            continue
        at = parts.index(".hydra")
        for i, part in enumerate(parts[:at]):
            if part in HYDRA_DIRS:
                roots.add("/".join(parts[: i + 1]) + "/")
                break
        else:
            roots.add("/".join(parts[: at if at else 1]) + "/")
    return roots


def _known_group(path: str, hydra: set[str]) -> str | None:
    """The output group of a listed ``path`` that git's patterns cannot tell (a Hydra run
    folder), else None."""
    for root in hydra:
        if path.startswith(root):
            return root
    return None


def split_outputs(top: Path, listed: list[str]) -> tuple[list[str], LeftOut]:
    """(the user's work, what was left out) of untracked paths relative to ``top``, listed
    by git with :func:`exclude_options` applied: Hydra run folders and manifests."""
    left_out = LeftOut()
    hydra = _hydra_roots(listed)
    work: list[str] = []
    for path in listed:
        group = _known_group(path, hydra)
        if group is None and path.lower().endswith(".json") and is_manifest_file(top / path):
            group = "expdna manifests"
        if group is None:
            work.append(path)
        else:
            left_out.add(group)
    return work, left_out


def exclude_options() -> list[str]:
    """``git ls-files`` options that leave the known output folders and files unlisted:
    git then never walks a 5,000-file ``wandb/`` folder."""
    return [f"--exclude={name}/" for name in OUTPUT_DIRS] + [
        f"--exclude={glob}" for glob in OUTPUT_FILES
    ]


def is_known_output(entry: str) -> bool:
    """An entry of ``git ls-files --ignored --directory`` that :func:`exclude_options` left
    out (``wandb/``, ``src/__pycache__/``, ``mlflow.db``)."""
    name = entry.rstrip("/").rsplit("/", 1)[-1]
    if entry.endswith("/"):
        return name in OUTPUT_DIRS
    return any(fnmatch.fnmatchcase(name, glob) for glob in OUTPUT_FILES)


def count_entries(folder: Path) -> int:
    """Entries directly in ``folder`` (a W&B folder's runs): one directory read, where
    counting every file of a 5,000-file tree would cost more than the whole collection."""
    try:
        with os.scandir(folder) as entries:
            return sum(1 for _ in entries)
    except OSError:
        return 0


def add_known(left_out: LeftOut, top: Path, entries: Iterable[str]) -> None:
    """Count the known output folders and files git left unlisted into ``left_out``."""
    for entry in entries:
        if not is_known_output(entry):
            continue
        if entry.endswith("/"):
            left_out.folders[entry] = count_entries(top / entry)
        else:
            name = entry.rsplit("/", 1)[-1]
            group = next(g for g in OUTPUT_FILES if fnmatch.fnmatchcase(name, g))
            left_out.add(group)


def add_ignored(left_out: LeftOut, top: Path, matched: bytes, ignore_file: Path) -> None:
    """Count into ``left_out`` the entries ``.expdnaignore`` left out: ``matched`` is
    ``git -c core.excludesFile=<.expdnaignore> check-ignore -v -z`` output, whose source
    names the file that decided each path (a ``.gitignore`` outranks it: such a path was
    never the user's code to begin with). A folder is counted by its entries, a file by the
    pattern that matched it."""
    fields = matched.split(b"\0")
    wanted = os.path.realpath(ignore_file)
    for i in range(0, len(fields) - 3, 4):
        source, _line, pattern, path = (os.fsdecode(f) for f in fields[i : i + 4])
        if not source or pattern.startswith("!"):
            continue  # not matched, or un-ignored by a negation
        if os.path.realpath(top / source) != wanted:
            continue
        if path.endswith("/"):
            left_out.ignored_folders[path] = count_entries(top / path)
        else:
            left_out.ignored[pattern] = left_out.ignored.get(pattern, 0) + 1


def ignore_options(top: Path) -> list[str]:
    """The ``git ls-files`` options that apply ``.expdnaignore`` at the top of ``top``."""
    ignore = top / IGNORE_FILE
    return [f"--exclude-from={ignore}"] if ignore.is_file() else []
