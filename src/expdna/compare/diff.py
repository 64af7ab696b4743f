"""``diff``: two manifests, section digests first, then every changed leaf with a severity.

Section digests are recomputed from each manifest's content (a stored ``dna`` block may be
stale or edited); the stored value is kept only to say when it disagrees.

The changes explain themselves: repositories and config files are paired by the part they
play (:mod:`.repos`, :mod:`.config_roles`), lists of named things by name (:mod:`.keyed`),
a changed config file carries its changed keys and a changed patch the files it touches
(:mod:`.patch_files`); the changes that alter the DNA come first.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from expdna.compare.config_roles import BY_PATH, by_role
from expdna.compare.dna_judge import DnaJudge
from expdna.compare.keyed import Items, Name, Row, dotted, keyed, plain
from expdna.compare.patch_files import changed_files
from expdna.compare.repos import match_repos
from expdna.manifest.dna import compute_dna, verify_dna
from expdna.manifest.model import DNA_SECTIONS, Manifest

Severity = Literal["CRITICAL", "WARN", "INFO"]
SEVERITIES: tuple[Severity, ...] = ("CRITICAL", "WARN", "INFO")

#: Top-level fields that describe the document or its making, not the run.
SKIPPED_TOP = frozenset({"run_id", "generated_at", "dna", "collection"})
#: Leaves left out: inline patch and config texts are compared through their digests
#: (and a config file's parsed values, ``config.config_values``, name the changed key).
SKIPPED_PATHS: tuple[str, ...] = (
    "code.*.patch.text",
    "config.config_file_details*.text",
    "config.config_file_details*.digest",  # repeats config.config_files
    "config.config_file_details*.seedless_digest",  # the family's view of that digest
)

#: First matching glob (``*`` spans dots) names a changed path's severity; default INFO.
SEVERITY_RULES: tuple[tuple[str, Severity], ...] = (
    ("schema_version", "INFO"),
    ("code.*.commit", "CRITICAL"),
    ("code.*.checked_out", "CRITICAL"),
    ("code.*.dirty", "CRITICAL"),
    ("code.*.patch.digest", "CRITICAL"),
    ("code.*.patch.binary_files*.digest", "CRITICAL"),
    ("hardware.gpu_model", "CRITICAL"),
    ("hardware.gpus.*.name", "CRITICAL"),
    ("hardware.driver_version", "CRITICAL"),
    ("hardware.gpus.*.vbios_version", "CRITICAL"),
    ("environment.python_*", "WARN"),
    ("environment.packages*", "WARN"),
    ("environment.packages_digest", "WARN"),
    ("environment.os", "WARN"),
    ("environment.kernel", "WARN"),
    ("environment.glibc", "WARN"),
    # Facts only the running process reads (outside the DNA in version 3): still a warning.
    ("environment.framework.*.loaded.determinism.initial_seed", "INFO"),
    ("environment.framework.*.loaded.determinism.*", "WARN"),
    ("environment.hash_randomization", "WARN"),
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
    #: What the change is made of: a config file's changed keys (``{"path", "old",
    #: "new"}``, the path inside the file), a patch's changed files (``{"path", "a", "b"}``,
    #: each side's ``{"added", "removed"}`` line counts or ``None``).
    details: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "severity": self.severity,
            "old": plain(self.old),
            "new": plain(self.new),
            "section": self.section,
            "in_dna": self.in_dna,
            "details": [plain(d) for d in self.details],
        }


@dataclass(frozen=True)
class DiffReport:
    #: Each manifest's own DNA in the current version.
    dna: tuple[str, str]
    sections: dict[str, SectionDiff]
    changes: tuple[Change, ...]
    #: One setup: the DNAs are equal once repositories and config files are paired.
    same: bool
    #: The DNA each file claims (``None`` when it has no ``dna`` block).
    stored_dna: tuple[str | None, str | None]
    #: Per side: whether the stored DNA matches the content in its own DNA version (a
    #: manifest of an older version keeps its DNA, while ``dna`` is in the current one).
    verified: tuple[bool, bool] = (True, True)

    @property
    def equal(self) -> bool:
        return self.same

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
    text = dotted(keys)
    return f"{prefix}.{text}" if prefix and text else prefix or text


class Words(list[str]):
    """A list of words, compared whole and aligned by content: an option moved or added is
    one edit, not a change of every word after it."""


#: The lists of words: the command line.
WORD_LISTS: tuple[tuple[str, str], ...] = (("command", "argv"),)


def _walk(value: Any, keys: Keys) -> Iterator[tuple[Keys, Any]]:
    # Keys as tuples: a key may hold a dot (``ruamel.yaml``, ``model.lr``), a path may not.
    if isinstance(value, (Row, Words)):
        yield keys, value  # one list-shaped item, or a command line: compared whole
    elif isinstance(value, Mapping):  # a Name key (a list item's, a config file's) stays one
        for key, child in value.items():
            yield from _walk(child, (*keys, key if isinstance(key, str) else str(key)))
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


def _rank(change: Change) -> tuple[bool, int]:
    return not change.in_dna, SEVERITIES.index(change.severity)


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
    copy = type(doc)(doc) if isinstance(doc, dict) else {}
    if rest:
        child = copy.get(str(head))
        if child is None:  # a named item under a list b alone has lands in a named list
            child = [] if isinstance(rest[0], int) else Items() if isinstance(rest[0], Name) else {}
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

    Repositories are paired across checkouts as ``check`` pairs them, config files by role;
    each change says whether, made alone to ``a``, it changes ``a``'s DNA.
    """
    plain_a, plain_b = by_role(a.to_dict(), _as_in(b.to_dict(), a, b))
    doc_a, doc_b = _named(keyed(plain_a)), _named(keyed(plain_b))
    dna_a, dna_b = compute_dna(plain_a), compute_dna(plain_b)
    # Equality is judged on the paired documents; the digests shown are each manifest's own
    # (re-keyed config files project differently, and a DNA no run has names nothing).
    own_a, own_b = compute_dna(a), compute_dna(b)
    sections: dict[str, SectionDiff] = {
        name: SectionDiff(
            equal=dna_a.sections[name] == dna_b.sections[name],
            a=own_a.sections[name],
            b=own_b.sections[name],
        )
        for name in DNA_SECTIONS
    }
    old, new = _leaves(doc_a), _leaves(doc_b)
    changed = [k for k in old if not _same(old[k], new.get(k))]
    changed += [k for k in new if k not in old]
    # An item only one side has is one change, not one per field.
    changed = list(dict.fromkeys(_item_or_leaf(k, doc_a, doc_b) for k in changed))
    equal = dna_a.value == dna_b.value

    judge = DnaJudge(
        doc_a, dna_a.value, {name for name, s in sections.items() if not s.equal}, _with_leaf
    )

    def in_dna(keys: Keys) -> bool:
        return judge.in_dna(keys, _get(doc_b, keys))

    explained = _explanations(changed, doc_a, doc_b)
    changes = []
    for keys in changed:
        if any(keys in parts for parts in explained.values()):
            continue  # shown as a detail of the change it explains
        path = _dotted(keys)
        counted = in_dna(keys)
        changes.append(
            Change(
                path=path,
                severity=_severity(path, counted, equal),
                old=_get(doc_a, keys),
                new=_get(doc_b, keys),
                section=str(keys[0]),
                in_dna=counted,
                details=_details(keys, explained.get(keys, ()), doc_a, doc_b, judge),
            )
        )
    # What changes the DNA first; then the most severe; within that, document order.
    changes.sort(key=_rank)
    return DiffReport(
        dna=(own_a.value, own_b.value),
        same=equal,
        sections=sections,
        changes=tuple(changes),
        stored_dna=(a.dna.value if a.dna else None, b.dna.value if b.dna else None),
        verified=(_verified(a), _verified(b)),
    )


