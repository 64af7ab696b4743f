"""Compare: check (manifest vs live environment), diff (two runs), rerun (script or run).

Pure functions over :class:`~expdna.manifest.model.Manifest` returning plain dataclasses;
only :func:`check_live` and :func:`rerun_confirmed` touch the machine.
"""

from expdna.compare.check import (
    CheckReport,
    CheckResult,
    RuleSet,
    check_live,
    check_manifest,
    collect_live,
    default_rules,
)
from expdna.compare.diff import Change, DiffReport, SectionDiff, diff_manifests
from expdna.compare.rerun import (
    LaunchError,
    RedactedInput,
    redacted_inputs,
    refusal_reasons,
    render_script,
    rerun_confirmed,
    run_recorded,
)

__all__ = [
    "Change",
    "CheckReport",
    "CheckResult",
    "DiffReport",
    "LaunchError",
    "RedactedInput",
    "RuleSet",
    "SectionDiff",
    "check_live",
    "check_manifest",
    "collect_live",
    "default_rules",
    "diff_manifests",
    "redacted_inputs",
    "refusal_reasons",
    "render_script",
    "rerun_confirmed",
    "run_recorded",
]
