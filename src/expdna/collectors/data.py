"""Data files: a BLAKE3 digest per file and a digest of the sorted listing per dataset.

A dataset is a file or a directory given with ``--data``. Its listing is one line per
regular file, ``relpath\\tsize\\tblake3:<hex>\\n``, sorted by relpath (symlinks followed,
FIFOs and sockets skipped; ``\\``, tab and newline in a name escaped as ``\\\\``, ``\\t``,
``\\n``); the dataset's digest is ``blake3:`` of those bytes, the blob the store keeps.

Cost: one ``os.scandir`` walk reusing its stat results; then one cache row when no file's
stat changed (the digest cache's ``trees``), else one batched per-file query, and hashing only
what the cache cannot vouch for. During collection the
collector stops hashing shortly before its deadline and records the dataset without a
digest; what it hashed is cached, so the next run gets further.

Verifying a manifest's datasets against the disk is :mod:`expdna.compare.data`.
"""

from __future__ import annotations

import marshal
import os
import re
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expdna.collectors.context import CollectContext, Partial
from expdna.digest import hash_file, hex_of, ref, ref_hex, ref_of
from expdna.regular import NotRegularFileError

if TYPE_CHECKING:  # the cache (sqlite3) and pyarrow helpers load only when data is given
    from expdna.digest.cache import DigestCache, StatKey

#: Listings of datasets up to this many files in all are embedded in the manifest (about
#: 150 bytes a file in the indented file form, against the manifest's 100 KB cap).
EMBED_LISTING_FILES = 200
#: Progress is reported at most this often (seconds).
PROGRESS_EVERY_S = 0.1
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n"})
_UNESCAPES = {"\\\\": "\\", "\\t": "\t", "\\n": "\n"}
_UNESCAPE = re.compile(r"\\[\\tn]")

#: (relpath, size, hex) of one file.
Row = tuple[str, int, str]
#: (relpath, *stat key) of one file found by the walk; its path is ``Scan.base + relpath``.
#: One flat tuple, not a pair: half the allocations, and the garbage collector untracks
#: tuples of atoms, which keeps its passes short during a walk of many files.
Item = tuple[str, int, int, int, int, int]
ListingSource = Callable[[str], "bytes | None"]
_I64 = 1 << 63
_S_IFMT, _S_IFREG, _S_IFDIR = 0o170000, stat.S_IFREG, stat.S_IFDIR  # stat.S_IFMT() inlined
#: Directories are read through a descriptor where the platform allows it.
_SCANDIR_FD = os.scandir in os.supports_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Progress:
    """Hashing progress of one dataset: what needs hashing, not what the cache answered."""

    root: str
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    #: The last report for this dataset (finished, or stopped at the deadline).
    done: bool = False


ProgressFn = Callable[[Progress], None]


class _Stopped(Exception):
    """The collection deadline is near: stop hashing, keep what is done."""


@dataclass
class Scan:
    """One dataset, digested: the walk's items, the listing rows, and what went wrong.

    On a whole-tree cache hit the rows come from the cached listing, parsed only when
    someone asks for them (verifying needs the digest alone).
    """

    base: str = ""
    items: list[Item] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    complete: bool = True
    hashed: int = 0
    cached: int = 0
    _rows: list[Row] | None = None
    _blob: bytes | None = None
    _digest: str | None = None
    _load: Callable[[], bytes | None] | None = None

    @property
    def rows(self) -> list[Row]:
        if self._rows is None:
            self._rows = parse_listing(self.listing())
        return self._rows

    def listing(self) -> bytes:
        if self._blob is None and self._load is not None:
            self._blob = self._load()
            if self._blob is None:
                raise RuntimeError("the cached listing vanished; digest the dataset again")
        if self._blob is None:
            self._blob = listing_bytes(self.rows)
        return self._blob

    def digest(self) -> str | None:
        """``blake3:`` of the listing; None when a file could not be listed or hashed."""
        if not self.complete:
            return None
        if self._digest is None:
            self._digest = ref_of(self.listing())
        return self._digest

    def counts(self) -> dict[str, int]:
        """Files and bytes: as hashed when known (a file may change while read), else as
        the walk found them."""
        if self._rows is not None and self.complete:
            return {"files": len(self._rows), "bytes": sum(row[1] for row in self._rows)}
        return {"files": len(self.items), "bytes": sum(map(itemgetter(3), self.items))}


