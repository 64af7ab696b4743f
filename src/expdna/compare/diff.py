"""``diff``: two manifests, section digests first, then every changed leaf with a severity.

Section digests are recomputed from each manifest's content (a stored ``dna`` block may be
stale or edited); the stored value is kept only to say when it disagrees.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from expdna.compare.repos import match_repos
from expdna.manifest.dna import compute_dna, verify_dna
from expdna.manifest.model import DNA_SECTIONS, Manifest

Severity = Literal["CRITICAL", "WARN", "INFO"]
SEVERITIES: tuple[Severity, ...] = ("CRITICAL", "WARN", "INFO")

#: Top-level fields that describe the document or its making, not the run.
SKIPPED_TOP = frozenset({"run_id", "generated_at", "dna", "collection"})
#: Leaves left out: inline patch and config texts are compared through their digests
#: (and a config file's parsed values, ``config.config_values``, name the changed key).
SKIPPED_PATHS: tuple[str, ...] = ("code.*.patch.text", "config.config_file_details.*.text")

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
    #: This change alone changes the DNA (the field is part of the section's identity).
    in_dna: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "severity": self.severity,
            "old": self.old,
            "new": self.new,
            "section": self.section,
            "in_dna": self.in_dna,
        }


@dataclass(frozen=True)
class DiffReport:
    dna: tuple[str, str]
    sections: dict[str, SectionDiff]
    changes: tuple[Change, ...]
    #: The DNA each file claims (``None`` when it has no ``dna`` block).
    stored_dna: tuple[str | None, str | None]
    #: Per side: whether the stored DNA matches the content in its own DNA version (a
    #: manifest of an older version keeps its DNA, while ``dna`` is in the current one).
    verified: tuple[bool, bool] = (True, True)

    @property
    def equal(self) -> bool:
        return self.dna[0] == self.dna[1]

    def stale(self) -> tuple[bool, bool]:
        """Per side: the stored DNA exists and disagrees with its content."""
        a, b = (
            stored is not None and not verified
            for stored, verified in zip(self.stored_dna, self.verified, strict=True)
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
    for keys, leaf in _walk(value, ()):
        yield _dotted(keys, prefix), leaf


Keys = tuple[str | int, ...]


def _dotted(keys: Keys, prefix: str = "") -> str:
    parts = [prefix] if prefix else []
    return ".".join(parts + [str(k) for k in keys])


def _walk(value: Any, keys: Keys) -> Iterator[tuple[Keys, Any]]:
    # Keys as tuples: a key may hold a dot (``ruamel.yaml``, ``model.lr``), a path may not.
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from _walk(child, (*keys, str(key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _walk(child, (*keys, i))
    elif value is not None:
        yield keys, value


def _leaves(doc: Mapping[str, Any]) -> dict[Keys, Any]:
    compared = {k: v for k, v in doc.items() if k not in SKIPPED_TOP}
    return {
        keys: leaf
        for keys, leaf in _walk(compared, ())
        if not any(fnmatchcase(_dotted(keys), p) for p in SKIPPED_PATHS)
    }


def _same(old: Any, new: Any) -> bool:
    # 1 == 1.0 == True in Python; in a manifest they are different facts.
    return type(old) is type(new) and old == new


def _rank(change: Change) -> int:
    return SEVERITIES.index(change.severity)


def _as_in(doc_b: dict[str, Any], a: Manifest, b: Manifest) -> dict[str, Any]:
    """``b``'s document with its repositories named as the ones of ``a`` they stand for."""
    pairs = match_repos(a.code, b.code)
    renamed = {b_name: a_name for a_name, b_name in pairs.items()}
    taken = set(renamed.values())
    code = {}
    for name, repo in (doc_b.get("code") or {}).items():
        if name in renamed:
            code[renamed[name]] = repo
        elif name not in taken:
            code[name] = repo
        else:  # an unpaired repository whose name a paired one took
            code[f"{name} (b)"] = repo
    return {**doc_b, "code": code}


def _with_leaf(doc: Any, keys: Keys, value: Any) -> Any:
    """A copy of ``doc`` with the leaf at ``keys`` set to ``value`` (``None``: removed).

    Only the containers on the path are copied. A list index past the end appends.
    """
    if not keys:
        return value
    head, rest = keys[0], keys[1:]
    if isinstance(doc, list):
        items = list(doc)
        index = int(head)
        child = items[index] if index < len(items) else {}
        if not rest and value is None:
            if index < len(items):
                del items[index]  # an item b does not have
        elif index < len(items):
            items[index] = _with_leaf(child, rest, value) if rest else value
        else:
            items.append(_with_leaf(child, rest, value) if rest else value)
        return items
    copy = dict(doc) if isinstance(doc, Mapping) else {}
    if rest:
        child = copy.get(str(head))
        if child is None:
            child = [] if isinstance(rest[0], int) else {}
        copy[str(head)] = _with_leaf(child, rest, value)
    elif value is None:
        copy.pop(str(head), None)
    else:
        copy[str(head)] = value
    return copy


def _severity(path: str, in_dna: bool, dnas_equal: bool) -> Severity:
    """The rule's severity, kept consistent with the DNA.

    A change that alters the DNA is never INFO; when the DNAs are equal (or this change
    alone leaves the DNA as it was) it is never CRITICAL.
    """
    severity = severity_of(path)
    if in_dna and severity == "INFO":
        return "WARN"
    if (dnas_equal or not in_dna) and severity == "CRITICAL":
        return "WARN"
    return severity


def diff_manifests(a: Manifest, b: Manifest) -> DiffReport:
    """Section digests and changed leaves from ``a`` to ``b``; pure, no I/O.

    Repositories are paired across checkouts as ``check`` pairs them; each change says
    whether, made alone to ``a``, it changes ``a``'s DNA.
    """
    doc_a = a.to_dict()
    doc_b = _as_in(b.to_dict(), a, b)
    dna_a, dna_b = compute_dna(doc_a), compute_dna(doc_b)
    sections: dict[str, SectionDiff] = {
        name: SectionDiff(
            equal=dna_a.sections[name] == dna_b.sections[name],
            a=dna_a.sections[name],
            b=dna_b.sections[name],
        )
        for name in DNA_SECTIONS
    }
    old, new = _leaves(doc_a), _leaves(doc_b)
    changed = [k for k in old if not _same(old[k], new.get(k))]
    changed += [k for k in new if k not in old]
    per_section: dict[str, int] = {}
    for keys in changed:
        per_section[str(keys[0])] = per_section.get(str(keys[0]), 0) + 1
    equal = dna_a.value == dna_b.value

    def in_dna(keys: Keys) -> bool:
        section = str(keys[0])
        if keys[:2] == ("config", "dna_ignore") or section == "unknown":
            pass  # what the DNA leaves out, or which sections are unknown: any section
        elif section not in sections or sections[section].equal:
            return False
        elif per_section[section] == 1:
            return True  # the only change in a section whose digest changed
        edited = _with_leaf(doc_a, keys, new.get(keys))
        return compute_dna(edited).value != dna_a.value

    changes = []
    for keys in changed:
        path = _dotted(keys)
        counted = in_dna(keys)
        changes.append(
            Change(
                path=path,
                severity=_severity(path, counted, equal),
                old=old.get(keys),
                new=new.get(keys),
                section=str(keys[0]),
                in_dna=counted,
            )
        )
    # Most severe first; within a severity, document order.
    changes.sort(key=_rank)
    return DiffReport(
        dna=(dna_a.value, dna_b.value),
        sections=sections,
        changes=tuple(changes),
        stored_dna=(a.dna.value if a.dna else None, b.dna.value if b.dna else None),
        verified=(_verified(a), _verified(b)),
    )


def _verified(manifest: Manifest) -> bool:
    """The stored DNA (if any) is the DNA of the content, in the stored DNA's version."""
    if manifest.dna is None:
        return True
    try:
        return verify_dna(manifest).value == manifest.dna.value
    except ValueError:  # a version this expdna does not know cannot be verified
        return False
