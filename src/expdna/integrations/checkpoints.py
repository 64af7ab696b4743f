"""Checkpoint file names that carry the run's DNA: ``vit_base_a7f3b2c9d1e4_best.pth``."""

from __future__ import annotations

import re
from typing import Any

from expdna.errors import InvalidInputError
from expdna.manifest.dna import short

_DNA = re.compile(r"^[0-9a-fA-F]{64}$")
# Characters that would make a part a path, or a name no filesystem or shell treats kindly.
_FORBIDDEN = re.compile(r"[/\\\x00-\x1f\x7f]")


def _dna_value(dna: Any) -> str:
    """The 64-hex DNA from a string, or from anything with a ``dna`` attribute (a handle)."""
    value = getattr(dna, "dna", dna)
    if value is None:
        raise InvalidInputError(
            "checkpoint_name: the run has no DNA (its manifest could not be collected)"
        )
    if not isinstance(value, str) or not _DNA.match(value):
        raise InvalidInputError(
            f"checkpoint_name: {value!r} is not a DNA (expected 64 hex characters or a run handle)"
        )
    return value.lower()


def _part(what: str, value: Any, *, required: bool) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(
            f"checkpoint_name: {what} must be a string, not {type(value).__name__}"
        )
    if required and not value:
        raise InvalidInputError(f"checkpoint_name: {what} is empty")
    if _FORBIDDEN.search(value):
        raise InvalidInputError(
            f"checkpoint_name: {what} {value!r} holds a path separator or a control character"
        )
    if value in (".", ".."):
        raise InvalidInputError(f"checkpoint_name: {what} {value!r} is not a name")
    return value


def checkpoint_name(model: str, dna: Any, tag: str = "", ext: str = "") -> str:
    """``<model>_<12 hex of the DNA>[_<tag>][<ext>]``, a file name without directories.

    ``dna`` is the 64-hex DNA or a run handle (anything whose ``dna`` attribute is one);
    ``ext`` may be given with or without its dot. Raises :class:`InvalidInputError` for a
    part holding a path separator, an empty model name or something that is not a DNA.
    """
    name = _part("model", model, required=True)
    value = _dna_value(dna)
    tag = _part("tag", tag, required=False)
    ext = _part("ext", ext, required=False)
    if ext and not ext.startswith("."):
        ext = "." + ext
    return f"{name}_{short(value)}{'_' + tag if tag else ''}{ext}"