def _escape(rel: str) -> str:
    return rel.translate(_ESCAPES) if "\\" in rel or "\t" in rel or "\n" in rel else rel


def listing_bytes(rows: Iterable[Row]) -> bytes:
    """The listing blob of sorted rows (file names that are not UTF-8 kept as bytes)."""
    text = "".join([f"{_escape(rel)}\t{size}\t{ref(hexd)}\n" for rel, size, hexd in rows])
    return text.encode("utf-8", "surrogateescape")


def parse_listing(blob: bytes) -> list[Row]:
    """Rows of a listing blob; ValueError when it is not one."""
    rows = []
    lines = blob.decode("utf-8", "surrogateescape").split("\n")
    if lines.pop() != "":
        raise ValueError("a listing ends with a newline")
    for line in lines:
        rel, size, reference = line.split("\t")
        hexd = ref_hex(reference)
        if hexd is None:
            raise ValueError(f"not a blake3 reference: {reference!r}")
        if "\\" in rel:
            rel = _UNESCAPE.sub(lambda m: _UNESCAPES[m.group(0)], rel)
        rows.append((rel, int(size), hexd))
    return rows


def _walk(root: Path, scan: Scan) -> list[Item]:
    """Every regular file under ``root`` (symlinks followed), sorted by relpath."""
    top = os.path.abspath(root)
    st = os.stat(top)
    found: list[Item] = []
    if not stat.S_ISDIR(st.st_mode):
        scan.base = os.path.join(os.path.dirname(top), "")
        if stat.S_ISREG(st.st_mode):
            from expdna.digest.cache import stat_key

            found.append((os.path.basename(top), *stat_key(st)))
        return found
    scan.base = os.path.join(top, "")
    seen = {(st.st_dev, st.st_ino)}  # directories entered, against symlink cycles
    stack = [("", scan.base)]
    while stack:
        prefix, directory = stack.pop()
        try:
            fd = os.open(directory, _DIR_FLAGS) if _SCANDIR_FD else None
        except OSError as exc:
            _unlistable(scan, prefix, exc)
            continue
        try:
            _list_dir(scan, prefix, directory, fd, found, stack, seen)
        except OSError as exc:
            _unlistable(scan, prefix, exc)
        finally:
            if fd is not None:
                os.close(fd)
    # Relpaths are unique, so this is the order of the tuples, found without comparing
    # them (str keys take the fast path: ~1.2 ms for 10,000 files against ~2).
    found.sort(key=itemgetter(0))
    return found


def _list_dir(
    scan: Scan,
    prefix: str,
    directory: str,
    fd: int | None,
    found: list[Item],
    stack: list[tuple[str, str]],
    seen: set[tuple[int, int]],
) -> None:
    """Add one directory's regular files to ``found`` and its new subdirectories to
    ``stack``. This loop is most of a cached re-verify, so it inlines what it can."""
    append = found.append
    # Through the directory's descriptor each stat is an fstatat of one name, not a
    # lookup of the whole path (~7% of the walk here).
    with os.scandir(directory if fd is None else fd) as entries:
        for entry in entries:
            try:
                st = entry.stat()
            except FileNotFoundError:
                scan.problems.append(f"{prefix + entry.name}: broken symlink, skipped")
                continue
            except OSError as exc:
                scan.problems.append(f"{prefix + entry.name}: cannot stat ({exc.strerror})")
                scan.complete = False
                continue
            kind = st.st_mode & _S_IFMT
            if kind == _S_IFREG:
                # expdna.digest.cache.stat_key, inlined into the hot loop (a test
                # holds the two equal)
                ino = st.st_ino
                if ino >= _I64:  # SQLite integers are signed 64-bit
                    ino -= 1 << 64
                append(
                    (
                        prefix + entry.name,
                        st.st_dev,
                        ino,
                        st.st_size,
                        st.st_mtime_ns,
                        st.st_ctime_ns,
                    )
                )
            elif kind == _S_IFDIR:
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    stack.append((f"{prefix}{entry.name}/", f"{directory}{entry.name}/"))
            else:
                scan.problems.append(f"{prefix + entry.name}: not a regular file, skipped")


def _unlistable(scan: Scan, prefix: str, exc: OSError) -> None:
    scan.problems.append(f"{prefix or '.'}: cannot list ({exc.strerror})")
    scan.complete = False


