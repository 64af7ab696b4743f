"""How a DNA is shown to people. Kept apart from :mod:`expdna.manifest.dna` (which loads the
pydantic model) so that read-only queries can print DNAs without loading the model."""

from __future__ import annotations

SHORT_LENGTH = 12


def short(dna_value: str) -> str:
    """The DNA as shown to people: its first 12 hex characters."""
    return dna_value[:SHORT_LENGTH]
