"""The ``code`` section: each git repository in play, its HEAD, dirtiness and full patch.

Repositories come from the caller's file, the working directory and ``--repo`` paths, in
that order. Every git call goes through :func:`expdna.collectors.process.run` with optional
locks off, so collecting never takes ``index.lock``, and without the caller's ``GIT_DIR``,
``GIT_INDEX_FILE`` and the like, so a git hook's environment cannot point it at another
repository. The patch of uncommitted work is made against a *copy* of the user's index, so
their staging area is never touched.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expdna.collectors import process
from expdna.collectors.context import CollectContext, NotAvailable, Noted, Partial, Unknown
from expdna.collectors.outputs import (
    IGNORE_FILE,
    PINNED_GROUP,
    LeftOut,
    add_ignored,
    add_known,
    exclude_options,
    ignore_options,
    is_known_output,
)
from expdna.collectors.unversioned import unversioned_tree
from expdna.collectors.worktree import (
    OWN_OUTPUT,
    FileHasher,
    exclusions,
    output_roots,
    split_untracked,
    users_work,
)
from expdna.digest import ref, ref_of
from expdna.manifest.command_line import parse_command

log = logging.getLogger(__name__)

_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
#: Variables that choose the repository, index, object store or refs git reads, or carry a
#: parent git's ``-c`` settings: what ``git rev-parse --local-env-vars`` prints (the list git
#: itself clears when it enters another repository; as of git 2.39, whose
#: GIT_INTERNAL_SUPER_PREFIX later releases dropped) plus GIT_NAMESPACE. A unit test checks
#: the installed git lists nothing more. A git hook runs with GIT_DIR and
#: GIT_INDEX_FILE set, and a user may export GIT_DIR; left in, they would make every call
#: read that repository instead of the one asked about. GIT_CEILING_DIRECTORIES and
#: GIT_DISCOVERY_ACROSS_FILESYSTEM stay: they can only stop discovery, never redirect it,
#: and users set them for reasons (slow network mounts, a checkout across mounts).
REPOSITORY_ENV = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS", "GIT_DIR", "GIT_GRAFT_FILE", "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE", "GIT_INTERNAL_SUPER_PREFIX", "GIT_NAMESPACE", "GIT_NO_REPLACE_OBJECTS",
    "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "GIT_REPLACE_REF_BASE", "GIT_SHALLOW_FILE",
    "GIT_WORK_TREE",
})  # fmt: skip
_DUBIOUS = re.compile(
    rb"detected dubious ownership in repository at '([^']*)'"
    rb"|unsafe repository \('([^']*)' is owned by someone else\)"
)
# Pinned so that the same change gives the same patch text whatever the user's diff.* config.
_DIFF_OPTS = (
    "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--full-index",
    "--diff-algorithm=myers", "--indent-heuristic", "--unified=3", "--inter-hunk-context=0",
    "--src-prefix=a/", "--dst-prefix=b/", f"-O{os.devnull}",
)  # fmt: skip
_SUBMODULE_STATES = {" ": "clean", "+": "modified", "-": "uninitialized", "U": "conflict"}


class GitError(Exception):
    """A git command exited non-zero."""


@dataclass
class _Git:
    """Runs git for one collection: fixed environment, one shared deadline.

    ``env`` holds no :data:`REPOSITORY_ENV` name, and none is inherited from ``os.environ``;
    a call's own ``env`` (the temporary index of the patch) may set one. Directories that
    git refuses for dubious ownership are remembered and passed as ``-c safe.directory=…``
    on later command lines; no configuration file is ever written.
    """

    env: Mapping[str, str]
    budget_s: float
    deadline: float = field(init=False)
    safe_dirs: list[str] = field(default_factory=list)
    #: Hashes a file (hex, size) through the digest cache, opened on first use.
    hasher: FileHasher = field(default_factory=lambda: FileHasher(use_cache=False))

    def __call__(
        self,
        where: Path,
        *args: str,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
    ) -> process.Completed:
        while True:
            argv = ["git", *self._overrides(), "-C", str(where), *args]
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(argv, self.budget_s)
            done = process.run(
                argv,
                env={**self.env, **(env or {})},
                timeout_s=left,
                input=input,
                unset=REPOSITORY_ENV,
            )
            refused = _dubious_dir(done, where)
            if refused is None or refused in self.safe_dirs or len(self.safe_dirs) > 16:
                break
            log.info("git refuses %s (dubious ownership); trusting it for reading", refused)
            self.safe_dirs.append(refused)
        if check and done.returncode != 0:
            raise GitError(f"git {' '.join(args[:2])}: exit {done.returncode}: {_last(done)}")
        return done

    def _overrides(self) -> list[str]:
        if not self.safe_dirs:
            return []
        # A trusted foreign repo must not get to run its own fsmonitor hook.
        flags = ["-c", "core.fsmonitor=false"]
        for path in self.safe_dirs:
            flags += ["-c", f"safe.directory={path}"]
        return flags

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.budget_s


@dataclass(frozen=True)
class _Repo:
    top: Path
    shallow: bool
    index: Path


def collect_git(ctx: CollectContext) -> Noted:
    """Describe every repository in play, keyed by the basename of its top level."""
    own = {k: v for k, v in ctx.environ.items() if k not in REPOSITORY_ENV}
    hasher = FileHasher(use_cache=ctx.use_cache, environ=ctx.environ)
    git = _Git(env={**own, **_GIT_ENV}, budget_s=ctx.timeout_s, hasher=hasher)
    hasher.deadline = git.deadline
    try:
        return _collect(ctx, git)
    finally:
        hasher.close()


def _collect(ctx: CollectContext, git: _Git) -> Noted:
    starts: list[tuple[Path, bool]] = []  # (directory, named explicitly by the user)
    if ctx.caller_file is not None:
        starts.append((_absolute(ctx, ctx.caller_file).parent, False))
    else:
        # The command's entry script (generate): its repository, as the hook inside the
        # script finds it from its own file, also when generate runs outside the checkout.
        script = parse_command(ctx.argv).script
        entry = _absolute(ctx, Path(script)) if script and "\0" not in script else None
        if entry is not None and entry.is_file():
            starts.append((entry.parent, False))
    starts.append((ctx.cwd, False))
    starts += [(_absolute(ctx, path), True) for path in ctx.repos]

    repos: dict[Path, _Repo] = {}
    problems: list[str] = []
    for start, explicit in starts:
        try:
            repo = _locate(git, start)
        except FileNotFoundError as exc:
            # The code is there but cannot be described: unknown, never known and empty.
            raise Unknown({}, f"git is not installed: {exc}") from exc
        if repo is not None:
            repos.setdefault(repo.top, repo)
        elif explicit:
            problems.append(f"{start}: not a git repository")
    if not repos:
        return _outside_git(ctx, git)

    section: dict[str, Any] = {}
    notes: list[str] = []
    roots = output_roots(ctx)
    for name, repo in zip(_names(list(repos)), repos.values(), strict=True):
        try:
            section[name], warnings, left_out = _describe(git, repo, roots, ctx)
        except GitError as exc:
            problems.append(f"{repo.top}: {exc}")
            continue
        problems += [f"{name}: {warning}" for warning in warnings]
        prefix = f"{name}: " if len(repos) > 1 else ""
        notes += [f"{prefix}{note}" for note in left_out.notes()]
    if problems:
        raise Partial(Noted(section, notes), "; ".join(problems))
    return Noted(section, notes)


def _outside_git(ctx: CollectContext, git: _Git) -> Noted:
    """No repository: the entry script's folder by digest, with a warning."""
    script = ctx.caller_file
    if script is None:
        written = parse_command(ctx.argv).script
        script = Path(written) if written else None
    entry = _absolute(ctx, script) if script is not None else None
    if entry is None or not entry.is_file():
        raise NotAvailable(f"not a git repository, and no entry script: {ctx.cwd}")
    top = entry.parent
    log.warning("expdna: %s is not in a git repository; recording its files by digest", top)
    assert git.hasher is not None
    section = {top.name or "code": unversioned_tree(top, git.hasher)}
    raise Partial(Noted(section, []), f"{top}: not a git repository; files recorded by digest")


