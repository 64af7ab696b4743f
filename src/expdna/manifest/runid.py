"""Run ids: sortable by time, unique across hosts starting in the same second."""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timezone

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
RUN_ID = re.compile(r"^\d{8}_\d{6}_[0-9a-z]+_[0-9a-z]{4,}$")


def new_run_id(now: datetime, commit: str | None) -> str:
    """``20260805_143025_9fc8093_k3f9``: UTC time, short commit (or ``nogit``), random suffix."""
    stamp = now.astimezone(timezone.utc).strftime("%Y%m%d_%H%M%S")
    suffix = "".join(secrets.choice(_ALPHABET) for _ in range(4))
    return f"{stamp}_{commit[:7] if commit else 'nogit'}_{suffix}"


def iso_utc(now: datetime) -> str:
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
