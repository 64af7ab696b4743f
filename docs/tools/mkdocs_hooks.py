"""MkDocs hooks for the site (``hooks:`` in mkdocs.yml).

The pages link to files of the repository outside ``docs/`` (``../../examples/train_tiny.py``)
so that they work where Markdown is read in the repository; a built site has no such files,
so those links become the path in code, never a broken link. A link to a section of one of
the old single pages (``guide.md#5-redaction``) goes to the page that now holds that section.
A block of output marked as recorded (not replayed by the docs tools) gets a line saying so.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    here = posixpath.dirname(page.file.src_uri)
    # Language folders (en/, zh/) sit under docs/: a path above docs/ is a repository file.
    depth = len(here.split("/")) if here else 0

    def outside(match: re.Match[str]) -> str:
        text, url = match.group(1), match.group(2)
        if "://" in url or not url.startswith("../"):
            return match.group(0)
        ups = len(re.match(r"^(\.\./)*", url).group(0)) // 3  # type: ignore[union-attr]
        if ups <= depth and not url.endswith("/"):
            return match.group(0)  # a file inside docs/ (a folder is no page: as text)
        if ups > depth:
            path = url[3 * ups :]
        else:
            path = f"docs/{posixpath.normpath(posixpath.join(here, url))}/"
        return text if text.strip("`") == path.rstrip("/") else f"{text} (`{path}`)"

    return _recorded_notes(_moved_links(_LINK.sub(outside, markdown), page, config), page)


# A block of output that no transcript checks says so on the site (docs/tools/fill_docs.py).
_RECORDED = re.compile(
    r"^(?P<indent> *)<!-- (?:out:[\w-]+.* recorded=|recorded:)(?P<on>\d{4}-\d\d-\d\d) -->$",
    re.M,
)
_RECORDED_NOTE = {
    "en": "*Recorded on {on}; not rerun by the docs test.*",
    "zh": "*记录于 {on}；文档测试不会重跑。*",
}


def _recorded_notes(markdown: str, page: Any) -> str:
    note = _RECORDED_NOTE.get(page.file.src_uri.partition("/")[0], _RECORDED_NOTE["en"])

    def with_note(match: re.Match[str]) -> str:
        indent = match["indent"]
        return f"{indent}{note.format(on=match['on'])}\n\n{match.group(0)}"

    return _RECORDED.sub(with_note, markdown)


# A link to a section of an old single page is sent to the page that now has it.
_OLD_LINK = re.compile(r"\]\(((?:\.\./)*)(guide|integration|collectors)\.md#([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.*?)(?: \{#([\w-]+)\})?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
#: The pages each old single page was split into (an anchor like ``s5`` was on several).
_SPLIT_FROM = {
    "guide": (
        "index.md",
        "getting-started.md",
        "concepts/manifest.md",
        "concepts/dna.md",
        "concepts/family.md",
        "dna-spec.md",
        "security.md",
        "reference/python-api.md",
        *(
            f"commands/{n}.md"
            for n in ("index", "generate", "diff", "check", "rerun", "errors", "ui")
        ),
    ),
    "integration": (
        *(
            f"integrations/{n}.md"
            for n in ("hook", "ray", "checkpoints", "walkthrough", "frameworks")
        ),
        "concepts/store.md",
        "team-setup.md",
        "commands/stability.md",
    ),
    "collectors": (
        *(f"collectors/{n}.md" for n in ("index", "plugins", "built-in", "speed")),
        "commands/data.md",
    ),
}
_anchors: dict[tuple[str, str], dict[str, str]] = {}


def _anchor_index(config: Any, lang: str, old: str) -> dict[str, str]:
    """``{anchor: page}`` over the pages one old page became (headings' slugs, ``{#id}``)."""
    if (lang, old) not in _anchors:
        from pathlib import Path

        from markdown.extensions.toc import slugify

        root = Path(config["docs_dir"]) / lang
        index: dict[str, str] = {}
        for page in _SPLIT_FROM[old]:
            path = root / page
            if not path.is_file():
                continue
            fenced = False
            for line in path.read_text(encoding="utf-8").split("\n"):
                if _FENCE.match(line):
                    fenced = not fenced
                heading = None if fenced else _HEADING.match(line)
                if heading:
                    text = re.sub(r"[`*]", "", heading.group(1))
                    for anchor in (heading.group(2), slugify(text, "-")):
                        if anchor:
                            index.setdefault(anchor, page)
        _anchors[lang, old] = index
    return _anchors[lang, old]


def _moved_links(markdown: str, page: Any, config: Any) -> str:
    lang, _, rest = page.file.src_uri.partition("/")
    here = posixpath.dirname(rest)

    def moved(match: re.Match[str]) -> str:
        index, anchor = _anchor_index(config, lang, match.group(2)), match.group(3)
        target = index.get(anchor)
        if target is None:  # a numbered section ("5-redaction") is now a page's title
            anchor = re.sub(r"^\d+-", "", anchor)
            target = index.get(anchor)
        if target is None:
            return match.group(0)
        rel = posixpath.relpath(target, here or ".")
        return f"]({rel}#{anchor})"

    return _OLD_LINK.sub(moved, markdown)
