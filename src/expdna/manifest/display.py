"""How a DNA is shown to people. Kept apart from :mod:`expdna.manifest.dna` (which loads the
pydantic model) so that read-only queries can print DNAs without loading the model."""

from __future__ import annotations

SHORT_LENGTH = 12


def short(dna_value: str) -> str:
    """The DNA as shown to people: its first 12 hex characters."""
    return dna_value[:SHORT_LENGTH]


def printable(text: str) -> str:
    """``text`` as one line a terminal shows as it is: every character that is not
    printable (a newline, a carriage return, an escape starting a colour or a clear-screen
    sequence) written as its Python escape (``\\n``, ``\\x1b``). A manifest's values come
    from anyone; printed raw, they could redraw the screen or forge a line of the answer."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )
