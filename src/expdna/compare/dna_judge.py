"""Whether one changed leaf, made alone to manifest A, changes A's DNA (``diff``'s "(in dna)").

Only the section the leaf lies in can change (the ``command`` is part of the ``config``
projection in DNA version 3), so the judgement projects that one section, and not all of
it: the section is cut down to the path to the leaf, plus the context its projection reads
elsewhere. A's projection of that cut is set against the cut with the leaf changed; the
cut and its projection are small, so judging N leaves costs about N times one leaf
(``benchmarks/diff_bench.py``), where projecting whole documents cost N times the document.

A cut gives the same answer as the whole section because every projection
(:mod:`expdna.manifest.dna`) keeps, drops or rewrites a mapping's entries one at a time,
and turns lists of named things into sorted lists (a multiset: one item changed changes it
exactly when that item's projection changed), except where noted here:

- ``config.resolved_args``: whether an argument is per-run depends on the output roots (the
  per-run arguments' values) and on ``config_file_args``; both go into every cut. A changed
  per-run argument may move a root, which shows or hides other arguments and command
  words: it is judged on the whole ``config`` section and the command. In version 3 the
  arguments count only when ``settings_source`` says they were set in code: it goes into
  every cut of them too.
- ``config.config_files``, ``config.config_file_args`` and ``config.settings_source`` name
  what the command's words and the arguments stand for (or whether the arguments count),
  and the ``command`` is read as a whole: judged on the whole ``config`` section and the
  command.
- ``config.dna_ignore`` and ``unknown`` reach every section: judged on the whole document.

- ``environment.framework``: each framework's fields project together (the loaded
  determinism switches replace the installed ones): a framework is kept whole.

Lists by position (``hardware.gpus``) are kept whole below the point they start.
tests/unit/test_dna_judge.py checks every answer against the whole document's DNA.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from expdna.compare.keyed import Items, Row, unkeyed
from expdna.manifest.dna import (
    compute_dna,
    is_per_run_arg,
    projection_digest,
    section_projection,
)

Keys = tuple[Any, ...]
#: ``(doc, keys, value)`` -> ``doc`` with the leaf at ``keys`` set (``None``: removed).
WithLeaf = Callable[[Any, Keys, Any], Any]

#: Parts of ``config`` whose change is judged against the whole section and the command.
_WHOLE_CONFIG = frozenset({"config_files", "config_file_args", "settings_source"})
#: Mappings whose entries are kept whole (their fields project together): a framework's
#: ``loaded.determinism`` stands in for its own ``determinism``.
_WHOLE_ENTRIES = frozenset({("environment", "framework")})


def _get(doc: Any, keys: Keys) -> Any:
    for key in keys:
        if isinstance(doc, Mapping):
            doc = doc.get(key)
        elif isinstance(doc, list) and isinstance(key, int) and key < len(doc):
            doc = doc[key]
        else:
            return None
    return doc


def _cut(value: Any, keys: Keys) -> Any:
    """``value`` with each mapping on the path to ``keys`` cut to the one entry on it; a
    list (by position) or a leaf is kept whole."""
    if not keys or isinstance(value, Row) or not isinstance(value, Mapping):
        return value
    head, rest = keys[0], keys[1:]
    kept = type(value)() if isinstance(value, (Items, dict)) else {}
    if head in value:
        kept[head] = _cut(value[head], rest)
    return kept


class DnaJudge:
    """Answers "does this leaf, changed alone, change A's DNA" for the leaves of one diff.

    ``doc_a`` is A's document as ``diff`` compares it (keyed: named list items by name),
    ``dna_a`` its DNA, ``differs`` the sections whose digests differ between A and B (a
    leaf of an equal section is not in the DNA: judged no further), ``with_leaf`` how a
    leaf is set in such a document.
    """

    def __init__(
        self, doc_a: Mapping[str, Any], dna_a: str, differs: set[str], with_leaf: WithLeaf
    ) -> None:
        self.doc_a = doc_a
        self.dna_a = dna_a
        self.differs = differs
        self.with_leaf = with_leaf
        config = doc_a.get("config")
        self._config: Mapping[str, Any] = config if isinstance(config, Mapping) else {}
        args = self._config.get("resolved_args")
        # The per-run arguments: their values are the output roots every cut needs.
        self._roots: dict[str, Any] = (
            {k: v for k, v in args.items() if isinstance(k, str) and is_per_run_arg(k)}
            if isinstance(args, Mapping)
            else {}
        )
        self._base: dict[str, Any] = {}
        if self._config.get("dna_ignore") is not None:
            self._base["config"] = {"dna_ignore": self._config["dna_ignore"]}
        if doc_a.get("unknown") is not None:
            self._base["unknown"] = doc_a["unknown"]
        self._whole: dict[str, str] = {}

    def in_dna(self, keys: Keys, new: Any) -> bool:
        """Whether setting the leaf at ``keys`` to ``new`` (``None``: removing it) in A
        changes A's DNA; a leaf A lacks counts by its own value, not by the containers it
        would bring (which alone may move the DNA)."""
        section = str(keys[0])
        if keys[:2] == ("config", "dna_ignore") or section == "unknown":
            return self._judged(keys, new, self._whole_doc)
        target = "config" if section == "command" else section
        if target not in self.differs:
            return False
        cut = self._cut_for(keys)
        return self._judged(keys, new, lambda doc: self._digest(doc, target), cut)

    def _judged(self, keys: Keys, new: Any, digest: Callable[[Any], str], doc: Any = None) -> bool:
        doc = self.doc_a if doc is None else doc
        before = digest(doc)
        edited = digest(self.with_leaf(doc, keys, new))
        if edited == before:
            return False
        if _get(self.doc_a, keys) is not None:
            return True
        return edited != digest(self.with_leaf(doc, keys, None))

    def _whole_doc(self, doc: Any) -> str:
        if doc is self.doc_a:
            return self.dna_a
        return compute_dna(unkeyed(doc)).value

    @staticmethod
    def _digest(doc: Any, section: str) -> str:
        return projection_digest(section_projection(unkeyed(doc), section))

    def _cut_for(self, keys: Keys) -> dict[str, Any]:
        """The part of A a leaf's section projection reads (see the module doc)."""
        section = str(keys[0])
        cut = dict(self._base)
        config = dict(cut.get("config") or {})
        if section == "command" or (
            section == "config"
            and (
                len(keys) < 3
                or keys[1] in _WHOLE_CONFIG
                or (keys[1] == "resolved_args" and is_per_run_arg(str(keys[2])))
            )
        ):
            cut["config"] = self._config
            cut["command"] = self.doc_a.get("command")
            return cut
        if section == "config":
            part = _cut(self._config, keys[1:])
            config.update(part)
            if keys[1] == "resolved_args":
                config["resolved_args"] = {**self._roots, **part.get("resolved_args", {})}
                for context in ("config_file_args", "settings_source"):
                    if context in self._config:
                        config[context] = self._config[context]
            cut["config"] = config
            return cut
        path = keys[1:3] if keys[:2] in _WHOLE_ENTRIES else keys[1:]
        cut[section] = _cut(self.doc_a.get(section), path)
        return cut
