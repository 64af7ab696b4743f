"""The program another interpreter runs to describe itself (text passed with ``-c``).

Standard library only, and written for old interpreters too (no syntax past 3.6), because
it runs under whatever Python the training command names. It imports nothing the user
installed: distributions are read from their metadata, and torch's build constants are
sent as the raw text of ``torch/version.py`` (found with ``find_spec``, which runs none
of torch), for the caller to parse. One JSON object goes to stdout; the caller
(:mod:`expdna.collectors.interpreter`) treats it as hostile input.

This module is never imported by expdna at run time for its functions: its source text is
the probe. :func:`main` also runs when the file is executed directly, for debugging.
"""

import sys

#: The most of ``torch/version.py`` sent back (torch's is under 1 KB).
VERSION_PY_LIMIT = 65536


def _distributions() -> "list[list[str]]":
    try:
        from importlib import metadata
    except ImportError:  # before 3.8: the caller records the set as unknown
        return []
    found = []
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
            version = dist.version
        except Exception:  # a broken dist-info: importlib lists it, it names nothing
            continue
        if name and version:
            found.append([str(name), str(version)])
    return found


def _torch_version_py() -> "str | None":
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except Exception:
        return None
    for location in list(getattr(spec, "submodule_search_locations", None) or []):
        try:
            with open(location + "/version.py", encoding="utf-8") as handle:
                return handle.read(VERSION_PY_LIMIT)
        except (OSError, ValueError):
            continue
    return None


def main() -> None:
    # ``python -c`` puts the working directory first on ``sys.path``: a ``json.py`` there
    # must not run in place of the standard library's, so the path is fixed before imports.
    if sys.path and sys.path[0] in ("", "."):
        del sys.path[0]
    import json
    import platform

    has_metadata = sys.version_info >= (3, 8)
    report = {
        "probe": 1,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_build": " ".join(platform.python_build()),
        "python_executable": sys.executable,
        "prefix": sys.prefix,
        "distributions": _distributions() if has_metadata else None,
        "hash_randomization": bool(sys.flags.hash_randomization),
        "torch_version_py": _torch_version_py(),
    }
    sys.stdout.write(json.dumps(report))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
