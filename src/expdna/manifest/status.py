"""A run's ``status`` section: how it ended, or that it has not yet.

``running`` is written when the run starts, so a process that dies without a word (SIGKILL,
the OOM killer, a lost node) leaves a manifest that says so with its start time; the end
replaces it with ``completed``, ``failed`` (the exception, redacted) or ``interrupted``
(the signal). The section is outside the DNA. A run is shown as ``unfinished`` when it
still says ``running`` after :data:`UNFINISHED_AFTER_S` (by age alone: there is no
heartbeat), see :func:`shown_state`.
"""

from __future__ import annotations

import os
import resource
import signal as signals
import socket
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from expdna.errors import InvalidInputError

if TYPE_CHECKING:  # the pydantic model loads only where a status is made, not to show one
    from expdna.manifest.model import RunStatus

#: A run that still says ``running`` this long after its start is shown as ``unfinished``.
UNFINISHED_AFTER_S = 24 * 3600.0
#: ``$EXPDNA_UNFINISHED_AFTER``: the same in seconds, for a team whose runs last longer.
UNFINISHED_ENV = "EXPDNA_UNFINISHED_AFTER"
#: Longest exception message kept (a message can hold a whole tensor).
MESSAGE_CHARS = 2000
#: How bad each end is. A run of several processes (the ranks of a torch.distributed job)
#: ends as its worst process did: rank 0 may finish before another rank fails.
STATE_ORDER = ("running", "completed", "interrupted", "failed")


def outranks(state: str | None, other: str | None) -> bool:
    """Whether an end in ``state`` stands over a later one in ``other``."""
    order = {name: i for i, name in enumerate(STATE_ORDER)}
    return order.get(state or "", -1) > order.get(other or "", -1)


def utc_text(moment: datetime) -> str:
    """UTC time as manifests write it: ``2026-12-01T21:50:03.123456Z``."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None).isoformat() + "Z"


def parse_utc(text: str) -> datetime | None:
    """A manifest time (``...Z``) as an aware UTC datetime; ``None`` when it is not one."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def host() -> str | None:
    from expdna.manifest.redact import redact_text  # not to show a state

    try:
        return redact_text(socket.gethostname()) or None
    except OSError:
        return None


def started(now: datetime | None = None) -> RunStatus:
    """The status of a run starting now."""
    from expdna.manifest.model import RunStatus

    moment = now or datetime.now(timezone.utc)
    return RunStatus(state="running", started_at=utc_text(moment), host=host())


def error_of(exc: BaseException) -> dict[str, str]:
    """An exception as ``{"type", "message"}``, redacted and bounded."""
    from expdna.manifest.redact import redact_text

    message = redact_text(str(exc))
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS] + "..."
    return {"type": type(exc).__name__, "message": message}


def signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


def own_peak_rss() -> int | None:
    """Peak resident memory of this process, in bytes (``ru_maxrss`` is KiB on Linux)."""
    return _bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _bytes(maxrss: int) -> int | None:
    if maxrss <= 0:
        return None
    return int(maxrss) if sys.platform == "darwin" else int(maxrss) * 1024


def child_peak_rss(usage: Any) -> int | None:
    """Peak resident memory from a child's ``rusage`` (``os.wait4``), in bytes."""
    return _bytes(int(usage.ru_maxrss))


def ended(
    begun: RunStatus,
    state: str,
    *,
    exit_code: int | None = None,
    error: dict[str, str] | None = None,
    signal: str | None = None,
    peak_rss_bytes: int | None = None,
    now: datetime | None = None,
) -> RunStatus:
    """``begun`` ended now in ``state``."""
    from expdna.manifest.model import RunStatus

    moment = now or datetime.now(timezone.utc)
    start = parse_utc(begun.started_at)
    duration = (moment - start).total_seconds() if start is not None else None
    return RunStatus.model_validate(
        {
            **begun.model_dump(mode="python"),
            "state": state,
            "exit_code": exit_code,
            "error": error,
            "signal": signal,
            "ended_at": utc_text(moment),
            "duration_s": round(duration, 3) if duration is not None else None,
            "peak_rss_bytes": peak_rss_bytes,
        }
    )


def from_exception(exc: BaseException | None) -> tuple[str, dict[str, str] | None, str | None]:
    """(state, error, signal) of a run its code left with ``exc`` (``None``: it returned)."""
    if exc is None:
        return "completed", None, None
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", None, "SIGINT"
    if isinstance(exc, SystemExit) and exc.code in (0, None):
        return "completed", None, None
    return "failed", error_of(exc), None


def unfinished_after_s(environ: Any = None) -> float:
    """:data:`UNFINISHED_AFTER_S`, or ``$EXPDNA_UNFINISHED_AFTER`` when it is a positive number."""
    text = (os.environ if environ is None else environ).get(UNFINISHED_ENV)
    try:
        value = float(text) if text else UNFINISHED_AFTER_S
    except ValueError:
        return UNFINISHED_AFTER_S
    return value if value > 0 else UNFINISHED_AFTER_S


def shown_state(
    state: str | None,
    started_at: datetime | None,
    *,
    now: datetime | None = None,
    after_s: float | None = None,
) -> str:
    """The state listings show: ``unknown`` for a run recorded before status existed,
    ``unfinished`` for one still ``running`` past the age limit, else the state itself."""
    if state is None:
        return "unknown"
    if state != "running" or started_at is None:
        return state
    moment = now or datetime.now(timezone.utc)
    if started_at.tzinfo is None:
        started_at = started_at.replace(tzinfo=timezone.utc)
    # In seconds, not as a timedelta: $EXPDNA_UNFINISHED_AFTER may be inf or past its range.
    limit = after_s if after_s is not None else unfinished_after_s()
    return "unfinished" if (moment - started_at).total_seconds() > limit else state


def unfinished_before(now: datetime) -> datetime | None:
    """The start time before which a run still ``running`` shows ``unfinished`` (``now``'s
    zone); None when the limit reaches past the calendar, so no run is."""
    try:
        return now - timedelta(seconds=unfinished_after_s())
    except OverflowError:
        return None


def checked_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """``status`` as the manifest model holds it (plain JSON); bad input is exit 2."""
    from pydantic import ValidationError

    from expdna.manifest.model import RunStatus

    try:
        return RunStatus.model_validate(dict(status)).model_dump(mode="json")
    except (ValidationError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"not a run status: {exc}") from None
