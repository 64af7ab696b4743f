"""Run collectors concurrently, each under a deadline; never raise, never wait on a hang.

Each collector runs in its own daemon thread. One that misses its deadline is abandoned
(recorded as ``timeout``), not awaited: a daemon thread cannot keep the interpreter alive,
and the subprocesses collectors start carry their own timeouts. The process's exit waits
for it a last bounded while (:mod:`expdna.abandoned`), or a thread inside torch's native
code could abort the process as the interpreter finalises.

Deadlines: every collector gets ``deadline_s`` (or its own ``Collector.deadline_s``), and
the whole collection at most ``overall_deadline_s``; all start together, so each deadline
counts from the start of the collection, and a collector's ``ctx.timeout_s`` is its own
deadline (the budget for its subprocesses). A collector whose answer arrives after its
deadline, or that gives up because a subprocess or wait of its own timed out
(``subprocess.TimeoutExpired``, ``TimeoutError``), is recorded as ``timeout``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from expdna.abandoned import abandon
from expdna.collectors.context import CollectContext, NotAvailable, Partial, Unknown

log = logging.getLogger(__name__)

CollectorFn = Callable[[CollectContext], dict[str, Any]]
ENTRY_POINT_GROUP = "expdna.collectors"
DEFAULT_DEADLINE_S = 4.0


@dataclass(frozen=True)
class Collector:
    """A named source of one manifest section."""

    name: str
    section: str
    fn: CollectorFn
    #: Overrides the run's per-collector deadline (e.g. hashing data may need longer).
    deadline_s: float | None = None


@dataclass
class Registry:
    """Collectors by name. An object, so tests and callers can build their own."""

    collectors: dict[str, Collector] = field(default_factory=dict)
    #: Problems met while loading plugins; ``expdna.api.collect`` records them.
    warnings: list[str] = field(default_factory=list)

    def register(self, name: str, section: str) -> Callable[[CollectorFn], CollectorFn]:
        def decorator(fn: CollectorFn) -> CollectorFn:
            self.add(Collector(name=name, section=section, fn=fn))
            return fn

        return decorator

    def add(self, collector: Collector) -> None:
        if collector.name in self.collectors:
            raise ValueError(f"collector {collector.name!r} is registered twice")
        self.collectors[collector.name] = collector

    def load_entry_points(self) -> list[str]:
        """Add third-party collectors from the ``expdna.collectors`` entry-point group.

        Each entry point names a :class:`Collector`. A broken one (fails to import, is not
        a Collector, reuses a registered name) is skipped with a warning, kept in
        :attr:`warnings` and returned.
        """
        warnings = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                collector = ep.load()
                if not isinstance(collector, Collector):
                    raise TypeError(f"{ep.value} is not an expdna Collector")
                self.add(collector)
            except Exception as exc:  # a broken plugin must not stop collection
                log.warning("plugin %s (%s) skipped: %s", ep.name, ep.value, exc)
                warnings.append(f"plugin {ep.name} ({ep.value}): {type(exc).__name__}: {exc}")
        self.warnings.extend(warnings)
        return warnings

    def select(self, names: Iterable[str] | None) -> list[Collector]:
        if names is None:
            return list(self.collectors.values())
        unknown = [n for n in names if n not in self.collectors]
        if unknown:
            raise KeyError(f"unknown collector(s): {', '.join(unknown)}")
        return [self.collectors[n] for n in names]


@dataclass
class Outcome:
    """What one collector produced."""

    status: str
    section: dict[str, Any]
    duration_ms: float
    warnings: list[str] = field(default_factory=list)
    #: The collector raised :class:`Unknown`: its DNA section is unknown although it ran.
    unknown: bool = False
    #: What the collector left out on purpose, said once (:class:`~.context.Noted`).
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        recorded: dict[str, Any] = {
            "status": self.status,
            "duration_ms": round(self.duration_ms, 2),
            "warnings": self.warnings,
        }
        if self.notes:
            recorded["notes"] = self.notes
        return recorded


#: CPython before 3.11.8 keeps one AST recursion counter for every thread (gh-106905): a
#: module compiled in one collector's thread while another thread compiles can fail with
#: this SystemError, which says nothing about the source. Such a call is made once more.
_AST_RACE = "AST constructor recursion depth mismatch"


def _guarded(collector: Collector, ctx: CollectContext) -> dict[str, Any]:
    try:
        return collector.fn(ctx)
    except SystemError as exc:
        if _AST_RACE not in str(exc):
            raise
        log.info("collector %s hit CPython's AST thread race (gh-106905); again", collector.name)
        return collector.fn(ctx)


def _call(collector: Collector, ctx: CollectContext) -> Outcome:
    start = time.perf_counter()
    unknown = False
    notes: list[str] = []
    try:
        section = _guarded(collector, ctx)
        status, warnings = "ok", []
        notes = list(getattr(section, "notes", []))
    except NotAvailable as exc:
        section, status, warnings = {}, "skipped", [str(exc)] if str(exc) else []
    except Unknown as exc:
        section, status, warnings, unknown = dict(exc.section), "partial", [exc.reason], True
    except Partial as exc:
        section, status, warnings = dict(exc.section), "partial", [exc.reason]
        notes = getattr(exc.section, "notes", [])
    except subprocess.TimeoutExpired as exc:
        section, status, warnings = {}, "timeout", [_no_answer(exc)]
    except TimeoutError as exc:
        section, status, warnings = {}, "timeout", [f"{type(exc).__name__}: {exc}"]
    except Exception as exc:  # collectors never break a run: a failure becomes a warning
        log.debug("collector %s failed", collector.name, exc_info=True)
        section, status, warnings = {}, "failed", [f"{type(exc).__name__}: {exc}"]
    elapsed = (time.perf_counter() - start) * 1000
    return Outcome(status, dict(section), elapsed, warnings, unknown, list(notes))


def _no_answer(exc: subprocess.TimeoutExpired) -> str:
    """One short line: which program did not answer, and within how long."""
    argv = exc.cmd if isinstance(exc.cmd, (list, tuple)) else [exc.cmd]
    words = [str(w) for w in argv]
    # "git -C <dir> rev-parse ...": the program and its subcommand, not its whole command line
    shown = [os.path.basename(words[0])] if words else []
    after_option = False
    for word in words[1:6]:
        if not word.startswith("-") and "/" not in word and not after_option:
            shown.append(word)
            break
        after_option = word in ("-C", "-c")
    return f"TimeoutExpired: {' '.join(shown)} gave no answer within {exc.timeout:.3g} s"


def run_collectors(
    ctx: CollectContext,
    collectors: Iterable[Collector],
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    overall_deadline_s: float | None = None,
) -> dict[str, Outcome]:
    """Run ``collectors`` concurrently; every name gets an outcome, hung ones ``timeout``.

    Returns once every collector answered or the last deadline passed, whichever is first.
    """
    chosen = list(collectors)
    results: queue.Queue[tuple[str, Outcome, float]] = queue.Queue()
    started = time.perf_counter()
    limits = {c.name: _limit(c, deadline_s, overall_deadline_s) for c in chosen}

    def work(collector: Collector) -> None:
        # Its budget for subprocesses and waits is its own deadline.
        limit = limits[collector.name]
        own = ctx if ctx.timeout_s == limit else dataclasses.replace(ctx, timeout_s=limit)
        outcome = _call(collector, own)
        results.put((collector.name, outcome, time.perf_counter()))  # when it finished

    threads: dict[str, threading.Thread] = {}
    for collector in chosen:
        thread = threading.Thread(
            target=work,
            args=(collector,),
            name=f"expdna-collect-{collector.name}",
            daemon=True,
        )
        thread.start()
        threads[collector.name] = thread

    outcomes: dict[str, Outcome] = {}
    while len(outcomes) < len(chosen):
        pending = [limits[c.name] for c in chosen if c.name not in outcomes]
        left = max(pending) - (time.perf_counter() - started)
        if left <= 0:
            break
        try:
            name, outcome, finished = results.get(timeout=left)
        except queue.Empty:
            break
        if finished - started > limits[name] and outcome.status != "timeout":
            # It answered, but after its deadline: the caller was owed the answer sooner.
            outcome = Outcome(
                "timeout", {}, outcome.duration_ms, [*outcome.warnings, _missed(limits[name])]
            )
        outcomes[name] = outcome
    elapsed = (time.perf_counter() - started) * 1000
    for collector in chosen:
        if collector.name not in outcomes:
            abandon(threads[collector.name])
            limit = limits[collector.name]
            outcomes[collector.name] = Outcome(
                "timeout", {}, min(elapsed, limit * 1000), [_missed(limit)]
            )
    from expdna.manifest.redact import redact_text

    for name, outcome in outcomes.items():
        for warning in outcome.warnings:
            if outcome.status != "skipped":
                # stderr is shared like the manifest, and is written before it is redacted
                log.warning("collector %s %s: %s", name, outcome.status, redact_text(warning))
    return {c.name: outcomes[c.name] for c in chosen}


def _limit(collector: Collector, deadline_s: float, overall_deadline_s: float | None) -> float:
    own = deadline_s if collector.deadline_s is None else collector.deadline_s
    return own if overall_deadline_s is None else min(own, overall_deadline_s)


def _missed(limit: float) -> str:
    return f"no answer within {limit:g} s; abandoned"
