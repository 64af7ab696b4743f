"""Run ids: the ones expdna makes (sortable by time, unique across hosts starting in the same
second) and the syntax every run id must have."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
#: Run ids expdna accepts (manifests, the store, the CLI): what expdna writes and what other
#: writers plausibly do; never a path separator, whitespace or a shell metacharacter.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}")


def new_run_id(now: datetime, commit: str | None) -> str:
    """``20260805_143025_9fc8093_k3f9``: UTC time, short commit (or ``nogit``), random suffix."""
    import secrets  # making a run id, not reading one

    stamp = now.astimezone(timezone.utc).strftime("%Y%m%d_%H%M%S")
    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(4))
    return f"{stamp}_{commit[:7] if commit else 'nogit'}_{suffix}"


def iso_utc(now: datetime) -> str:
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