def _locate(git: _Git, start: Path) -> _Repo | None:
    done = git(
        start, "rev-parse", "--show-toplevel", "--is-shallow-repository", "--git-path", "index",
        check=False,
    )  # fmt: skip
    lines = os.fsdecode(done.stdout).splitlines()
    if done.returncode != 0 or len(lines) != 3:
        log.debug("no git work tree at %s: %s", start, _last(done))
        return None
    top, shallow, index = lines
    return _Repo(top=Path(top), shallow=shallow == "true", index=Path(start, index))


def _describe(
    git: _Git, repo: _Repo, roots: list[Path], ctx: CollectContext
) -> tuple[dict[str, Any], list[str], LeftOut]:
    status = git(
        repo.top, "status", "--porcelain=v2", "--branch", "-z",
        "--untracked-files=no", "--no-ahead-behind",
    )  # fmt: skip
    commit, head, changed = _parse_status(status.stdout)
    untracked, left_out = _untracked(git, repo.top, roots, ctx)
    dirty = changed or bool(untracked)
    warnings: list[str] = []
    detached = head == "(detached)"
    state = {
        "commit": commit,
        "branch": None if detached else head,
        "detached": detached,
        "dirty": dirty,
        "remote": _remote(git, repo.top),
        "shallow": repo.shallow,
        "patch": _patch(git, repo, commit, untracked, warnings) if dirty else None,
        "submodules": _submodules(git, repo.top, warnings),
    }
    return state, warnings, left_out


