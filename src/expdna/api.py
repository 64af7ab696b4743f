"""The library calls behind the CLI: collect a manifest, generate a manifest file."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from expdna.collectors import (
    DEFAULT_DEADLINE_S,
    CollectContext,
    Registry,
    default_registry,
    run_collectors,
)
from expdna.collectors.runner import Outcome
from expdna.errors import InvalidInputError
from expdna.manifest.build import build_manifest
from expdna.manifest.family import with_derived_seed_ignores
from expdna.manifest.io import write_manifest
from expdna.manifest.model import DNA_SECTIONS, Manifest
from expdna.regular import check_output

log = logging.getLogger(__name__)


def collect(
    argv: Sequence[str] = (),
    *,
    cwd: str | os.PathLike[str] | None = None,
    repos: Iterable[str | os.PathLike[str]] = (),
    data: Iterable[str | os.PathLike[str]] = (),
    caller_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    collectors: Iterable[str] | None = None,
    registry: Registry | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    overall_deadline_s: float | None = None,
    dna_ignore: Sequence[str] = (),
    redact: bool = True,
    resolved_args: Mapping[str, Any] | None = None,
    settings_source: str | None = None,
    use_cache: bool = True,
    progress: Callable[[Any], None] | None = None,
    output_roots: Iterable[str | os.PathLike[str]] = (),
    probe_interpreter: bool = False,
    pinned_stores: PinnedStores = (),
) -> Manifest:
    """Collect every source in parallel and return the redacted manifest with its DNA.

    Never raises because a source is missing or slow: that becomes a warning in
    ``manifest.collection``. Each collector gets ``deadline_s``, the whole collection at
    most ``overall_deadline_s``; plugins that failed to load are listed in
    ``collection.plugin_warnings``.
    ``resolved_args``, when given, is recorded as ``config.resolved_args`` instead of the
    arguments parsed from ``argv``; ``settings_source="code"`` says the caller handed them
    over in code rather than parsing argv (``config.settings_source``: they then count in the
    DNA, see docs/en/dna-v3.md). ``use_cache=False`` hashes every data file again;
    ``progress`` receives ``expdna.collectors.data.Progress`` while data files are hashed.
    ``output_roots`` are where this run writes: untracked files there are not code (nor are
    those under ``$EXPDNA_STORE``, per-run path arguments, or other runs' output folders).
    ``probe_interpreter`` says ``argv`` will run in another process: an interpreter it names
    other than this one is asked for its environment (``generate`` sets it).
    ``pinned_stores`` are store directories whose pinned checkpoints are not code (or a
    function returning them, called only if an untracked file could be one).
    """
    ctx = CollectContext(
        argv=tuple(argv),
        cwd=Path(cwd) if cwd is not None else Path.cwd(),
        repos=tuple(Path(r) for r in repos),
        data=tuple(os.fspath(d) for d in data),  # as given: see CollectContext.data
        caller_file=Path(caller_file) if caller_file is not None else None,
        resolved_args=dict(resolved_args) if resolved_args is not None else None,
        settings_source=settings_source,
        environ=dict(os.environ if environ is None else environ),
        timeout_s=deadline_s if overall_deadline_s is None else min(deadline_s, overall_deadline_s),
        use_cache=use_cache,
        progress=progress,
        output_roots=tuple(Path(r) for r in output_roots),
        probe_interpreter=probe_interpreter,
        pinned=_pins_of(pinned_stores),
    )
    registry = registry or default_registry()
    started = time.perf_counter()
    outcomes = run_collectors(
        ctx,
        registry.select(collectors),
        deadline_s=deadline_s,
        overall_deadline_s=overall_deadline_s,
    )
    sections: dict[str, dict[str, Any]] = {}
    unknown: dict[str, list[str]] = {}
    for name, outcome in outcomes.items():
        section = registry.collectors[name].section
        sections.setdefault(section, {}).update(outcome.section)
        if (outcome.status in UNFINISHED or outcome.unknown) and section in DNA_SECTIONS:
            unknown.setdefault(section, []).append(_unfinished(name, outcome))
    collection: dict[str, Any] = {
        "collectors": {name: outcome.record() for name, outcome in outcomes.items()},
        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
    }
    if registry.warnings:
        collection["plugin_warnings"] = list(registry.warnings)
    return build_manifest(
        sections,
        collection=collection,
        dna_ignore=with_derived_seed_ignores(dna_ignore),
        redact=redact,
        unknown={section: "; ".join(reasons) for section, reasons in unknown.items()},
    )


#: Store directories, or a function naming them (the hook's, which may need the default
#: store's location: found only when asked).
PinnedStores = Iterable[str | os.PathLike[str]] | Callable[[], Iterable[str | os.PathLike[str]]]


def _pins_of(stores: PinnedStores) -> Callable[[], frozenset[str]] | None:
    """The lookup of pinned checkpoint paths in ``stores``, run once, only if a collector
    asks."""
    if not callable(stores):
        roots = [Path(root) for root in stores]
        if not roots:
            return None
        stores = roots
    found: list[frozenset[str]] = []
    lock = threading.Lock()

    def pinned() -> frozenset[str]:
        from expdna.store.pinned_paths import pinned_paths

        with lock:  # the git collector asks once per repository
            if not found:
                named = stores() if callable(stores) else stores
                found.append(pinned_paths([Path(root) for root in named]))
            return found[0]

    return pinned


#: Collector outcomes that leave their section unknown: it may hold less than there was.
#: ``skipped`` (nothing to collect here) and ``partial`` (collected, with a named gap the
#: collector itself judged) are known, unless the collector raised ``Unknown`` (a config
#: file it could not read: the gap is part of the section's identity).
UNFINISHED = frozenset({"failed", "timeout"})


def _unfinished(name: str, outcome: Outcome) -> str:
    why = outcome.warnings[-1] if outcome.warnings else "no reason given"
    return f"collector {name} {outcome.status}: {why}"


def default_output(manifest: Manifest, directory: Path | None = None) -> Path:
    return (directory or Path()) / f"manifest_{manifest.run_id}.json"


def generate(
    argv: Sequence[str] = (),
    *,
    output: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    repos: Iterable[str | os.PathLike[str]] = (),
    data: Iterable[str | os.PathLike[str]] = (),
    deadline_s: float = DEFAULT_DEADLINE_S,
    dna_ignore: Sequence[str] = (),
    use_cache: bool = True,
    progress: Callable[[Any], None] | None = None,
    pinned_stores: PinnedStores = (),
) -> tuple[Path, Manifest]:
    """Collect and write a manifest file atomically; returns its path and the manifest.

    ``output`` may be a file path or an existing directory (the default file name goes
    inside it); by default ``./manifest_<run_id>.json``. The command in ``argv`` runs in
    another process: an interpreter it names is asked for its own environment, and a
    launcher it names (``torchrun``, ``accelerate launch``) gives the environment and one-node
    layout its ranks will have
    (:mod:`expdna.collectors.launched`).
    ``pinned_stores``: store directories whose pinned checkpoints are not code.
    """
    target = Path(output) if output is not None else None
    if target is not None and not target.is_dir() and not target.parent.is_dir():
        raise InvalidInputError(f"{target.parent}: output directory does not exist")
    if target is not None and not target.is_dir():
        # refused before collecting: a device or FIFO is never replaced by the manifest
        check_output(target)
    manifest = collect(
        argv,
        cwd=cwd,
        repos=repos,
        data=data,
        deadline_s=deadline_s,
        dna_ignore=dna_ignore,
        use_cache=use_cache,
        progress=progress,
        probe_interpreter=True,
        pinned_stores=pinned_stores,
    )
    # A one-node torchrun (accelerate, deepspeed) job: the node entry rank 0's hook will record.
    from expdna.integrations.topology import with_planned_nodes

    manifest = with_planned_nodes(manifest, deadline_s=deadline_s)
    if target is None or target.is_dir():
        target = default_output(manifest, target)
    return write_manifest(manifest, target), manifest
