"""Installed distributions (name -> version), read the way ``importlib.metadata`` finds them.

``importlib.metadata.distributions()`` parses every ``METADATA`` file with the email parser
(~30 ms for 50 distributions here, far more in a CUDA image with hundreds). A wheel
installer names the directory ``<name>-<version>.dist-info`` after the very metadata it
writes, so for a ``.dist-info`` directory that holds a ``METADATA`` file the directory name
already gives the answer. Everything else (``.egg-info`` directories and files, ``EGG-INFO``
inside an ``.egg``, zip files on ``sys.path``, directory names that do not split cleanly,
finders other than the path finder) falls back to reading the metadata as importlib does.

The search order is importlib's: ``sys.meta_path`` finders in order, the path finder walking
``sys.path`` in order, so the first distribution of a name wins, as with
``importlib.metadata.version(name)``.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from importlib.metadata import (
    Distribution,
    DistributionFinder,
    MetadataPathFinder,
    PathDistribution,
)
from pathlib import Path

_SEPARATORS = re.compile(r"[-_.]+")
_DIST_INFO = ".dist-info"
_EGG_INFO = ".egg-info"

_lock = threading.Lock()
_cache: dict[object, dict[str, str]] = {}


def normalize(name: str) -> str:
    """The PEP 503 form of a distribution name: ``Foo.Bar_baz`` -> ``foo-bar-baz``."""
    return _SEPARATORS.sub("-", name).lower()


def _from_metadata(dist: Distribution) -> tuple[str, str] | None:
    # The slow path: importlib parses the whole metadata file for these two headers.
    name = dist.metadata["Name"]
    if not name:
        return None  # importlib lists it, but it names nothing (e.g. an emptied dist-info)
    return normalize(name), dist.version


def _from_directory_name(root: str, child: str) -> tuple[str, str] | None:
    """``(name, version)`` from ``<name>-<version>.dist-info`` when that is trustworthy."""
    stem = child[: -len(_DIST_INFO)]
    name, sep, version = stem.partition("-")
    if not (sep and name and version) or "-" in version:
        return None
    # A dist-info without METADATA (a half-removed install) names nothing for importlib.
    if not os.path.isfile(os.path.join(root, child, "METADATA")):
        return None
    return normalize(name), version


def _scan_entry(entry: str) -> Iterator[tuple[str, str]]:
    """The distributions of one ``sys.path`` entry, in importlib's order."""
    root = entry or "."
    try:
        children = os.listdir(root)
    except OSError:
        if os.path.isfile(root):  # a zip archive: rare, let importlib read it
            context = DistributionFinder.Context(path=[entry])
            # The standard library's own finder: the importlib_metadata backport removes
            # find_distributions from PathFinder when it is imported.
            for dist in MetadataPathFinder.find_distributions(context):
                found = _from_metadata(dist)
                if found:
                    yield found
        return
    # importlib groups an entry's children by the name in the directory name (first seen
    # first), then lists EGG-INFO of an ``.egg`` entry after them: same order here.
    groups: dict[str, list[str]] = {}
    eggs: list[str] = []
    entry_is_egg = os.path.basename(root).lower().endswith(".egg")
    for child in children:
        low = child.lower()
        if low.endswith((_DIST_INFO, _EGG_INFO)):
            key = low.rpartition(".")[0].partition("-")[0]
            groups.setdefault(normalize(key), []).append(child)
        elif entry_is_egg and low == "egg-info":
            eggs.append(child)
    for child in [c for group in groups.values() for c in group] + eggs:
        found = None
        if child.lower().endswith(_DIST_INFO):
            found = _from_directory_name(root, child)
        if found is None:
            found = _from_metadata(PathDistribution(Path(root, child)))
        if found:
            yield found


def _mirrors_path_finder(finder: object) -> bool:
    """The ``importlib_metadata`` backport's finder, which lists what ``PathFinder`` lists.

    Importing the backport (mlflow and opentelemetry do) puts it on ``sys.meta_path`` and
    removes ``find_distributions`` from the standard ``PathFinder``: it stands for the path
    scan then, and asking it the slow way would read every distribution's metadata.
    """
    kind = finder if isinstance(finder, type) else type(finder)
    return kind.__name__ == "MetadataPathFinder" and kind.__module__.split(".")[0] == (
        "importlib_metadata"
    )


def _finders() -> Iterator[object]:
    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is not None:
            yield finder


def _discover(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    scanned = False
    for finder in _finders():
        if finder is importlib.machinery.PathFinder or _mirrors_path_finder(finder):
            if not scanned:
                scanned = True
                for entry in paths:
                    yield from _scan_entry(entry)
        else:  # a third-party finder: ask it, the slow way
            find = finder.find_distributions  # type: ignore[attr-defined]
            for dist in find(DistributionFinder.Context(path=list(paths))):
                found = _from_metadata(dist)
                if found:
                    yield found


def _first_wins(found: Iterable[tuple[str, str]]) -> dict[str, str]:
    result: dict[str, str] = {}
    for name, version in found:
        result.setdefault(name, version)
    return result


def _mtime_ns(entry: str) -> int | None:
    try:
        return os.stat(entry or ".").st_mtime_ns
    except OSError:
        return None


def installed(paths: Sequence[str] | None = None) -> dict[str, str]:
    """Every installed distribution, PEP 503 name -> version, first on ``paths`` winning.

    ``paths`` defaults to ``sys.path``. The answer is cached per process and recomputed
    when ``sys.path``, the meta-path finders or a path entry's mtime (an install or
    uninstall there) changes.
    """
    entries = list(sys.path if paths is None else paths)
    key = (
        tuple((entry, _mtime_ns(entry)) for entry in entries),
        tuple(id(finder) for finder in _finders()),
    )
    with _lock:
        cached = _cache.get(key)
    if cached is None:
        cached = _first_wins(_discover(entries))
        with _lock:
            _cache.clear()  # only the current state is worth keeping
            _cache[key] = cached
    return dict(cached)


def clear_cache() -> None:
    """Forget the cached answer (the next :func:`installed` scans again)."""
    with _lock:
        _cache.clear()


def listing(dists: dict[str, str]) -> bytes:
    """The sorted ``name==version`` lines (UTF-8) whose digest is ``packages_digest``."""
    return "".join(f"{name}=={dists[name]}\n" for name in sorted(dists)).encode("utf-8")


def distributions_listing() -> bytes:
    """The listing of every distribution installed for this interpreter (cached)."""
    return listing(installed())