def _untracked(
    git: _Git, top: Path, roots: list[Path], ctx: CollectContext
) -> tuple[list[bytes], LeftOut]:
    """Untracked files that are the user's work (see :func:`worktree.users_work`)."""
    excludes = ["--exclude-standard", *ignore_options(top), *exclude_options()]
    listed = git(
        top, "ls-files", "--others", *excludes, "-z", "--", ".", *exclusions(top, roots),
    ).stdout  # fmt: skip
    work, left_out = users_work(listed, top)
    work = _not_pinned(work, left_out, top, ctx)
    # What the known-output patterns left unlisted, each folder once (git does not walk it).
    known = git(
        top, "ls-files", "--others", "--ignored", "--directory", *excludes, "-z",
        "--", ".", *exclusions(top, roots),
    ).stdout  # fmt: skip
    entries = [os.fsdecode(e) for e in known.split(b"\0") if e]
    add_known(left_out, top, entries)
    _ignored_by_file(git, top, [e for e in entries if not is_known_output(e)], left_out)
    return work, left_out


def _ignored_by_file(git: _Git, top: Path, entries: list[str], left_out: LeftOut) -> None:
    """Name what ``.expdnaignore`` left out (and nothing else would): git says which
    ignore file decided each entry when ``.expdnaignore`` stands in for the global one."""
    ignore = top / IGNORE_FILE
    if not entries or not ignore.is_file():
        return
    matched = git(
        top, "-c", f"core.excludesFile={ignore}", "check-ignore", "-v", "-z", "--stdin",
        check=False, input=b"\0".join(os.fsencode(e) for e in entries) + b"\0",
    ).stdout  # fmt: skip
    add_ignored(left_out, top, matched, ignore)


def _not_pinned(
    work: list[bytes], left_out: LeftOut, top: Path, ctx: CollectContext
) -> list[bytes]:
    """``work`` without the checkpoints the store knows as pinned (another run's outputs)."""
    if not work or ctx.pinned is None:
        return work
    pinned = ctx.pinned()
    if not pinned:
        return work
    kept: list[bytes] = []
    for raw in work:
        if os.path.realpath(top / os.fsdecode(raw)) in pinned:
            left_out.add(PINNED_GROUP)
        else:
            kept.append(raw)
    return kept


def _parse_status(out: bytes) -> tuple[str | None, str | None, bool]:
    """(HEAD commit or None if unborn, branch.head, dirty) from ``status --porcelain=v2 -z``."""
    commit: str | None = None
    head: str | None = None
    for record in out.split(b"\0"):
        if not record:
            continue
        if record.startswith(b"? ") and OWN_OUTPUT.search(record[2:]):
            continue
        if not record.startswith(b"# "):
            return commit, head, True  # headers come first; any entry is a change
        key, _, value = record[2:].decode(errors="replace").partition(" ")
        if key == "branch.oid":
            commit = None if value == "(initial)" else value
        elif key == "branch.head":
            head = value
    return commit, head, False


def _remote(git: _Git, top: Path) -> str | None:
    done = git(top, "config", "-z", "--get-regexp", r"^remote\..*\.url$", check=False)
    if done.returncode == 1:  # no remote configured
        return None
    if done.returncode != 0:
        raise GitError(f"git config: exit {done.returncode}: {_last(done)}")
    urls: dict[str, str] = {}
    for record in done.stdout.split(b"\0"):
        key, _, url = record.decode(errors="replace").partition("\n")
        if key:
            urls.setdefault(key.removeprefix("remote.").removesuffix(".url"), url)
    if not urls:
        return None
    return strip_credentials(urls.get("origin", next(iter(urls.values()))))


