"""Click parameter types the commands share."""

from __future__ import annotations

from typing import Any

import click


class GivenPath(click.Path):
    """A path the user typed: an empty one is a usage error, where click's ``Path`` reads
    ``-o ''`` as the current directory and a command writes into the checkout."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail(f"{value!r} is an empty path", param, ctx)
        return super().convert(value, param, ctx)