#: Mappings of named things, keyed as :class:`Name` (shown ``packages[torch]``).
NAMED_MAPS: tuple[tuple[str, str], ...] = (
    *(("config", field) for field in BY_PATH),
    ("config", "config_values"),
    ("environment", "packages"),
)


def _named(doc: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    for section, field in WORD_LISTS:
        part = out.get(section)
        value = part.get(field) if isinstance(part, Mapping) else None
        if isinstance(part, Mapping) and isinstance(value, list):
            out[section] = {**part, field: Words(value)}
    for section, field in NAMED_MAPS:
        part = out.get(section)
        value = part.get(field) if isinstance(part, Mapping) else None
        if isinstance(part, Mapping) and isinstance(value, Mapping):
            out[section] = {**part, field: {Name(k): v for k, v in value.items()}}
    return out


def _get(doc: Any, keys: Keys) -> Any:
    """The value at ``keys`` (``None`` where there is none)."""
    for key in keys:
        if isinstance(doc, Mapping):
            doc = doc.get(key)
        elif isinstance(doc, list) and isinstance(key, int) and key < len(doc):
            doc = doc[key]
        else:
            return None
    return doc


def _item_or_leaf(keys: Keys, doc_a: Any, doc_b: Any) -> Keys:
    """The keys of the outermost named item on the path that one side lacks, else ``keys``."""
    for i, key in enumerate(keys):
        if isinstance(key, Name) and (_get(doc_a, keys[: i + 1]) is None) != (
            _get(doc_b, keys[: i + 1]) is None
        ):
            return keys[: i + 1]
    return keys


#: ``(digest path, explaining part)``: the changes under the explaining part are shown as
#: details of the digest change (the config file's keys that changed its digest).
_CONFIG_FILE = ("config", "config_files")
_CONFIG_VALUES = ("config", "config_values")


def _explanations(changed: list[Keys], doc_a: Any, doc_b: Any) -> dict[Keys, list[Keys]]:
    """``{config file digest change: [its changed keys' changes]}``."""
    files = {keys[2]: keys for keys in changed if len(keys) == 3 and keys[:2] == _CONFIG_FILE}
    out: dict[Keys, list[Keys]] = {}
    for keys in changed:
        if len(keys) > 2 and keys[:2] == _CONFIG_VALUES and keys[2] in files:
            out.setdefault(files[keys[2]], []).append(keys)
    return out


def _details(
    keys: Keys, parts: list[Keys] | tuple[Keys, ...], doc_a: Any, doc_b: Any, judge: DnaJudge
) -> tuple[dict[str, Any], ...]:
    if parts:
        return tuple(
            {"path": dotted(k[3:]), "old": _get(doc_a, k), "new": _get(doc_b, k)} for k in parts
        )
    if keys in WORD_LISTS:
        words = _get(doc_a, keys) or []
        edits = word_edits(words, _get(doc_b, keys) or [])
        # each edit made alone to A's words: a setting's word counts, an output path's not
        return tuple(
            {**edit, "in_dna": judge.in_dna(keys, Words(edited))} for edit, edited in edits
        )
    if keys[0] == "code" and keys[2:] == ("patch", "digest"):
        text_a = _get(doc_a, (*keys[:3], "text"))
        text_b = _get(doc_b, (*keys[:3], "text"))
        return tuple(
            changed_files(
                text_a if isinstance(text_a, str) else None,
                text_b if isinstance(text_b, str) else None,
            )
        )
    return ()


#: The most word pairs aligned one by one (after the common ends are set aside): difflib's
#: matching grows about as the cube of a run of repeated words (800 of them: 9 s), and a
#: manifest may come from anyone. Past it, the differing middle is one replacement.
MAX_ALIGNED_PAIRS = 40_000


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes from ``a`` to ``b``, bounded in cost by :data:`MAX_ALIGNED_PAIRS`."""
    from difflib import SequenceMatcher

    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if len(mid_a) * len(mid_b) <= MAX_ALIGNED_PAIRS:
        return [
            (tag, i1 + head, i2 + head, j1 + head, j2 + head)
            for tag, i1, i2, j1, j2 in SequenceMatcher(
                None, mid_a, mid_b, autojunk=False
            ).get_opcodes()
        ]
    return [("replace", head, len(a) - tail, head, len(b) - tail)]


def word_edits(a: list[str], b: list[str]) -> list[tuple[dict[str, Any], list[str]]]:
    """Where two command lines differ, as A's slices (``argv[2:2]``: inserted before A's
    word 2) with each side's words as the shell would read them (``None``: no word), each
    with A's words after that edit alone."""

    def words(part: list[str]) -> str | None:
        return shlex.join(str(w) for w in part) if part else None

    spans: list[tuple[int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        if tag == "equal":
            continue
        # A replacement of unequal length is the words replaced one for one, then the rest
        # added or removed: `runs/a` -> `runs/c --lr 0.01` is an output directory changed
        # (not in the DNA) and a setting added (in it), judged apart.
        same = min(i2 - i1, j2 - j1)
        if same:
            spans.append((i1, i1 + same, j1, j1 + same))
        if (i2 - i1, j2 - j1) != (same, same):
            spans.append((i1 + same, i2, j1 + same, j2))
    return [
        (
            {"path": f"argv[{i1}:{i2}]", "old": words(a[i1:i2]), "new": words(b[j1:j2])},
            [*a[:i1], *b[j1:j2], *a[i2:]],
        )
        for i1, i2, j1, j2 in spans
    ]


def _verified(manifest: Manifest) -> bool:
    """The stored DNA (if any) is the DNA of the content, in the stored DNA's version."""
    if manifest.dna is None:
        return True
    try:
        return verify_dna(manifest).value == manifest.dna.value
    except ValueError:  # a version this expdna does not know cannot be verified
        return False
