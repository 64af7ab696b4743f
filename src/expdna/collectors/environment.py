"""The Python environment: interpreter, installed distributions, OS, kernel, glibc, container.

Package versions come from distribution metadata (never by importing anything). Every
installed distribution is listed by name in ``packages`` (so ``diff`` and ``check`` name an
added, removed or changed one), and the whole set also enters as ``packages_digest``, the
BLAKE3 of its sorted ``name==version`` listing (:func:`distributions_listing`, kept by the
store as a blob). ``sys.flags.hash_randomization`` is recorded too: it decides set order.

When the command runs under another interpreter than this process's (``generate --
/opt/venv2/bin/python train.py``), the Python facts, the packages and torch's build are
that interpreter's, asked of it by :mod:`expdna.collectors.interpreter`; an interpreter that
cannot be found or asked leaves the section unknown with the reason.
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

from expdna.collectors.container import container_kind
from expdna.collectors.context import CollectContext, Noted, Unknown
from expdna.collectors.distributions import (
    distributions_listing,
    installed,
    listing,
    normalize,
)
from expdna.collectors.framework import build_constants
from expdna.collectors.interpreter import Probed, ProbeFailed, foreign_interpreter, probe
from expdna.digest import ref_of

__all__ = [
    "KEY_PACKAGES",
    "KEY_PREFIXES",
    "collect_environment",
    "distributions_listing",
    "glibc_version",
    "key_packages",
    "os_release",
]

#: Distributions whose versions the manifest lists by name (PEP 503 names).
KEY_PACKAGES: tuple[str, ...] = (
    "torch",
    "ray",
    "numpy",
    "transformers",
    "megatron-core",
    "deepspeed",
    "accelerate",
    "vllm",
    "sglang",
    "flash-attn",
    "triton",
    "jax",
    "jaxlib",
    "torchvision",
    "pyarrow",
    "expdna",
)
#: Every distribution whose name starts with one of these is listed too (CUDA wheels).
KEY_PREFIXES: tuple[str, ...] = ("nvidia-",)

_OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")  # in os-release(5) order


def key_packages(
    dists: dict[str, str],
    names: tuple[str, ...] = KEY_PACKAGES,
    prefixes: tuple[str, ...] = KEY_PREFIXES,
) -> dict[str, str]:
    """The key entries of ``dists`` (name -> version), sorted by name."""
    wanted = {normalize(name) for name in names}
    return {
        name: dists[name] for name in sorted(dists) if name in wanted or name.startswith(prefixes)
    }


def os_release(root: Path = Path("/")) -> dict[str, str]:
    """The fields of os-release(5), unquoted; empty when neither file is readable."""
    for candidate in _OS_RELEASE:
        try:
            text = (root / candidate.lstrip("/")).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        fields = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if not sep or line.lstrip().startswith("#"):
                continue
            try:  # values use shell quoting and escapes
                words = shlex.split(value)
            except ValueError:
                words = [value.strip().strip("\"'")]
            fields[key.strip()] = " ".join(words)
        return fields
    return {}


def glibc_version() -> str | None:
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; musl has no such name
    except (AttributeError, ValueError, OSError):
        return None
    return found.split()[-1] if found else None


def _system(ctx: CollectContext, root: Path) -> dict[str, Any]:
    """The machine's facts, whichever interpreter runs the command."""
    release = os_release(root)
    return {
        "os": release.get("PRETTY_NAME") or release.get("NAME") or platform.system(),
        "os_id": release.get("ID"),
        "os_version_id": release.get("VERSION_ID"),
        "kernel": platform.release(),
        "glibc": glibc_version(),
        "container": container_kind(ctx.environ, root),
    }


def _packages(dists: dict[str, str]) -> dict[str, Any]:
    return {
        # Every distribution by name (PEP 503 names): diff and check name each one.
        "packages": dict(sorted(dists.items())),
        "packages_digest": ref_of(listing(dists)),
        "package_count": len(dists),
    }


def collect_environment(ctx: CollectContext, *, root: Path = Path("/")) -> dict[str, Any]:
    """The environment section. ``root`` stands for ``/`` (os-release, container markers)."""
    if ctx.probe_interpreter:
        probed = _command_environment(ctx, root)
        if probed is not None:
            return probed
    return {
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_build": " ".join(platform.python_build()),
        "python_executable": sys.executable,
        **_packages(installed()),
        **_system(ctx, root),
        "hash_randomization": bool(sys.flags.hash_randomization),
    }


def _probe_budget(timeout_s: float) -> float:
    # Leave the collector time to answer within its own deadline.
    return max(timeout_s - 0.25, timeout_s / 2)


def _command_environment(ctx: CollectContext, root: Path) -> dict[str, Any] | None:
    """The environment of the command's own interpreter, when that is another one."""
    try:
        found = foreign_interpreter(ctx.argv, ctx.cwd, ctx.environ)
    except ProbeFailed as exc:
        raise Unknown(_system(ctx, root), str(exc)) from None
    if found is None:
        return None
    try:
        report = probe(
            found, cwd=ctx.cwd, environ=ctx.environ, timeout_s=_probe_budget(ctx.timeout_s)
        )
    except ProbeFailed as exc:
        partial = {"python_executable": str(found), **_system(ctx, root)}
        raise Unknown(partial, f"the command's interpreter {found} {exc}") from None
    section = _from_report(report, ctx, root)
    if report.distributions is None:
        raise Unknown(
            section,
            f"the command's interpreter {found} (Python {report.python_version}) cannot "
            "list its packages (importlib.metadata needs Python 3.8)",
        )
    note = f"environment of the command's interpreter {found}, asked in a subprocess"
    return Noted(section, [note])


def _from_report(report: Probed, ctx: CollectContext, root: Path) -> dict[str, Any]:
    section: dict[str, Any] = {
        "python_version": report.python_version,
        "python_implementation": report.python_implementation,
        "python_build": report.python_build,
        "python_executable": report.python_executable,
    }
    dists = report.distributions or {}
    if report.distributions is not None:
        section.update(_packages(dists))
    section.update(_system(ctx, root))
    section["hash_randomization"] = report.hash_randomization
    torch = dists.get("torch")
    if torch is not None or report.torch_version_py is not None:
        build = build_constants(report.torch_version_py) if report.torch_version_py else None
        section["framework"] = {"torch": {"version": torch, "build": build}}
    else:
        section["framework"] = {}
    return section
