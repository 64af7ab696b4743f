"""The one way the store splits values into ``IN (...)`` lists and batches, light (no
SQLAlchemy): the read layer and the bulk writers both use it."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
#: Parameters per IN list: under SQLite's limit, small enough for PostgreSQL plans.
CHUNK = 500


def chunks(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size`` (at least one item each), read as they are
    needed: a generator of manifests is never held whole."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, max(size, 1))):
        yield chunk
