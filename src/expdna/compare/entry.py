"""Does the recorded command run recorded code? Its entry, found again on this machine.

The entry is what the command starts: the entry script (``python train.py``, ``torchrun
... train.py``, a hook's ``train.py``), the ``-m`` module (a file under the working
directory or a repository's ``src/``; an installed module is not recorded code), or the
program itself (``./train.sh``; a bare name such as ``bash`` is looked up on ``PATH`` and
is never recorded code). Inline code (``python -c``) is not a recorded file either, and
neither is a Ray worker (a hook inside a Ray task, actor or Tune trial records Ray's own
worker command: the driver that started it is not in the manifest).

The entry must lie inside a live repository that plays a recorded repository's part (the
commit and patch rules then say whether it holds the recorded code) and not be ignored by
git, which would leave it out of the recorded patch, or be a file of a recorded unversioned
tree (code outside git) with the digest recorded there. A manifest without a code section
records no code at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from expdna.compare.findings import ABSENT, Finding
from expdna.compare.repos import is_ignored, match_repos
from expdna.manifest.command_line import WORKER_LAUNCHERS, CommandShape, parse_command
from expdna.manifest.escape import to_os_str
from expdna.manifest.model import Manifest


@dataclass(frozen=True)
class Entry:
    """The entry of a command, as written and as found here."""

    kind: str  # script | module | program | inline | worker
    word: str  # as written in the manifest
    path: Path | None  # where it is on this machine, None where it is not a file here


def _home(word: str) -> str:
    from expdna.compare.rerun import expand_home

    return to_os_str(expand_home(word))


def _module_file(module: str, bases: list[Path]) -> Path | None:
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    for base in bases:
        for candidate in (
            base.joinpath(*parts).with_suffix(".py"),
            base.joinpath(*parts, "__main__.py"),
        ):
            if candidate.is_file():
                return candidate
    return None


def find_entry(shape: CommandShape, cwd: Path, tops: Mapping[str, Path]) -> Entry | None:
    """The entry of ``shape`` when run in ``cwd``; None for an empty command."""
    if shape.launcher in WORKER_LAUNCHERS:
        return Entry("worker", shape.launcher or "", None)
    if shape.module is not None:
        # `python -m` searches the working directory first; a src/ layout is installed
        # from the checkout (editable), so its modules are the repository's files too.
        bases = [cwd, *(top / "src" for top in tops.values()), *tops.values()]
        return Entry("module", shape.module, _module_file(shape.module, bases))
    if shape.script is not None:
        word = _home(shape.script)
        runs_itself = shape.interpreter is None and shape.launcher is None
        if runs_itself and "/" not in word and not word.endswith(".py"):
            return Entry("program", shape.script, None)  # found on PATH, not in a checkout
        path = Path(os.path.abspath(cwd / word))
        return Entry("script" if word.endswith(".py") else "program", shape.script, path)
    if shape.interpreter is not None:
        return Entry("inline", "-c" if "-c" in shape.interpreter_args else shape.interpreter, None)
    return None


def _inside(path: Path, top: Path) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(top)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def entry_findings(
    recorded: Manifest, current: Manifest, cwd: Path, tops: Mapping[str, Path]
) -> Iterator[Finding]:
    """FAIL unless the command's entry is a file of a recorded repository here."""
    if not recorded.command.argv:
        return
    if not recorded.code:
        yield Finding("code", "FAIL", None, None, "the manifest records no code to run")
    entry = find_entry(parse_command(recorded.command.argv), cwd, tops)
    if entry is None:
        return
    field = "command.entry"
    if entry.kind == "inline":
        yield Finding(field, "FAIL", None, None, "the command runs inline code (-c), no file")
        return
    if entry.kind == "worker":
        why = (
            f"the command is a {entry.word} worker's: the driver that started it is not "
            "recorded; rerun the driver"
        )
        yield Finding(field, "FAIL", None, None, why)
        return
    if entry.path is None:
        why = (
            f"module {entry.word} is no file under the working directory or a repository"
            if entry.kind == "module"
            else f"{entry.word} is a program on PATH, not a file of a recorded repository"
        )
        yield Finding(field, "FAIL", entry.word, ABSENT, why)
        return
    if not entry.path.exists():
        yield Finding(field, "FAIL", entry.word, ABSENT, f"no such file here: {entry.path}")
        return
    parts = match_repos(recorded.code, current.code)
    played = {live: name for name, live in parts.items()}
    for live, top in tops.items():
        if not _inside(entry.path, top):
            continue
        name = played.get(live)
        if name is None:
            continue
        if is_ignored(top, entry.path):
            note = f"ignored by git in {name}, so no recorded patch holds it"
            yield Finding(field, "FAIL", entry.word, str(entry.path), note)
            return
        yield Finding(field, "PASS", entry.word, str(entry.path), f"in repository {name}")
        return
    found = _in_unversioned(recorded, entry)
    if found is not None:
        yield found
        return
    yield Finding(
        field,
        "FAIL",
        entry.word,
        str(entry.path),
        "not inside a recorded repository: unrecorded code",
    )


def _in_unversioned(recorded: Manifest, entry: Entry) -> Finding | None:
    """The entry judged against a recorded unversioned tree (code outside git, recorded by
    digest from the entry script's folder: :mod:`expdna.collectors.unversioned`), where
    one lists it; None where none does."""
    from expdna.digest import hash_file, ref

    assert entry.path is not None
    for name, repo in recorded.code.items():
        extra = repo.model_extra or {}
        tree = extra.get("tree")
        if extra.get("unversioned") is not True or not isinstance(tree, Mapping):
            continue
        listed = {
            str(item[0]): str(item[1])
            for item in tree.get("files") or []
            if isinstance(item, list) and len(item) == 2
        }
        digest = listed.get(entry.path.name)
        if digest is None:
            continue
        here = str(entry.path)
        why = f"changed since it was recorded in unversioned tree {name}"
        if ref(hash_file(entry.path)[0]) != digest:
            return Finding("command.entry", "FAIL", entry.word, here, why)
        # The entry imports its neighbours: the tree is the code, not the entry alone.
        changes = _tree_changes(listed, entry.path.parent)
        if changes:
            return Finding("command.entry", "FAIL", entry.word, here, f"{why}: {changes}")
        return Finding("command.entry", "PASS", entry.word, here, f"in unversioned tree {name}")
    return None


#: How many changed files of an unversioned tree a finding names.
_NAMED_CHANGES = 5


def _tree_changes(listed: Mapping[str, str], top: Path) -> str:
    """The files under ``top`` that differ from the recorded ``{path: digest}`` listing,
    collected as the run collected them, in words ("" when none)."""
    from expdna.collectors.unversioned import unversioned_tree
    from expdna.collectors.worktree import FileHasher

    hasher = FileHasher(use_cache=True)
    try:
        files = unversioned_tree(top, hasher)["tree"]["files"]
    finally:
        hasher.close()
    here = {str(path): str(digest) for path, digest in files}
    changed = [
        f"{path} ({'missing' if path not in here else 'changed'})"
        for path, digest in listed.items()
        if here.get(path) != digest
    ]
    changed += [f"{path} (new)" for path in here if path not in listed]
    changed.sort()
    more = len(changed) - _NAMED_CHANGES
    return ", ".join(changed[:_NAMED_CHANGES]) + (f" (and {more} more)" if more > 0 else "")
