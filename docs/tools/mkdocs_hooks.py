"""MkDocs hooks for the site (``hooks:`` in mkdocs.yml).

The pages link to files of the repository outside ``docs/`` (``../../examples/train_tiny.py``)
so that they work where Markdown is read in the repository; a built site has no such files,
so those links become the path in code, never a broken link.
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

    return _LINK.sub(outside, markdown)
