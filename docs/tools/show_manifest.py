"""Print a manifest, or parts of it, for the docs.

    python show_manifest.py [-1] FILE [DOTTED.PATH ...]

Without paths: the whole manifest, each inline patch cut after its first three lines.
Either way ``environment.packages`` (every installed distribution, about 160 in the docs'
venv) shows a few well-known ones and how many more there are.
With paths: each path's value (one path: the value alone; several: an object keyed by
path). Lists of plain values are written on one line, so listings stay readable.
With -1: the values on one line, as JSON, separated by two spaces.
"""

import json
import sys
from typing import Any


def render(value: Any, indent: int = 0) -> str:
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {render(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and value:
        if all(not isinstance(v, (dict, list)) for v in value):
            return json.dumps(value, ensure_ascii=False)
        items = [f"{inner}{render(v, indent + 2)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False)


#: The packages shown of ``environment.packages``; the rest is counted.
SHOWN_PACKAGES = ("torch", "accelerate", "expdna", "numpy", "ray", "transformers")


def shorten_packages(doc: Any) -> None:
    packages = (doc.get("environment") or {}).get("packages")
    if isinstance(packages, dict) and len(packages) > len(SHOWN_PACKAGES) + 2:
        kept = {name: packages[name] for name in SHOWN_PACKAGES if name in packages}
        kept["..."] = f"({len(packages) - len(kept)} more)"
        doc["environment"]["packages"] = kept


def pick(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def main() -> None:
    args = sys.argv[1:]
    one_line = args[:1] == ["-1"]
    if one_line:
        args = args[1:]
    with open(args[0], encoding="utf-8") as fh:
        doc = json.load(fh)
    for repo in doc.get("code", {}).values():
        patch = repo.get("patch") or {}
        if patch.get("text"):
            lines = patch["text"].split("\n")
            patch["text"] = "\n".join(lines[:3]) + f"\n…({len(lines) - 3} more lines)…"
    shorten_packages(doc)
    paths = args[1:]
    if one_line:
        print("  ".join(json.dumps(pick(doc, path), ensure_ascii=False) for path in paths))
    elif not paths:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif len(paths) == 1:
        print(render(pick(doc, paths[0])))
    else:
        print(render({path: pick(doc, path) for path in paths}))


if __name__ == "__main__":
    main()
