"""Work per manifest section, done once for every distinct section a recorder meets.

Recording checks each run's DNA and flattens each leaf into facts. Both are pure functions
of one top-level section (the DNA sections given an empty ``config.dna_ignore``), and most
sections repeat across runs: one environment, a handful of hardware setups, one dataset,
the code of a few commits. A section is recognised by the BLAKE3 of its JSON, and that JSON
is the store form's own: the document's bytes are assembled from its sections' JSON, so
nothing is dumped twice, and a repeated section costs a hash and a dict lookup instead of a
projection, canonical JSON and a walk. The config section names each run's output
directory, so its projections are keyed by its form with per-run argument values blanked
(:func:`expdna.manifest.dna.per_run_blanked`): projected once per setup, and without its
seeds once per seed sweep.

:func:`split` gives up (returns None) where the assembled bytes could differ from
:func:`expdna.store.record.storeform.dumps` of the whole document (a non-finite float, which that
writes as a marker string after normalising the whole document); callers then take the
whole-document path. Tests hold the two paths equal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from expdna.digest import hex_of
from expdna.manifest.canonical import canonical_bytes, make_encoder
from expdna.manifest.dna import DNA_VERSION, PROJECTIONS, config_input, per_run_blanked
from expdna.manifest.family import SETUP_SECTIONS, has_seeds, setup_value, without_seeds
from expdna.manifest.model import DNA_SECTIONS
from expdna.store.record.factsets import FactSet, split_section, strip_own
from expdna.store.record.flatten import COLUMN_KEYS, flatten

Pair = tuple[str, str]
#: Entries kept per memo; past it the memo starts again (sections unique to one run, such
#: as a config naming the run's output directory, would otherwise fill it). A fact set is a
#: few KB: this bounds the memo to ~25 MB, and a restart costs one miss per hot section.
MAX_ENTRIES = 4096
#: Top-level keys whose facts are memoised (the rest differ per run: metrics, timings).
SHARED = frozenset(DNA_SECTIONS) | {"command"}


_encode = make_encoder(sort_keys=False)


def to_json(value: Any) -> str:
    """Compact JSON as the store form writes it (no non-finite floats: ValueError)."""
    return _encode(value)


def split(doc: dict[str, Any]) -> dict[str, str] | None:
    """Each top-level value of ``doc`` as compact JSON, or None (see the module doc)."""
    try:
        return {key: to_json(value) for key, value in doc.items()}
    except ValueError:
        return None


@functools.lru_cache(maxsize=1024)
def _key_json(key: str) -> str:
    return to_json(key) + ":"


def assemble(doc: dict[str, Any], parts: dict[str, str]) -> bytes:
    """The bytes ``storeform.dumps(doc)`` writes, from the JSON of each top-level value."""
    body = ",".join(_key_json(key) + parts[key] for key in doc)
    return ("{" + body + "}").encode("utf-8")


#: Section JSON longer than this is keyed by its BLAKE3 rather than held in the memo.
MAX_KEY_CHARS = 4096


def _memo_key(text: str) -> str:
    return text if len(text) <= MAX_KEY_CHARS else hex_of(text.encode())


def _may_mention(root: str, *texts: str) -> bool:
    """Whether a value in the JSON ``texts`` may lie under the output root ``root`` (its
    text without the trailing ``/``): it would start with that text, which JSON writes as
    it is unless it holds a character JSON escapes (then: maybe)."""
    if not root or any(c in '"\\' or c < " " for c in root):
        return True
    return any(root in text for text in texts)


def _bounded(memo: dict[Any, Any]) -> dict[Any, Any]:
    if len(memo) >= MAX_ENTRIES:
        memo.clear()
    return memo


@dataclass
class SectionMemo:
    """Section digests and facts by (section, BLAKE3 of its JSON); one per recorder."""

    _digests: dict[tuple[str, str], str] = field(default_factory=dict)
    _facts: dict[tuple[str, str], tuple[FactSet, FactSet]] = field(default_factory=dict)
    _values: dict[tuple[str, ...], str] = field(default_factory=dict)
    _projections: dict[tuple[str, str], str] = field(default_factory=dict)
    _shared: dict[tuple[str, str], FactSet] = field(default_factory=dict)
    #: (config key, training key) -> seedless (config, training) digests; None: no seeds
    _seedless: dict[tuple[str, str], tuple[str, str] | None] = field(default_factory=dict)
    _setups: dict[tuple[str, ...], str] = field(default_factory=dict)
    #: the config section config_key saw last, its blanked form's memo key and that form
    _blanked: tuple[Any, str, dict[str, Any]] | None = None

    @staticmethod
    def keys(doc: dict[str, Any], parts: dict[str, str]) -> dict[str, str]:
        """Each memoised section's key: its JSON itself, or the BLAKE3 of a long one (which
        no JSON text equals); "" for an empty section."""
        return {key: _memo_key(parts[key]) if doc.get(key) else "" for key in SHARED if key in doc}

    def config_key(self, doc: dict[str, Any], parts: dict[str, str], keys: dict[str, str]) -> str:
        """The memo key of the config projections (the DNA's and the seedless one): the
        config's key and the command's, or, where the config has per-run arguments whose
        values nothing else mentions, its form with them blanked
        (:func:`expdna.manifest.dna.per_run_blanked`), shared by every run of a setup.
        The blanked form is kept for :meth:`facts` of the same document."""
        key = keys.get("config", "")
        config = doc.get("config")
        found = per_run_blanked(config) if type(config) is dict else None
        self._blanked = None
        if found is not None:
            blanked, roots = found
            text = to_json(blanked)
            self._blanked = (config, _memo_key(text), blanked)
            command = parts.get("command", "")
            if not any(_may_mention(root, text, command) for root in roots):
                key = "\x01" + _memo_key(text)  # never a JSON text's first character
        return key + "\x00" + keys.get("command", "")

    def sections(self, doc: dict[str, Any], keys: dict[str, str], config: str) -> dict[str, str]:
        """The DNA section digests of ``doc`` (whose ``config.dna_ignore`` is empty);
        ``config``: its :meth:`config_key`."""
        digests: dict[str, str] = {}
        for name in DNA_SECTIONS:
            # from version 3 the config's projection holds the command too
            key = (name, config if name == "config" else keys.get(name, ""))
            digest = self._digests.get(key)
            if digest is None:
                section = config_input(doc) if name == "config" else doc.get(name)
                digest = self._projected_digest(name, section or {})
                _bounded(self._digests)[key] = digest
            digests[name] = digest
        return digests

    def _projected_digest(self, name: str, section: Any) -> str:
        """:func:`section_digest`, memoised on the projection: sections that differ only
        in what the DNA leaves out (a run's output directory) share one canonicalisation."""
        projection = PROJECTIONS[name](section)
        return self._digest_of_projection(name, projection)

    def _digest_of_projection(self, name: str, projection: Any) -> str:
        key = (name, _memo_key(to_json(projection)))  # plain JSON: split() checked it
        digest = self._projections.get(key)
        if digest is None:
            digest = hex_of(canonical_bytes(projection, drop_none_values=True))
            _bounded(self._projections)[key] = digest
        return digest

    def seedless(
        self, doc: dict[str, Any], sections: dict[str, str], keys: dict[str, str], config: str
    ) -> dict[str, str]:
        """The section digests of ``doc`` without its seeds (expdna.manifest.family), from
        its section digests: only ``config`` and ``training`` are projected again, once per
        (config key, training) pair: the seedless projections of a seed sweep are one entry."""
        key = (config, keys.get("training", ""))
        if key in self._seedless:
            found = self._seedless[key]
        else:
            found = None
            if has_seeds(doc):
                seedless = without_seeds(doc)
                # Projected again, command and config files included (version 3 masks
                # seeds there): as the DNA's config of a document without seeds, which
                # every run of a seed sweep is.
                found = (
                    self._seedless_config(seedless),
                    self._projected_digest("training", seedless.get("training") or {}),
                )
            _bounded(self._seedless)[key] = found
        if found is None:
            return sections
        return {**sections, "config": found[0], "training": found[1]}

    def _seedless_config(self, seedless: dict[str, Any]) -> str:
        """The config digest of a seedless document, through the memo of config digests."""
        parts = {
            name: to_json(seedless[name]) for name in ("config", "command") if seedless.get(name)
        }
        keys = {name: _memo_key(text) for name, text in parts.items()}
        key = ("config", self.config_key(seedless, parts, keys))
        digest = self._digests.get(key)
        if digest is None:
            digest = self._projected_digest("config", config_input(seedless))
            _bounded(self._digests)[key] = digest
        return digest

    def value(self, sections: dict[str, str]) -> str:
        """The DNA value over section digests (compute_dna's last step)."""
        key = tuple(sections[name] for name in DNA_SECTIONS)
        found = self._values.get(key)
        if found is None:
            found = hex_of(canonical_bytes({"version": DNA_VERSION, "sections": sections}))
            _bounded(self._values)[key] = found
        return found

    def setup(self, seedless: dict[str, str]) -> str:
        """The setup digest over seedless section digests (family.setup_value)."""
        key = tuple(seedless[name] for name in SETUP_SECTIONS)
        found = self._setups.get(key)
        if found is None:
            found = setup_value(seedless)
            _bounded(self._setups)[key] = found
        return found

    def facts(
        self, doc: dict[str, Any], keys: dict[str, str]
    ) -> tuple[tuple[FactSet, ...], FactSet, dict[str, float]]:
        """``flatten(doc)`` as :func:`expdna.store.record.factsets.partition` splits it: one shared
        set per section (a repeated section's set is the same object, which writers use to
        intern it once), the run's own facts, and the numeric metrics."""
        sets: list[FactSet] = []
        own: set[Pair] = set()
        metrics: dict[str, float] = {}
        for key, value in doc.items():
            if key in COLUMN_KEYS:
                continue
            if key in keys:
                shared, mine = self._blanked_facts(value) or self._memo_facts(key, keys[key], value)
            else:
                facts, numeric = flatten({key: value})
                shared, mine = split_section(facts)
                metrics.update(numeric)
            if shared:
                sets.append(shared)
            own |= mine
        return tuple(sets), frozenset(own), metrics

    def _memo_facts(
        self, key: str, memo_key: str, value: Any, tag: str = ""
    ) -> tuple[FactSet, FactSet]:
        found = self._facts.get((tag + key, memo_key))
        if found is None:
            found = self._section_facts(key, value)
            _bounded(self._facts)[tag + key, memo_key] = found
        return found

    def _blanked_facts(self, config: Any) -> tuple[FactSet, FactSet] | None:
        """The facts of ``config``, when it is the section :meth:`config_key` blanked last:
        those of its blanked form (per-run values are None, which is no fact), memoised for
        every run of a setup, and the run's own per-run arguments flattened alone. None
        where that is not the split the whole document gets (a dotted argument name whose
        facts are not the run's own)."""
        if self._blanked is None or self._blanked[0] is not config:
            return None
        _, memo_key, blanked = self._blanked
        shared, mine = self._memo_facts("config", memo_key, blanked, tag="\x01")
        args, masked = config["resolved_args"], blanked["resolved_args"]
        extra = {name: value for name, value in args.items() if masked[name] is None}
        if not extra:
            return shared, mine
        theirs, own = split_section(flatten({"config": {"resolved_args": extra}})[0])
        if theirs:
            return None
        return shared, mine | own

    def _section_facts(self, key: str, value: Any) -> tuple[FactSet, FactSet]:
        """(shared set, own facts) of one section; the shared set memoised on the section
        without its own leaves, so a config that differs only in its output directory is
        flattened once (its own leaves alone are flattened per run)."""
        parts = strip_own(key, value)
        if parts is None:
            return split_section(flatten({key: value})[0])
        stripped, own = parts
        shared_key = (key, _memo_key(to_json(stripped)))
        shared = self._shared.get(shared_key)
        if shared is None:
            shared = frozenset(flatten({key: stripped})[0])
            _bounded(self._shared)[shared_key] = shared
        return shared, frozenset(flatten({key: own})[0]) if own else frozenset()