class _Meter:
    """Counts hashed bytes, reports progress now and then, and enforces a stop time."""

    def __init__(
        self, root: str, files: int, total: int, progress: ProgressFn | None, stop_at: float | None
    ) -> None:
        self.root, self.files_total, self.bytes_total = root, files, total
        self.progress, self.stop_at = progress, stop_at
        self.files = self.bytes = 0
        self.last = time.monotonic()
        self.report(done=False)  # a large job shows at once, not after its first tick

    def add(self, n: int) -> None:
        self.bytes += n
        self._tick()

    def file_done(self, unreported: int) -> None:
        self.files += 1
        self.bytes += unreported
        self._tick()

    def _tick(self) -> None:
        now = time.monotonic()
        if self.stop_at is not None and now >= self.stop_at:
            raise _Stopped
        if self.progress is not None and now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            self.report(done=False)

    def report(self, done: bool) -> None:
        if self.progress is not None:
            self.progress(
                Progress(
                    self.root, self.files, self.files_total, self.bytes, self.bytes_total, done
                )
            )


def _hash_missing(
    scan: Scan, found: list[str | None], todo: list[int], meter: _Meter, sizes: dict[int, int]
) -> None:
    """Hash the files the cache did not answer for; stops cleanly at the deadline."""
    try:
        for i in todo:
            rel = scan.items[i][0]
            before = meter.bytes
            try:
                # the cache was asked for every file at once; these are its misses
                found[i], sizes[i] = hash_file(scan.base + rel, on_bytes=meter.add)
            except OSError as exc:
                scan.problems.append(f"{rel}: cannot read ({exc.strerror})")
                scan.complete = False
                continue
            except NotRegularFileError as exc:  # replaced by a FIFO or device since listed
                scan.problems.append(f"{rel}: not read ({exc.kind})")
                scan.complete = False
                continue
            scan.hashed += 1
            meter.file_done(sizes[i] - (meter.bytes - before))
    except _Stopped:
        scan.problems.append(
            f"stopped at the collection deadline after hashing {scan.hashed} of {len(todo)} "
            "files (those are cached: run again, or give a longer deadline)"
        )
        scan.complete = False
    meter.report(done=True)


