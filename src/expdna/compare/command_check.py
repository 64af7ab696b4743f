"""Is the recorded command the one the DNA stands for?

From DNA version 3 the command (launcher shape, interpreter, entry, argument words) is part
of the DNA, so the ``dna`` rule's recomputation already catches an edited ``command.argv``.
Versions 1 and 2 leave the command out: there the argv is held against
``config.resolved_args``, which is in the DNA. Every recorded argument must come from the
argv words with the same value, and every argument the argv words carry must be recorded:
a swapped or extended argv does not match. Matching is still weaker than the DNA, so a
rerun of such a manifest needs ``--trust-command``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from expdna.collectors.config import parse_args
from expdna.compare.findings import Finding
from expdna.manifest.model import Manifest

#: The first DNA version whose projection holds the command.
COMMAND_DNA_VERSION = 3
#: Disagreements named in one finding; the rest are counted.
_SHOWN = 3


def command_in_dna(manifest: Manifest) -> bool:
    """Whether the manifest's stored DNA covers its command (version 3 on)."""
    return manifest.dna is not None and manifest.dna.version >= COMMAND_DNA_VERSION


def _same(a: Any, b: Any) -> bool:
    # A bool recorded by a hook is the flag's presence on the command line.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (a is True and b == "True") or (b is True and a == "True")
    return bool(a == b)


def argv_disagreements(manifest: Manifest) -> list[str]:
    """How ``command.argv`` and ``config.resolved_args`` disagree, one phrase each."""
    from_argv = parse_args(manifest.command.argv)
    recorded = manifest.config.resolved_args
    found = []
    for key, value in recorded.items():
        if key not in from_argv:
            found.append(f"{key}={value!r} is recorded but not in argv")
        elif not _same(value, from_argv[key]):
            found.append(f"{key}: argv says {from_argv[key]!r}, the config {value!r}")
    found += [
        f"{key}={value!r} is in argv but not recorded"
        for key, value in from_argv.items()
        if key not in recorded
    ]
    return found


def rule_command(recorded: Manifest, current: Manifest) -> Iterator[Finding]:
    """The ``command`` rule (registered in :func:`expdna.compare.check.default_rules`)."""
    if not recorded.command.argv:
        return
    if command_in_dna(recorded):
        # The DNA is a digest, not a signature: whoever edits argv can recompute it. The
        # config it covers must then still agree with the argv words it shares with them
        # (a hook also records defaults the command never spelled out, so only
        # contradictions count here).
        clashes = [
            f"{key}: argv says {value!r}, the config {recorded.config.resolved_args[key]!r}"
            for key, value in parse_args(recorded.command.argv).items()
            if key in recorded.config.resolved_args
            and not _same(recorded.config.resolved_args[key], value)
            and str(recorded.config.resolved_args[key]) != str(value)
        ]
        if clashes:
            yield Finding(
                "command.argv",
                "FAIL",
                None,
                None,
                "does not match config.resolved_args: " + "; ".join(clashes[:_SHOWN]),
            )
            return
        yield Finding("command.argv", "PASS", None, None, "in the DNA: verified with it")
        return
    version = recorded.dna.version if recorded.dna is not None else "none"
    found = argv_disagreements(recorded)
    if found:
        more = f" (and {len(found) - _SHOWN} more)" if len(found) > _SHOWN else ""
        yield Finding(
            "command.argv",
            "FAIL",
            None,
            None,
            "does not match config.resolved_args: " + "; ".join(found[:_SHOWN]) + more,
        )
        return
    # PASS: check answers whether this machine can reproduce the run; the rerun gate on a
    # command the DNA does not cover is --trust-command (expdna.compare.rerun).
    yield Finding(
        "command.argv",
        "PASS",
        None,
        None,
        f"outside DNA version {version}; its arguments match config.resolved_args "
        "(rerun needs --trust-command)",
    )
