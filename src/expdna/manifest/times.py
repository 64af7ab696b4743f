"""Timestamps as manifests and queries write them: ISO 8601, read as UTC."""

from __future__ import annotations

from datetime import datetime, timezone

from expdna.errors import InvalidInputError, quoted


def parse_time(value: str, what: str) -> datetime:
    """ISO 8601 to naive UTC (the index stores UTC without a zone); naive input is UTC."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(
            f"{what}: {quoted(value)} is not an ISO 8601 date or time"
        ) from None
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
        except OverflowError:  # 0001-01-01T00:00+01:00 is before the year 1 in UTC
            raise InvalidInputError(
                f"{what}: {quoted(value)} is out of range (years 1 to 9999 in UTC)"
            ) from None
    return moment
