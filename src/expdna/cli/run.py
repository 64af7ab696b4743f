"""``expdna run -- CMD...``: record a run of a command you cannot (or will not) edit.

The manifest is collected and written as ``generate`` does (status ``running``), the
command is started with the run's id and manifest path in its environment, SIGINT and
SIGTERM are passed on to it, and when it ends the manifest says how: ``completed``,
``failed`` (its exit code), ``interrupted`` (the signal), with duration and peak memory
(of the command and its children, from ``wait4``). A command that uses the hook joins
this run (:mod:`expdna.integrations.joined`); one that does not may write its final
metrics as a JSON object to ``$EXPDNA_METRICS_FILE``. ``--record`` records the finished
manifest in the store. The exit code is the command's own (128 + N when signal N ended it).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from expdna.cli.generate import collect_and_write, collect_options
from expdna.cli.output import emit_json
from expdna.cli.params import GivenPath
from expdna.cli.store import StoreConfig, pass_config
from expdna.errors import ExpdnaError, InvalidInputError
from expdna.manifest.dna import short

if TYPE_CHECKING:
    from expdna.manifest.model import Manifest, RunStatus

#: The signals passed on to the command.
FORWARDED = (signal.SIGINT, signal.SIGTERM)


class Child:
    """The command, started; what it ended with once :meth:`wait` returns."""

    def __init__(self, argv: Sequence[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(list(argv), env=env)
        #: The first forwarded signal's name (the run was interrupted from outside).
        self.received: str | None = None

    def forward(self, number: int, frame: FrameType | None) -> None:
        from expdna.manifest.status import signal_name

        self.received = self.received or signal_name(number)
        # A Ctrl-C at the terminal reaches the whole foreground process group, the command
        # too: sending SIGINT again would interrupt its own clean-up.
        if number == signal.SIGINT and _terminal_delivered():
            return
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(self.process.pid, number)

    def wait(self) -> tuple[int, Any]:
        """(the wait status as ``subprocess`` writes it, the command's ``rusage``)."""
        _, status, usage = os.wait4(self.process.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        self.process.returncode = code  # Popen must not wait for a reaped child again
        return code, usage


def _terminal_delivered() -> bool:
    """Whether this process is in the terminal's foreground group (a Ctrl-C reached all)."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def _final_metrics(path: Path) -> tuple[dict[str, Any], str | None]:
    """The metrics the command wrote to ``$EXPDNA_METRICS_FILE`` (redacted), or a warning."""
    if not path.is_file():
        return {}, None
    from expdna.integrations.args import plain
    from expdna.manifest.redact import redact_tree

    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(found, dict):
            raise ValueError(f"a JSON {type(found).__name__}, not an object")
        values, _ = redact_tree({str(k): plain(v) for k, v in found.items()}, "metrics")
    except (OSError, ValueError) as exc:
        return {}, f"{path}: metrics not recorded: {exc}"
    return dict(values), None


def _reread(path: Path, manifest: Manifest) -> Manifest:
    """The manifest file as the command's hook left it (it joined the run), else ours."""
    from expdna.manifest.io import load_manifest

    try:
        found = load_manifest(path)
    except Exception as exc:  # the command may have broken the file: ours stands
        click.echo(
            f"expdna: warning: {path}: {exc}; keeping the manifest written at start", err=True
        )
        return manifest
    return found if found.run_id == manifest.run_id else manifest


def _status(
    begun: RunStatus, code: int, usage: Any, received: str | None, child: RunStatus | None
) -> RunStatus:
    """How the command ended; a joined hook's exception is kept as the error."""
    from expdna.manifest.status import child_peak_rss, ended, signal_name

    error = None
    if child is not None and child.state == "failed" and child.error is not None:
        error = child.error.model_dump(mode="json")
    peak = child_peak_rss(usage)
    if code < 0:
        return ended(begun, "interrupted", signal=signal_name(-code), peak_rss_bytes=peak)
    if code == 0:
        return ended(begun, "completed", exit_code=0, peak_rss_bytes=peak)
    if received is not None:
        return ended(begun, "interrupted", exit_code=code, signal=received, peak_rss_bytes=peak)
    return ended(begun, "failed", exit_code=code, error=error, peak_rss_bytes=peak)


def _start(argv: Sequence[str], env: dict[str, str]) -> Child | None:
    try:
        return Child(argv, env)
    except OSError as exc:  # not found, not executable: the run failed before it began
        click.echo(f"expdna: {argv[0]}: {exc.strerror or exc}", err=True)
        return None


@click.command("run")
@click.option(
    "--output-dir",
    "output_dir",
    type=GivenPath(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    metavar="DIR",
    help="Where manifest_<run_id>.json goes (created when missing).",
)
@collect_options
@click.option(
    "--record",
    "record",
    is_flag=True,
    help="Record the finished run into the store (--store, --index-url).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='At the end, print {"path", "run_id", "dna", "status"} on stdout '
    "(after the command's own output).",
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARGS...]")
@pass_config
def run_command(
    config: StoreConfig,
    output_dir: Path,
    repos: tuple[Path, ...],
    data: tuple[str, ...],
    dna_ignore: tuple[str, ...],
    deadline: float,
    no_cache: bool,
    record: bool,
    as_json: bool,
    argv: tuple[str, ...],
) -> None:
    """Run CMD and record it: the manifest, then how it ended.

    The manifest is written before CMD starts (as generate writes it, status "running"),
    so a run that is killed still leaves one. When CMD ends the manifest says how:
    completed, failed (exit code), interrupted (signal), with duration and peak memory.
    SIGINT and SIGTERM are passed on to CMD. The exit code is CMD's own (128+N when
    signal N ended it).

    \b
    CMD's environment names the run:
      EXPDNA_RUN_ID         the run id
      EXPDNA_MANIFEST       the manifest file; a script using expdna.start/track or a
                            callback joins this run (one manifest) instead of making one
      EXPDNA_METRICS_FILE   write final metrics here as a JSON object, {"val_loss": 1.2}

    \b
    expdna run --record -- python train.py --lr 3e-4
    """
    if not argv:
        raise InvalidInputError("expdna run: give the command after --, e.g. -- python train.py")
    from expdna.manifest.io import write_manifest
    from expdna.manifest.status import started

    begun = datetime.now(timezone.utc)
    if output_dir.exists() and not output_dir.is_dir():
        raise InvalidInputError(f"--output-dir {output_dir}: not a directory")
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file on the way, a read-only or virtual file system
        raise InvalidInputError(
            f"--output-dir {output_dir}: cannot be created: {exc.strerror or exc}"
        ) from exc
    path, manifest = collect_and_write(
        argv,
        output_dir,
        repos=repos,
        data=data,
        dna_ignore=dna_ignore,
        deadline=deadline,
        no_cache=no_cache,
        store=config,
    )
    manifest.status = started(begun)
    write_manifest(manifest, path)
    assert manifest.dna is not None
    click.echo(f"expdna: run {manifest.run_id}  dna {short(manifest.dna.value)}  {path}", err=True)

    with tempfile.TemporaryDirectory(prefix="expdna-run-") as scratch:
        metrics_file = Path(os.environ.get("EXPDNA_METRICS_FILE") or Path(scratch, "metrics.json"))
        env = {
            **os.environ,
            "EXPDNA_RUN_ID": manifest.run_id,
            "EXPDNA_MANIFEST": str(path.resolve()),
            "EXPDNA_METRICS_FILE": str(metrics_file),
        }
        code, usage, received = _run(argv, env)
        metrics, warning = _final_metrics(metrics_file)
    if warning:
        click.echo(f"expdna: warning: {warning}", err=True)

    final = _reread(path, manifest)
    assert manifest.status is not None
    final.status = _status(manifest.status, code, usage, received, final.status)
    if metrics:
        final.metrics = {**final.metrics, **metrics}
    write_manifest(final, path)
    if record:
        _record(config, final, path)
    _report(final, path, as_json)
    raise SystemExit(128 - code if code < 0 else code)


def _record(config: StoreConfig, manifest: Manifest, path: Path) -> None:
    """Record the finished run; a store that refuses it is one line, not the exit code.

    The command has run by now: its exit code is still the one to give, and the manifest
    file holds the run for a later ``expdna record``.
    """
    from expdna.cli.record import record_generated

    try:
        record_generated(config, manifest)
    except (ExpdnaError, OSError) as exc:
        reason = str(exc) if isinstance(exc, ExpdnaError) else exc.strerror or str(exc)
        click.echo(
            f"expdna: error: not recorded: {reason} (`expdna record {path}` records it later)",
            err=True,
        )


def _run(argv: Sequence[str], env: dict[str, str]) -> tuple[int, Any, str | None]:
    """Start the command, pass signals on, wait: (exit code, rusage, signal received)."""
    child = _start(argv, env)
    if child is None:
        import resource

        return 127, resource.getrusage(resource.RUSAGE_CHILDREN), None
    previous = {number: signal.signal(number, child.forward) for number in FORWARDED}
    try:
        code, usage = child.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return code, usage, child.received


def _report(manifest: Manifest, path: Path, as_json: bool) -> None:
    status = manifest.status
    assert status is not None and manifest.dna is not None
    if as_json:
        emit_json(
            {
                "path": str(path.resolve()),
                "run_id": manifest.run_id,
                "dna": manifest.dna.value,
                "status": status.model_dump(mode="json"),
            }
        )
        return
    how: str = status.state
    if status.exit_code is not None and status.state != "completed":
        how += f" (exit {status.exit_code})"
    if status.signal:
        how += f" ({status.signal})"
    peak = f", peak {status.peak_rss_bytes / 2**20:.0f} MiB" if status.peak_rss_bytes else ""
    click.echo(f"expdna: {how} after {status.duration_s or 0:.1f} s{peak}  {path}", err=True)