def strip_credentials(url: str) -> str:
    """Drop ``user:password@`` from a URL (and a bare ``token@`` from http/ftp URLs)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url  # a path or scp-like ``git@host:org/repo``: no secret goes there
    netloc = rest.split("/", 1)[0]
    userinfo, at, _ = netloc.rpartition("@")
    if not at:
        return url
    if ":" in userinfo or scheme.lower() in {"http", "https", "ftp", "ftps"}:
        rest = rest[len(userinfo) + 1 :]
    return f"{scheme}://{rest}"


def _patch(
    git: _Git, repo: _Repo, commit: str | None, untracked: list[bytes], warnings: list[str]
) -> dict[str, Any] | None:
    try:
        return _make_patch(git, repo, commit, untracked, warnings)
    except GitError as exc:
        warnings.append(f"no patch: {exc}")
        return None


def _make_patch(
    git: _Git, repo: _Repo, commit: str | None, listed: list[bytes], warnings: list[str]
) -> dict[str, Any] | None:
    """Staged, unstaged and untracked changes against HEAD, made on a copy of the index."""
    top = repo.top
    base = commit or _empty_tree(git, top)
    # A trailing slash marks an embedded repository: left to the user, not inlined.
    untracked, by_digest = split_untracked(top, [p for p in listed if not p.endswith(b"/")])
    with tempfile.TemporaryDirectory(prefix="expdna-git-") as tmp:
        index = Path(tmp, "index")
        if repo.index.is_file():
            shutil.copy2(repo.index, index)  # keep the mtime: git uses it to spot racy edits
        env = {"GIT_INDEX_FILE": str(index)}
        if untracked:
            added = git(
                top, "--literal-pathspecs", "add", "--intent-to-add",
                "--pathspec-from-file=-", "--pathspec-file-nul",
                env=env, input=b"\0".join(untracked), check=False,
            )  # fmt: skip
            if added.returncode != 0:
                warnings.append(f"untracked files left out of the patch: {_last(added)}")
        diff = git(top, "diff", *_DIFF_OPTS, base, "--", env=env).stdout
        numstat = git(top, "diff", "--numstat", "-z", *_DIFF_OPTS, base, "--", env=env)
    binaries = [
        _binary_file(git, top, raw)
        for added_n, deleted_n, raw in _numstat(numstat.stdout)
        if added_n == b"-" and deleted_n == b"-"
    ]
    binaries += [_binary_file(git, top, raw) for raw in by_digest]
    binaries.sort(key=lambda entry: entry["path"])
    if not diff and not binaries:
        return None
    text = diff.decode("utf-8", errors="replace")
    data = text.encode("utf-8")
    return {"digest": ref_of(data), "size": len(data), "text": text, "binary_files": binaries}


def _empty_tree(git: _Git, top: Path) -> str:
    """The empty tree's id in this repository's hash (what an unborn HEAD is compared to)."""
    return git(top, "hash-object", "-t", "tree", "--stdin", input=b"").stdout.decode().strip()


def _numstat(out: bytes) -> list[tuple[bytes, bytes, bytes]]:
    rows = []
    for record in out.split(b"\0"):
        parts = record.split(b"\t", 2)
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def _binary_file(git: _Git, top: Path, raw: bytes) -> dict[str, Any]:
    path = top / os.fsdecode(raw)
    name = os.fsdecode(raw)  # undecodable bytes are escaped with the rest of the manifest
    try:
        hex_digest, size = git.hasher(path)
    except FileNotFoundError:  # deleted in the working tree
        return {"path": name, "digest": None, "size": None}
    return {"path": name, "digest": ref(hex_digest), "size": size}


def _submodules(git: _Git, top: Path, warnings: list[str]) -> list[dict[str, Any]]:
    if not (top / ".gitmodules").is_file():
        return []
    try:
        actual = _submodule_lines(git(top, "submodule", "status", "--recursive").stdout)
        recorded = _submodule_lines(
            git(top, "submodule", "status", "--cached", "--recursive").stdout
        )
    except GitError as exc:
        warnings.append(f"submodules: {exc}")
        return []
    found = []
    for path, (flag, sha) in sorted(actual.items()):
        commit = recorded.get(path, (flag, sha))[1]
        found.append(
            {
                "path": path,
                "commit": None if _is_null(commit) else commit,
                "checked_out": None if flag == "-" or _is_null(sha) else sha,
                "state": _SUBMODULE_STATES.get(flag, "unknown"),
            }
        )
    return found


def _submodule_lines(out: bytes) -> dict[str, tuple[str, str]]:
    """``{path: (flag, sha)}`` from lines ``<flag><sha> <path>[ (<describe>)]``."""
    entries = {}
    for line in out.decode(errors="replace").splitlines():
        flag, (sha, _, tail) = line[:1], line[1:].partition(" ")
        if flag != "-" and tail.endswith(")") and " (" in tail:
            tail = tail.rsplit(" (", 1)[0]
        if tail:
            entries[tail] = (flag, sha)
    return entries


def _is_null(sha: str) -> bool:
    return not sha.strip("0")


def _dubious_dir(done: process.Completed, where: Path) -> str | None:
    if done.returncode == 0:
        return None
    match = _DUBIOUS.search(done.stderr)
    if match is None:
        return None
    named = match.group(1) or match.group(2)
    return os.fsdecode(named) if named else str(where.resolve())


def _names(tops: list[Path]) -> list[str]:
    """Basenames, made unique in order with ``-2``, ``-3``… suffixes."""
    used: set[str] = set()
    names = []
    for top in tops:
        base = top.name or str(top)
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        names.append(name)
    return names


def _absolute(ctx: CollectContext, path: Path) -> Path:
    return path if path.is_absolute() else ctx.cwd / path


def _last(done: process.Completed) -> str:
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(no message)"
