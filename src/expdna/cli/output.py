"""Printing helpers shared by the commands: JSON for machines, text for people."""

from __future__ import annotations

import json
from typing import Any

import click


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))
