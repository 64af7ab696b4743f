"""The training hook: ``start`` before ``ray.init``, ``add_runtime`` after it, ``finish``.

::

    args = parser.parse_args()
    run = expdna.start(args, output_dir=args.output_dir, data=[args.data])
    ray.init()
    run.add_runtime()          # topology + per-node fingerprints; writes the manifest
    ...train...
    run.finish(metrics={"val_loss": val_loss})

Nothing here raises into the training code and nothing waits past its deadline: a
collector that hangs, an output directory that cannot be written, a store that is down,
Ray shut down between the phases, a node that dies while it is probed, each becomes one
``logging`` warning (kept in :attr:`RunHandle.warnings`, and in the manifest's
``collection`` when it concerns what was collected), and training goes on. Call it in one
process per run (the Ray driver), or in every rank of a ``torch.distributed`` job: there
global rank 0 alone collects and writes the run's one manifest, each node's local rank 0
adds its node's hardware fingerprint in ``add_runtime``, and the other ranks get a handle
that writes nothing but knows the run id and DNA once rank 0 has them
(:mod:`expdna.integrations.torch_nodes`). An MLflow or W&B run active at ``start`` or
``finish`` is tied to the expdna run both ways (:mod:`expdna.integrations.trackers`).

The manifest says how the run ended (its ``status`` section, outside the DNA): ``start``
writes the file at once with ``running``, ``finish`` (or leaving ``track``) sets
``completed``, ``failed`` with the exception, or ``interrupted``; a process that ends
without ``finish`` is finished as it ended (:mod:`expdna.integrations.exits`). An
existing store gets the ``running`` record at ``start`` too, through the log writer, so a
SIGKILLed run is in the store as ``running`` (``unfinished`` once old); a run on Ray or
under ``torch.distributed`` is recorded at ``add_runtime``, whose topology is in its
DNA. Under
``expdna run`` the hook joins the run that command made (:mod:`expdna.integrations.joined`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from expdna.collectors.distributed import hinted_environ, layout
from expdna.collectors.runner import DEFAULT_DEADLINE_S, Registry
from expdna.digest import SMALL_FILE_BYTES, hash_file, ref
from expdna.errors import InvalidInputError
from expdna.integrations import exits
from expdna.integrations.args import UnsupportedArgs, plain, resolved_args
from expdna.integrations.args import settings_source as guessed_source
from expdna.integrations.joined import MANIFEST_ENV, RUN_ID_ENV, NotJoined, joined_manifest
from expdna.integrations.launch import this_command
from expdna.integrations.recording import StoreLink, StoreTarget, guarded, write_file
from expdna.integrations.torch_nodes import Peers, announce, post_fingerprint
from expdna.integrations.trackers import Link, tell, tie
from expdna.manifest.lineage import edge_problem
from expdna.manifest.model import Lineage, Manifest, RunStatus
from expdna.manifest.redact import redact_text, redact_tree
from expdna.manifest.status import ended, from_exception, own_peak_rss, started
from expdna.store.config import StoreConfig

log = logging.getLogger(__name__)


class IncompleteManifestWarning(UserWarning):
    """``start(strict=True)``: a DNA section is unknown (a collector failed or timed out).

    Make it an error with ``-W error::expdna.IncompleteManifestWarning`` or
    ``warnings.simplefilter("error", IncompleteManifestWarning)``.
    """


#: Hashing a checkpoint of many GB takes a while; still bounded, so a dead mount cannot hang.
PIN_DEADLINE_S = 600.0

_SETUP_FOLLOWS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "expdna_setup_follows", default=False
)


@contextlib.contextmanager
def setup_follows() -> Iterator[None]:
    """Around :func:`start` in a framework callback that adds the trainer's settings to the
    DNA right after it (``expdna.integrations.frameworks.add_training``): ``start`` then
    leaves recording the run to ``add_runtime``, so the store never holds the run without
    those settings (another DNA than its manifest file's)."""
    token = _SETUP_FOLLOWS.set(True)
    try:
        yield
    finally:
        _SETUP_FOLLOWS.reset(token)


# Frames of these modules are the hook itself, not the training script that called it.
_OWN_MODULES = ("expdna", "contextlib")

#: ``lineage=`` of :func:`start`: ``{relation: parent run id}``, or a list of
#: ``(relation, parent run id)`` pairs (needed for two parents of one relation).
LineageArg = Mapping[str, str] | Iterable[tuple[str, str] | Lineage]


def _caller_file() -> str | None:
    """``__file__`` of the nearest caller outside expdna: the training script."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".", 1)[0] not in _OWN_MODULES:
            found = frame.f_globals.get("__file__")
            return str(found) if found else None
        frame = frame.f_back
    return None


@dataclass
class RunHandle:
    """One training run being recorded. Every method returns quietly; see the module doc.

    ``manifest`` is ``None`` for the inert handle :func:`track` yields when collection was
    impossible, and on the ranks of a ``torch.distributed`` job other than global rank 0
    (``peers`` set): then the methods write nothing, and ``dna`` and ``run_id`` are rank 0's
    once it has announced them (``None`` before, and for the inert handle).
    """

    manifest: Manifest | None
    output_dir: Path | None = None
    deadline_s: float = DEFAULT_DEADLINE_S
    store: StoreLink = field(default_factory=StoreLink)
    metrics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None
    _registry: Registry | None = field(default=None, repr=False)
    _reuse_hardware: bool = field(default=False, repr=False)
    _recorded: bool = field(default=False, repr=False)
    peers: Peers | None = field(default=None, repr=False)
    links: dict[str, Link] = field(default_factory=dict, repr=False)
    #: Set once the run has ended (its status is final).
    _ended: bool = field(default=False, repr=False)
    #: Joined a run ``expdna run`` made: write its file at ``path``, record nothing.
    _joined: bool = field(default=False, repr=False)
    #: Recorded before ``add_runtime`` (by ``start``, or by a ``pin`` once the DNA was
    #: settled): ``add_runtime`` then keeps the recorded runtime.
    _recorded_at_start: bool = field(default=False, repr=False)
    #: ``add_runtime`` has run: the DNA is final (``finish`` changes only what is outside it).
    _runtime_added: bool = field(default=False, repr=False)
    #: Pins made before the run was recorded: ``(digest, name, path, size)``, written to
    #: the store right after the run's record, so no pin reaches a store before its run.
    _held_pins: list[tuple[str, str, str, int]] = field(default_factory=list, repr=False)
    #: Started inside :func:`setup_follows`: the DNA changes before ``add_runtime``.
    _setup_follows: bool = field(default=False, repr=False)
    #: When another rank than 0 started (it has no manifest to hold its status).
    _begun: RunStatus | None = field(default=None, repr=False)

    @property
    def dna(self) -> str | None:
        """The 64-hex DNA, as of the last phase (``add_runtime`` adds the topology)."""
        if self.manifest is None:
            return self._announced("dna")
        return self.manifest.dna.value if self.manifest.dna else None

    @property
    def run_id(self) -> str | None:
        return self.manifest.run_id if self.manifest else self._announced("run_id")

    def _announced(self, name: str) -> str | None:
        """Rank 0's run id or DNA, on another rank of a ``torch.distributed`` job.

        Read from the store if rank 0 has announced it; never waits for the announcement
        (the deadline bounds only a store that does not answer).
        """
        if self.peers is None:
            return None
        found, _ = guarded("reading the run id", self.peers.lookup, self.deadline_s)
        value = found.get(name) if found else None
        return str(value) if value else None

    def _warn(self, message: str) -> None:
        log.warning("expdna: %s", message)
        self.warnings.append(message)

    def add_runtime(self) -> RunHandle:
        """Add the Ray topology and per-node fingerprints; write the manifest; record it."""
        if self.manifest is None:
            if self.peers is not None and self.peers.layout.leads_node:
                self._post_node()
            if self.peers is not None:
                # Kept for a failure of this rank: at its end, the process that holds the
                # job's store (rank 0's under a plain env:// launch) may be gone.
                self._announced("run_id")
            return self
        self._runtime_added = True
        if self._recorded_at_start and "ray" not in sys.modules:
            # start() recorded the run with its runtime, and no Ray since: nothing to add.
            self._save()
            return self
        from expdna.integrations.topology import FINGERPRINTS, with_note, with_runtime

        current = self.manifest
        # At most one deadline per phase: the runtime collector, then the probes (under
        # torch.distributed: this node's fingerprint, then the other nodes' answers).
        updated, warning = guarded(
            "adding the runtime",
            lambda: with_runtime(
                current,
                registry=self._registry,
                deadline_s=self.deadline_s,
                reuse_hardware=self._reuse_hardware,
                peers=self.peers,
            ),
            (2 if self.peers is None else 3) * self.deadline_s + 1.0,
        )
        if updated is not None and self._recorded_at_start and updated.dna != current.dna:
            self._warn(
                "Ray was imported after the run was recorded (at start() or a pin): the "
                "store keeps the run as it started, without the Ray topology (import ray "
                "before start())"
            )
        if updated is not None:
            self.manifest = updated
            status = updated.collection.collectors.get(FINGERPRINTS)
            for message in status.warnings if status else []:
                self._warn(f"node fingerprints: {message}")
        else:
            assert warning is not None
            self._warn(warning)
            self.manifest = with_note(current, FINGERPRINTS, "failed", [warning])
        if self.peers is not None:
            self._announce()
        self._save()
        return self

    def _post_node(self) -> None:
        """A node leader other than rank 0: this node's fingerprint, for rank 0."""
        assert self.peers is not None
        self._warn_all([post_fingerprint(self.peers, self.deadline_s)])

    def _announce(self) -> None:
        assert self.manifest is not None and self.peers is not None
        self._warn_all([announce(self.peers, self.manifest, self.deadline_s)])

    def _link_trackers(self) -> None:
        """Tie the run to an MLflow or W&B run active now (recorded under ``tracking``)."""
        assert self.manifest is not None
        self.manifest, notes = tie(self.links, self.manifest)
        self._warn_all(notes)

    def _warn_all(self, messages: Sequence[str | None]) -> None:
        for message in messages:
            if message:
                self._warn(message)

    def _save(self) -> None:
        """Write the file (when there is an output dir) and record the run once in the store."""
        assert self.manifest is not None
        self._link_trackers()
        self._write()
        self._record()
        self._warn_all(tell(self.links, self.manifest, self.deadline_s))

    def _record(self) -> bool:
        """Record the run in the store once, then write the pins held for it; whether it
        is recorded now."""
        assert self.manifest is not None
        if self._recorded or not self.store.configured:
            return self._recorded
        warning = self.store.record(self.manifest)
        if warning:
            self._warn(warning)
            return False
        self._recorded = True
        held, self._held_pins = self._held_pins, []
        run_id = self.manifest.run_id
        for digest, name, path, size in held:
            self._warn_all([self.store.pin(run_id, digest, name=name, path=path, size=size)])
        return True

    def _settled(self) -> bool:
        """Whether the DNA can no longer change: ``add_runtime`` has run (or the run has
        ended), or nothing would change it (no Ray imported, no ``torch.distributed`` peers,
        no framework settings to come: as :meth:`_record_at_start` judges)."""
        if self._runtime_added or self._ended:
            return True
        return self.peers is None and "ray" not in sys.modules and not self._setup_follows

    def _record_at_start(self) -> None:
        """Record the run as it starts (``running``), so a SIGKILLed process is in the
        store too: only into a store the log writer can take (no SQLAlchemy here,
        :mod:`expdna.store.deferred`), and only where ``add_runtime`` cannot change the
        DNA (no Ray imported, no ``torch.distributed`` peers, not started by a framework
        callback whose settings join the DNA next, :func:`setup_follows`: their runs are
        recorded at ``add_runtime``)."""
        assert self.manifest is not None
        if self.peers is not None or "ray" in sys.modules or self._setup_follows:
            return
        from expdna.store.deferred import usable

        target = self.store.target
        if not (isinstance(target, StoreConfig) and usable(target)):
            return  # a new store is created at the first later record, through its index
        if self._record():
            self._recorded_at_start = True

    def _write(self) -> None:
        """Write the manifest file (when there is an output dir, or a joined run's path)."""
        assert self.manifest is not None
        if self.output_dir is None:
            return
        path, warning = write_file(
            self.manifest, self.output_dir, self.deadline_s, self.path if self._joined else None
        )
        if warning:
            self._warn(warning)
        else:
            self.path = path

    def log_final(self, **metrics: Any) -> None:
        """Set final metrics (recorded by :meth:`finish`)."""
        self.metrics.update(metrics)

    def finish(
        self, metrics: Mapping[str, Any] | None = None, *, error: BaseException | None = None
    ) -> RunHandle:
        """Record how the run ended and its final metrics (both outside the DNA): rewrite
        the file, tell the store. ``error``: the exception that ended it (``failed``; a
        ``KeyboardInterrupt`` is ``interrupted``), else ``completed``. The first end sets
        the status; finishing again only adds metrics."""
        return self.end(error, metrics=metrics)

    def end(
        self,
        error: BaseException | None = None,
        *,
        signal_name: str | None = None,
        metrics: Mapping[str, Any] | None = None,
    ) -> RunHandle:
        """:meth:`finish`, and what :mod:`expdna.integrations.exits` calls as the process
        ends: ``signal_name`` makes the run ``interrupted`` by that signal."""
        if self.manifest is None:
            if self.peers is not None and not self._ended:
                self._ended = True
                exits.forget(self)
                self._tell_failure(error, signal_name)
            return self
        exits.forget(self)
        if self._ended and not metrics:
            return self
        ending = not self._ended
        if ending:
            self._ended = True
            self._set_status(error, signal_name)
        if metrics:
            self.metrics.update(metrics)
        self._note_determinism()
        try:
            values, _ = redact_tree({str(k): plain(v) for k, v in self.metrics.items()}, "metrics")
            doc = self.manifest.to_dict()
            doc["metrics"] = {**doc.get("metrics", {}), **values}
            self.manifest = Manifest.model_validate(doc)
        except Exception as exc:  # a metric pydantic refuses must not cost the manifest
            self._warn(f"metrics not recorded: {type(exc).__name__}: {exc}")
        already = self._recorded
        self._save()
        if already and self.metrics and self.store.configured:
            warning = self.store.record_metrics(self.manifest.run_id, self.manifest.metrics)
            if warning:
                self._warn(warning)
        if already and ending and self.manifest.status is not None and self.store.configured:
            status = self.manifest.status.model_dump(mode="json")
            self._warn_all([self.store.record_status(self.manifest.run_id, status)])
        if self._held_pins:
            names = ", ".join(name for _, name, _, _ in self._held_pins)
            self._warn(f"checkpoint pins not recorded, the run is not in the store: {names}")
        self.store.close()
        return self

    def _tell_failure(self, error: BaseException | None, signal_name: str | None) -> None:
        """Another rank than 0 ended badly: tell the store, on rank 0's run, whose record
        keeps the worse end (rank 0 may have finished ``completed`` before this)."""
        assert self.peers is not None
        try:
            state, failure, signal = from_exception(error)
            if signal_name is not None:
                state, signal = "interrupted", signal_name
            if state == "completed" or not self.store.configured:
                return
            rank = self.peers.layout.rank
            run_id = self.run_id
            if run_id is None:
                self._warn(f"rank {rank} {state}, but rank 0's run id is unknown here: not told")
                return
            code = error.code if isinstance(error, SystemExit) else None
            status = ended(
                self._begun or started(),
                state,
                exit_code=code if isinstance(code, int) else None,
                error=failure,
                signal=signal,
                peak_rss_bytes=own_peak_rss(),
            )
            status.rank = rank
            told = self.store.record_status(run_id, status.model_dump(mode="json"))
            self._warn_all([told])
            self.store.close()
        except Exception as exc:  # the exit path must never raise
            self._warn(f"this rank's end not told: {type(exc).__name__}: {exc}")

    def _set_status(self, error: BaseException | None, signal_name: str | None) -> None:
        assert self.manifest is not None
        try:
            state, failure, signal = from_exception(error)
            if signal_name is not None:
                state, signal = "interrupted", signal_name
            code = error.code if isinstance(error, SystemExit) else None
            begun = self.manifest.status or started()
            self.manifest.status = ended(
                begun,
                state,
                exit_code=code if isinstance(code, int) else None,
                error=failure,
                signal=signal,
                peak_rss_bytes=own_peak_rss(),
            )
        except Exception as exc:  # the status is an extra: it must never cost the manifest
            self._warn(f"status not recorded: {type(exc).__name__}: {exc}")

    def _note_determinism(self) -> None:
        """Name each determinism switch that changed since ``start()`` (TF32 turned on after
        it, say), in ``collection.determinism_changed`` and as a warning."""
        assert self.manifest is not None
        from expdna.integrations.determinism import changed_switches

        try:
            changes = changed_switches(self.manifest.to_dict().get("environment") or {})
            if not changes:
                return
            self.manifest.collection.determinism_changed = changes  # type: ignore[attr-defined]
        except Exception as exc:  # a fact about the run must never cost its manifest
            self._warn(f"determinism switches not read again: {type(exc).__name__}: {exc}")
            return
        self._warn(f"determinism switches changed since start(): {'; '.join(changes)}")

    def pin(self, path: str | os.PathLike[str], name: str | None = None) -> str | None:
        """Pin a checkpoint's content digest to this run; returns ``blake3:<hex>`` or ``None``.

        The digest is the file's BLAKE3, so a renamed or copied checkpoint still names the
        run (``expdna which``). Recorded in the store when it supports pins, always after
        the run itself: a run not recorded yet is recorded first when its DNA can no longer
        change, else the pin is held until :meth:`add_runtime` or :meth:`finish` records it.
        """
        if self.manifest is None:
            return None
        target = Path(path)
        found, warning = guarded(
            f"pinning {target.name}",
            lambda: _hash_checkpoint(target),
            max(self.deadline_s, PIN_DEADLINE_S),
        )
        if found is None:
            self._warn(warning or f"pinning {target}: no digest")
            return None
        digest, size = found
        reference = ref(digest)
        name, where = name or target.name, redact_text(str(target.resolve()))
        if self._joined:
            # expdna run records the run when the command ends; this process has no store
            # link of its own, whatever $EXPDNA_STORE says
            self._warn(
                f"pin: this script joined the run expdna run made, which is recorded when the "
                f"command ends; pin {name} then: expdna pin --run {self.run_id} {target}"
            )
            return reference
        if self.store.configured and not self._recorded:
            # A pin names its run: the run goes to the store first. Recorded now when its
            # DNA is final; otherwise the pin waits for the record (add_runtime, finish).
            if self._settled() and self._record() and not self._runtime_added:
                self._recorded_at_start = True
            if not self._recorded:
                log.info("expdna: pin of %s held until run %s is recorded", name, self.run_id)
                self._held_pins.append((reference, name, where, size))
                return reference
        warning = self.store.pin(self.manifest.run_id, reference, name=name, path=where, size=size)
        if warning:
            self._warn(warning)
        return reference


def _hash_checkpoint(target: Path) -> tuple[str, int]:
    """BLAKE3 hex and size of a checkpoint, through the stat-keyed cache when it is large
    (``expdna which`` on the same unchanged file then costs a stat)."""
    from expdna.digest.cache import open_cache

    cache = open_cache() if target.stat().st_size >= SMALL_FILE_BYTES else None
    try:
        return hash_file(target, cache)
    finally:
        if cache is not None:
            cache.close()


_SOURCES = ("argv", "code")


def _source(args: Any, given: str | None, notes: list[str]) -> str | None:
    """``config.settings_source`` for ``args``: ``given`` when it is ``"argv"`` or
    ``"code"``, else the guess from its type (see :func:`start`)."""
    if given is not None and given not in _SOURCES:
        notes.append(f"settings_source={given!r} is neither 'argv' nor 'code'; guessing it")
        given = None
    source = guessed_source(args) if given is None else given
    return None if source == "argv" else source


def start(
    args: Any = None,
    *,
    output_dir: str | os.PathLike[str] | None = None,
    repos: Iterable[str | os.PathLike[str]] = (),
    data: Iterable[str | os.PathLike[str]] = (),
    store: StoreTarget = None,
    index_url: str | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    dna_ignore: Sequence[str] = (),
    collectors: Iterable[str] | None = None,
    registry: Registry | None = None,
    caller_file: str | os.PathLike[str] | None = None,
    lineage: LineageArg | None = None,
    strict: bool = False,
    ranks: Mapping[str, int] | None = None,
    settings_source: str | None = None,
) -> RunHandle | None:
    """Collect this run's manifest; call it after parsing arguments and before ``ray.init``.

    The file is written at once with status ``running`` (see the module doc).

    ``args`` is the parsed configuration (``argparse.Namespace``, dict, dataclass, pydantic
    model); ``None`` records the arguments parsed from ``sys.argv``. The manifest is written
    to ``<output_dir>/manifest_<run_id>.json`` by :meth:`RunHandle.add_runtime` (or
    :meth:`RunHandle.finish`) and recorded in ``store`` (a store directory or a ``Store``;
    default ``$EXPDNA_STORE``, index ``$EXPDNA_INDEX_URL``). ``lineage`` names earlier
    runs this one continues, ``{"resumed_from": run_id}`` or ``[("derived_from", a),
    ("derived_from", b)]`` (relations ``resumed_from``, ``rerun_of``, ``derived_from``); it
    goes to the manifest's ``lineage`` list, outside the DNA, and an edge the store would
    refuse is dropped with a warning. A DNA section a collector could not finish is marked
    unknown (in the manifest and its DNA) and logged; with ``strict=True`` it is also an
    :class:`IncompleteManifestWarning`, which the caller may turn into an error. ``ranks``
    is the layout a framework knows where the launcher set no variables (Lightning's
    ``ddp_spawn``): ``local_rank``, ``local_world_size``, ``node_rank``, ``node_count``. Never
    raises (unless the caller made that warning an error): returns ``None`` with one
    warning when no manifest can be collected at all.

    Settings ``args`` that an argv parser returned (an ``argparse.Namespace``, a Hydra
    ``DictConfig``, a dataclass) are in the DNA through the command's words; settings handed
    over in code (a dict, any other object, anything inside a Ray Tune trial) are not, so
    the manifest says ``config.settings_source: "code"`` and DNA version 3 counts them.
    ``settings_source`` (``"argv"`` or ``"code"``) overrides that guess.
    """
    begun = datetime.now(timezone.utc)
    try:
        peers = _peers(ranks)
        if peers is not None:
            exits.in_distributed_job()
        if peers is not None and not peers.layout.writes:
            # Another rank of a torch.distributed job: rank 0 collects and writes; this
            # rank tells the store only of its own failure (rank 0 may have finished).
            other = RunHandle(
                manifest=None,
                deadline_s=_deadline(deadline_s),
                peers=peers,
                store=StoreLink() if _in_run_command() else _store_link(store, index_url, []),
                _begun=started(),
            )
            exits.watch(other)
            return other
        notes: list[str] = []
        resolved = None
        source = None
        if args is not None:
            try:
                resolved = resolved_args(args)
            except UnsupportedArgs as exc:
                notes.append(f"{exc}; recording the arguments parsed from sys.argv")
            else:
                source = _source(args, settings_source, notes)
        in_code = resolved if source == "code" else None
        joined = _joined(_deadline(deadline_s), registry, collectors, peers, notes, in_code)
        if joined is not None:
            return joined
        if not (isinstance(deadline_s, (int, float)) and deadline_s > 0):
            notes.append(
                f"deadline_s={deadline_s!r} is not a positive number of seconds; "
                f"using {DEFAULT_DEADLINE_S:g}"
            )
            deadline_s = DEFAULT_DEADLINE_S
        link = _store_link(store, index_url, notes)
        if output_dir is None and not link.configured:
            notes.append("no output_dir and no store: this run's manifest will not be saved")
        from expdna.api import collect

        manifest = collect(
            _command(notes),
            repos=repos,
            data=data,
            caller_file=caller_file if caller_file is not None else _caller_file(),
            collectors=collectors,
            registry=registry,
            deadline_s=deadline_s,
            dna_ignore=dna_ignore,
            resolved_args=resolved,
            settings_source=source,
            output_roots=_output_roots(output_dir, link),
            pinned_stores=lambda: _pinned_stores(link),
        )
    except Exception as exc:  # the one promise: training goes on without a manifest
        log.warning("expdna: no manifest for this run: %s: %s", type(exc).__name__, exc)
        return None
    if lineage is not None:
        _add_lineage(manifest, lineage, notes)
    try:
        manifest.status = started(begun)
    except Exception as exc:  # the status is an extra: it must never cost the manifest
        notes.append(f"status not recorded: {type(exc).__name__}: {exc}")
    handle = RunHandle(
        manifest=manifest,
        output_dir=Path(output_dir) if output_dir is not None else None,
        deadline_s=float(deadline_s),
        store=link,
        _registry=registry,
        _reuse_hardware=registry is None and collectors is None,
        peers=peers,
        _setup_follows=_SETUP_FOLLOWS.get(),
    )
    for note in notes:
        handle._warn(note)
    handle._link_trackers()
    for section, reason in (manifest.unknown or {}).items():
        message = f"section {section} is unknown (marked so in the DNA): {reason}"
        handle._warn(message)
        if strict:
            warnings.warn(f"expdna: {message}", IncompleteManifestWarning, stacklevel=2)
    _begin(handle)
    return handle


def _begin(handle: RunHandle) -> None:
    """Write the manifest now (status ``running``), so a process that dies leaves it, and
    end the run with the process if ``finish`` never comes."""
    handle._write()
    handle._record_at_start()
    exits.watch(handle)


def _joined(
    deadline_s: float,
    registry: Registry | None,
    collectors: Iterable[str] | None,
    peers: Peers | None,
    notes: list[str],
    in_code: Mapping[str, Any] | None = None,
) -> RunHandle | None:
    """A handle on the run ``expdna run`` made for this process, if it made one.

    ``expdna run`` read the settings from the command line; settings handed over in code
    (``in_code``) it cannot see, so they go into the joined manifest here, and its DNA is
    computed again: two settings must not share one DNA for being started by ``run``."""
    try:
        found = joined_manifest()
    except NotJoined as exc:
        notes.append(f"{exc}; recording this run on its own")
        return None
    if found is None:
        return None
    path, manifest = found
    if in_code is not None:
        _count_settings(manifest, in_code)
    # expdna run records the run when the command ends: nothing is recorded from here.
    handle = RunHandle(
        manifest=manifest,
        output_dir=path.parent,
        deadline_s=deadline_s,
        path=path,
        _registry=registry,
        _reuse_hardware=registry is None and collectors is None,
        peers=peers,
        _joined=True,
    )
    log.info("expdna: joined run %s (%s)", manifest.run_id, path)
    if in_code is not None:
        handle._write()  # the file expdna run reads back holds the settings from now on
    exits.watch(handle)
    return handle


def _count_settings(manifest: Manifest, settings: Mapping[str, Any]) -> None:
    """Put settings handed over in code into ``manifest`` as :func:`start` records them
    (``config.settings_source: "code"``, redacted) and compute its DNA again."""
    from expdna.manifest.dna import compute_dna

    values, redacted = redact_tree(dict(settings), "config.resolved_args")
    manifest.config.resolved_args = values
    manifest.config.settings_source = "code"
    manifest.collection.redacted = sorted({*manifest.collection.redacted, *redacted})
    manifest.dna = compute_dna(manifest)


def _command(notes: list[str]) -> list[str]:
    """The whole command that started the script (launcher, interpreter, script,
    arguments: :mod:`expdna.integrations.launch`); ``sys.argv`` where it cannot be told."""
    try:
        return this_command()
    except Exception as exc:  # reading /proc is an extra: sys.argv still names the run
        notes.append(f"the launching command could not be read ({type(exc).__name__}: {exc})")
        return list(getattr(sys, "argv", []))


def _peers(ranks: Mapping[str, int] | None = None) -> Peers | None:
    """This process's part in a ``torch.distributed`` job of two or more ranks, if any."""
    hint = dict(ranks) if ranks else None
    found = layout(hinted_environ(os.environ, hint))
    return Peers(found, hint=hint) if found is not None else None


def _store_link(store: StoreTarget, index_url: str | None, notes: list[str]) -> StoreLink:
    """The run's store; a bad ``store=`` (an empty path) costs the store, not the manifest."""
    try:
        return StoreLink.resolve(store, index_url)
    except InvalidInputError as exc:
        notes.append(f"{exc}; not recording in a store")
        return StoreLink()


def _in_run_command() -> bool:
    """Under ``expdna run``, which records how the whole command ended (rank 0 joins its
    run when both variables are set; see :func:`_joined`)."""
    return bool(os.environ.get(RUN_ID_ENV) and os.environ.get(MANIFEST_ENV))


def _deadline(deadline_s: Any) -> float:
    ok = isinstance(deadline_s, (int, float)) and deadline_s > 0
    return float(deadline_s) if ok else DEFAULT_DEADLINE_S


def _output_roots(output_dir: str | os.PathLike[str] | None, link: StoreLink) -> list[Any]:
    """Where this run writes: its output directory and a store given by path."""
    roots: list[Any] = [output_dir] if output_dir is not None else []
    if isinstance(link.target, StoreConfig):
        roots.append(link.target.root)
    return roots


def _pinned_stores(link: StoreLink) -> list[Path]:
    """The stores whose pinned checkpoints are not this run's code: the run's own (a
    local one), else the default store ``expdna pin`` writes to."""
    target = link.target
    if target is not None and not isinstance(target, StoreConfig):
        root = getattr(target, "root", None)  # a Store the caller opened
        return [root] if isinstance(root, Path) else []
    config = target if target is not None else StoreConfig.resolve()
    return [config.root] if config.remote is None else []


def _add_lineage(manifest: Manifest, lineage: Any, notes: list[str]) -> None:
    """Put ``lineage=`` in the manifest's ``lineage`` list (outside the DNA: it stays)."""
    try:
        edges = _lineage_edges(lineage, manifest.run_id, notes)
        if edges:
            manifest.lineage = [Lineage(relation=r, parent=p) for r, p in edges]
    except Exception as exc:  # lineage is an extra: it must never cost the manifest
        notes.append(f"lineage not recorded: {type(exc).__name__}: {exc}")


def _lineage_edges(lineage: Any, run_id: str, notes: list[str]) -> list[tuple[str, str]]:
    """``lineage=`` as (relation, parent) pairs; each edge the store would refuse is a note.

    Checked as :meth:`expdna.store.Store.record` checks a manifest's ``lineage`` list, so
    one bad edge costs only itself, never the recording of the run.
    """
    try:
        if isinstance(lineage, Mapping):
            entries: list[Any] = list(lineage.items())
        elif isinstance(lineage, (str, bytes)) or not isinstance(lineage, Iterable):
            raise TypeError("not a mapping or a list")
        else:
            entries = list(lineage)
    except Exception as exc:  # a generator that raises, an object that lies about itself
        notes.append(
            f"lineage={lineage!r} is neither {{relation: run id}} nor a list of "
            f"(relation, run id) pairs ({exc}); no lineage recorded"
        )
        return []
    edges: list[tuple[str, str]] = []
    for entry in entries:
        if isinstance(entry, Lineage):
            entry = (entry.relation, entry.parent)
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            notes.append(f"lineage entry {entry!r} is not a (relation, run id) pair; dropped")
            continue
        relation, parent = entry
        problem = edge_problem(relation, parent, run_id)
        if problem is not None:
            notes.append(f"{problem}; edge {relation!r} -> {parent!r} dropped")
        elif (relation, parent) not in edges:
            edges.append((relation, parent))
    return edges


class Tracking:
    """The context manager :func:`track` returns."""

    def __init__(self, begin: Callable[[], RunHandle | None]) -> None:
        self._begin = begin
        self.run: RunHandle | None = None

    def __enter__(self) -> RunHandle:
        handle = self._begin()
        self.run = handle if handle is not None else RunHandle(manifest=None)
        self.run.add_runtime()
        return self.run

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        # Returning None lets the training code's own exception pass through unchanged.
        if self.run is not None:
            self.run.finish(error=exc)


def track(
    args: Any = None,
    *,
    output_dir: str | os.PathLike[str] | None = None,
    repos: Iterable[str | os.PathLike[str]] = (),
    data: Iterable[str | os.PathLike[str]] = (),
    store: StoreTarget = None,
    index_url: str | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    dna_ignore: Sequence[str] = (),
    collectors: Iterable[str] | None = None,
    registry: Registry | None = None,
    caller_file: str | os.PathLike[str] | None = None,
    lineage: LineageArg | None = None,
    strict: bool = False,
    settings_source: str | None = None,
) -> Tracking:
    """Record a single-process run: ``with expdna.track(args, output_dir=...) as run:``.

    Entering runs :func:`start` and :meth:`RunHandle.add_runtime`, leaving runs
    :meth:`RunHandle.finish`. It yields a :class:`RunHandle` (an inert one when collection
    was impossible, so the body never needs a check). Set metrics with
    ``run.log_final(val_loss=...)`` or ``run.metrics[...]``. Exceptions of the training code
    pass through unchanged; the manifest is written with status ``failed`` (the exception's
    type and message, redacted; ``interrupted`` for a ``KeyboardInterrupt``) and the
    metrics set so far recorded.
    ``lineage``, ``strict`` and ``settings_source`` are as for :func:`start`.
    """
    caller = caller_file if caller_file is not None else _caller_file()
    return Tracking(
        functools.partial(
            start,
            args,
            output_dir=output_dir,
            repos=repos,
            data=data,
            store=store,
            index_url=index_url,
            deadline_s=deadline_s,
            dna_ignore=dna_ignore,
            collectors=collectors,
            registry=registry,
            caller_file=caller,
            lineage=lineage,
            strict=strict,
            settings_source=settings_source,
        )
    )
