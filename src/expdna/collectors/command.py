"""The command being recorded: argv as given and the working directory."""

from __future__ import annotations

from typing import Any

from expdna.collectors.context import CollectContext


def collect_command(ctx: CollectContext) -> dict[str, Any]:
    return {"argv": list(ctx.argv), "cwd": str(ctx.cwd)}