def digest_root(
    root: Path,
    *,
    cache: DigestCache | None = None,
    progress: ProgressFn | None = None,
    stop_at: float | None = None,
    now_ns: int | None = None,
) -> Scan:
    """Walk ``root``, take digests from ``cache`` where the stat still matches, hash the rest.

    ``stop_at`` (a ``time.monotonic()`` value) stops hashing early: the scan is then
    incomplete. ``now_ns`` is the wall clock the racy-file rule compares against.
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    scan = Scan()
    scan.items = items = _walk(root, scan)
    where = os.path.abspath(root)
    tree = _stat_digest(items) if cache is not None else ""
    if cache is not None and scan.complete:
        # Every file's stat as last time: the whole listing is known from one row.
        hit = cache.tree(where, tree)
        if hit is not None:
            scan._digest, scan._load = hit, lambda: cache.listing(hit)
            scan.cached = len(items)
            return scan
    keys: list[StatKey] = [item[1:] for item in items]
    found: list[str | None] = cache.lookup(keys) if cache is not None else [None] * len(items)
    todo = [i for i, hexd in enumerate(found) if hexd is None]
    sizes: dict[int, int] = {}
    if todo:
        total = sum(keys[i][2] for i in todo)
        meter = _Meter(str(root), len(todo), total, progress, stop_at)
        _hash_missing(scan, found, todo, meter, sizes)
    scan.cached = len(items) - len(todo)
    rows: list[Row] = []
    for i, item in enumerate(items):
        hexd = found[i]
        if hexd is not None:
            rows.append((item[0], sizes.get(i, item[3]), hexd))
    scan._rows = rows
    if cache is not None:
        # A file that changed size while read, or a racy one, is not vouched for.
        cache.store(
            [(keys[i], h) for i in todo if (h := found[i]) is not None and sizes[i] == keys[i][2]],
            now_ns,
        )
        horizon = now_ns - _racy_window_ns()
        steady = all(sizes.get(i) == keys[i][2] for i in todo) and not any(
            max(key[3], key[4]) >= horizon for key in keys
        )
        digest = scan.digest()
        if digest is not None:
            cache.keep_listing(digest, scan.listing())
            if steady:
                cache.keep_tree(where, tree, digest)
    return scan


def _stat_digest(items: list[Item]) -> str:
    # marshal version 0 writes no back-references and no interning flags, so equal lists
    # give equal bytes (and it decodes, so different lists give different ones); ~1.5 ms
    # for 10,000 files against pickle's ~4. Another Python's bytes only cost a cache miss.
    return hex_of(marshal.dumps(items, 0))


def _racy_window_ns() -> int:
    from expdna.digest.cache import RACY_WINDOW_NS

    return RACY_WINDOW_NS


def listing_for(root: str | os.PathLike[str], *, use_cache: bool = True) -> bytes:
    """The listing blob of ``root`` (what the store keeps; its digest is the dataset's)."""
    from expdna.digest.cache import open_cache

    cache = open_cache(use_cache)
    try:
        scan = digest_root(Path(root), cache=cache)
        if not scan.complete:
            raise OSError(f"{root}: {'; '.join(scan.problems)}")
        return scan.listing()
    finally:
        if cache is not None:
            cache.close()


def _utf8(rows: list[Row]) -> bool:
    """Whether every name is valid UTF-8 (a manifest is JSON text; others stay in blobs)."""
    try:
        for rel, _, _ in rows:
            rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def describe_dataset(
    root: Path, scan: Scan, *, embed: bool, cache: DigestCache | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The manifest entry of one digested dataset, and warnings."""
    warnings = list(scan.problems)
    entry: dict[str, Any] = {"root": str(root), "digest": scan.digest(), **scan.counts()}
    from expdna.collectors.tabular import FORMATS, describe_tables, table_format

    # One text search first: table_format builds a PurePosixPath (~5 us a file), which was
    # most of collecting an unchanged dataset of 10,000 files. A name holding a newline
    # may pass this test wrongly; the exact one below then decides.
    names = "\n".join(map(itemgetter(0), scan.items)).lower() + "\n"
    files: list[tuple[str, str, str]] = []
    if any(f"{suffix}\n" in names for suffix in FORMATS):
        files = [(rel, scan.base + rel, hexd) for rel, _, hexd in scan.rows if table_format(rel)]
    if files:
        tables = describe_tables(files, cache)
        warnings += tables.warnings
        if tables.entries:
            entry["table_groups" if tables.grouped else "tables"] = tables.entries
    if entry["digest"] is not None and embed and _utf8(scan.rows):
        entry["listing"] = [[rel, size, ref(hexd)] for rel, size, hexd in scan.rows]
    return entry, warnings


def _deadline(ctx: CollectContext) -> float:
    # Return before the runner abandons us, leaving time to write the cache.
    margin = min(0.5, ctx.timeout_s * 0.2)
    return time.monotonic() + ctx.timeout_s - margin


def _shown(given: str | os.PathLike[str]) -> str:
    """``given`` as a warning names it: redacted here, on the text as the user wrote it.
    The warning is logged to stderr before the manifest is redacted, and a URL mistaken
    for a path (``https://u:pw@h/ds``) must lose its credentials before anything folds
    its ``//``."""
    from expdna.manifest.redact import redact_text

    return redact_text(os.fspath(given))


def collect_data(ctx: CollectContext) -> dict[str, Any]:
    if not ctx.data:
        return {"datasets": []}
    from expdna.digest.cache import open_cache

    stop_at = _deadline(ctx)
    cache = open_cache(ctx.use_cache, ctx.environ)
    datasets, problems = [], []
    embed_left = EMBED_LISTING_FILES
    try:
        for given in ctx.data:
            root = Path(os.path.abspath(ctx.cwd / given))
            shown = _shown(given)
            if not root.exists():
                problems.append(f"{shown}: no such file or directory")
                continue
            scan = digest_root(root, cache=cache, progress=ctx.progress, stop_at=stop_at)
            embed = len(scan.items) <= embed_left
            entry, warnings = describe_dataset(root, scan, embed=embed, cache=cache)
            embed_left -= len(entry.get("listing", ()))
            datasets.append(entry)
            problems += [f"{shown}: {w}" for w in warnings]
    finally:
        if cache is not None:
            cache.close()
    if problems:
        raise Partial({"datasets": datasets}, "; ".join(problems))
    return {"datasets": datasets}
