"""``diff``: two manifests, section digests first, then every changed leaf with a severity.

Section digests are recomputed from each manifest's content (a stored ``dna`` block may be
stale or edited); the stored value is kept only to say when it disagrees.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from expdna.manifest.dna import compute_dna
from expdna.manifest.model import DNA_SECTIONS, Manifest

Severity = Literal["CRITICAL", "WARN", "INFO"]
SEVERITIES: tuple[Severity, ...] = ("CRITICAL", "WARN", "INFO")

#: Top-level fields that describe the document or its making, not the run.
SKIPPED_TOP = frozenset({"run_id", "generated_at", "dna", "collection"})
#: Leaves left out: the inline patch is compared through its digest.
SKIPPED_PATHS: tuple[str, ...] = ("code.*.patch.text",)

#: First matching glob (``*`` spans dots) names a changed path's severity; default INFO.
SEVERITY_RULES: tuple[tuple[str, Severity], ...] = (
    ("schema_version", "INFO"),
    ("code.*.commit", "CRITICAL"),
    ("code.*.checked_out", "CRITICAL"),
    ("code.*.dirty", "CRITICAL"),
    ("code.*.patch.digest", "CRITICAL"),
    ("code.*.patch.binary_files.*.digest", "CRITICAL"),
    ("hardware.gpu_model", "CRITICAL"),
    ("hardware.gpus.*.name", "CRITICAL"),
    ("hardware.driver_version", "CRITICAL"),
    ("hardware.gpus.*.vbios_version", "CRITICAL"),
    ("environment.python_*", "WARN"),
    ("environment.packages.*", "WARN"),
    ("environment.packages_digest", "WARN"),
    ("environment.os", "WARN"),
    ("environment.kernel", "WARN"),
    ("environment.glibc", "WARN"),
    ("hardware.cuda*", "WARN"),
    ("hardware.nccl*", "WARN"),
    ("hardware.cudnn*", "WARN"),
    ("hardware.cpu_microcode", "WARN"),
    ("*_version", "WARN"),
)


@dataclass(frozen=True)
class SectionDiff:
    equal: bool
    a: str
    b: str

    def to_dict(self) -> dict[str, Any]:
        return {"equal": self.equal, "a": self.a, "b": self.b}


@dataclass(frozen=True)
class Change:
    path: str
    severity: Severity
    old: Any
    new: Any
    section: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "severity": self.severity,
            "old": self.old,
            "new": self.new,
            "section": self.section,
        }


@dataclass(frozen=True)
class DiffReport:
    dna: tuple[str, str]
    sections: dict[str, SectionDiff]
    changes: tuple[Change, ...]
    #: The DNA each file claims (``None`` when it has no ``dna`` block).
    stored_dna: tuple[str | None, str | None]

    @property
    def equal(self) -> bool:
        return self.dna[0] == self.dna[1]

    def stale(self) -> tuple[bool, bool]:
        """Per side: the stored DNA exists and disagrees with the recomputed one."""
        a, b = (
            stored is not None and stored != actual
            for stored, actual in zip(self.stored_dna, self.dna, strict=True)
        )
        return a, b

    def to_dict(self) -> dict[str, Any]:
        return {
            "equal": self.equal,
            "dna": list(self.dna),
            "sections": {name: s.to_dict() for name, s in self.sections.items()},
            "changes": [c.to_dict() for c in self.changes],
        }


def severity_of(path: str) -> Severity:
    return next((sev for pattern, sev in SEVERITY_RULES if fnmatchcase(path, pattern)), "INFO")


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted.path, leaf)`` pairs; list items by index; ``None`` leaves are left out.

    ``null`` and absent are one fact (as in the DNA), so a field missing on one side and
    ``null`` on the other is not a change. Empty containers have no leaves.
    """
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from flatten(child, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from flatten(child, f"{prefix}.{i}" if prefix else str(i))
    elif value is not None:
        yield prefix, value


def _leaves(manifest: Manifest) -> dict[str, Any]:
    doc = {k: v for k, v in manifest.to_dict().items() if k not in SKIPPED_TOP}
    return {
        path: leaf
        for path, leaf in flatten(doc)
        if not any(fnmatchcase(path, p) for p in SKIPPED_PATHS)
    }


def _same(old: Any, new: Any) -> bool:
    # 1 == 1.0 == True in Python; in a manifest they are different facts.
    return type(old) is type(new) and old == new


def _rank(change: Change) -> int:
    return SEVERITIES.index(change.severity)


def diff_manifests(a: Manifest, b: Manifest) -> DiffReport:
    """Section digests and changed leaves from ``a`` to ``b``; pure, no I/O."""
    dna_a, dna_b = compute_dna(a), compute_dna(b)
    sections: dict[str, SectionDiff] = {
        name: SectionDiff(
            equal=dna_a.sections[name] == dna_b.sections[name],
            a=dna_a.sections[name],
            b=dna_b.sections[name],
        )
        for name in DNA_SECTIONS
    }
    old, new = _leaves(a), _leaves(b)
    paths = list(old) + [p for p in new if p not in old]
    changes = [
        Change(
            path=path,
            severity=severity_of(path),
            old=old.get(path),
            new=new.get(path),
            section=path.split(".", 1)[0],
        )
        for path in paths
        if not _same(old.get(path), new.get(path))
    ]
    # Most severe first; within a severity, document order.
    changes.sort(key=_rank)
    return DiffReport(
        dna=(dna_a.value, dna_b.value),
        sections=sections,
        changes=tuple(changes),
        stored_dna=(a.dna.value if a.dna else None, b.dna.value if b.dna else None),
    )
