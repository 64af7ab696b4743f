"""Which docs pages each transcript fills (regen.sh and the docs-output test share it).

python docs/tools/pages.py TRANSCRIPT     # the pages it fills, one a line
python docs/tools/pages.py --list         # every transcript: NAME SCRIPT DEMO_VARIABLE DEMO
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
LANGUAGES = ("en", "zh")
#: Every transcript: its script in docs/tools, the variable that moves its demo directory,
#: and the directory the pages show (regen.sh runs each there; the test elsewhere).
TRANSCRIPTS: dict[str, tuple[str, str, str]] = {
    "guide": ("transcript.sh", "EXPDNA_DOCS_DEMO", "/tmp/demo"),
    "integration": (
        "integration_transcript.sh",
        "EXPDNA_DOCS_INTEGRATION_DEMO",
        "/tmp/expdna-demo",
    ),
    "frameworks": (
        "frameworks_transcript.sh",
        "EXPDNA_DOCS_FRAMEWORKS_DEMO",
        "/tmp/demo-frameworks",
    ),
    "store": ("store_transcript.sh", "EXPDNA_DOCS_STORE_DEMO", "/tmp/expdna-demo-store"),
    "replay": ("replay_transcript.sh", "EXPDNA_DOCS_REPLAY_DEMO", "/tmp/expdna-demo-replay"),
}
#: Pages filled from a transcript other than the guide's (block names are per transcript).
OWN: dict[str, tuple[str, ...]] = {
    "integration": (
        "integrations/walkthrough.md",
        "integrations/hook.md",
        "integrations/ray.md",
        "concepts/store.md",
        "commands/stability.md",
        "run-status.md",
    ),
    "frameworks": ("integrations/frameworks.md",),
    "store": ("store-internals.md", "team-setup.md", "explain.md"),
    "replay": ("check-and-rerun.md", "commands/ui.md", "object-storage.md"),
}


def pages(transcript: str) -> list[Path]:
    """The existing pages, every language, that ``transcript`` fills."""
    if transcript in OWN:
        names = list(OWN[transcript])
    else:
        taken = {name for own in OWN.values() for name in own}
        names = sorted(
            str(p.relative_to(DOCS / "en"))
            for p in (DOCS / "en").rglob("*.md")
            if str(p.relative_to(DOCS / "en")) not in taken
        )
    found = [DOCS / lang / name for lang in LANGUAGES for name in names]
    return [p for p in found if p.is_file()]


if __name__ == "__main__":
    if sys.argv[1] == "--list":
        print("\n".join(" ".join((name, *row)) for name, row in TRANSCRIPTS.items()))
    else:
        print("\n".join(str(p) for p in pages(sys.argv[1])))
