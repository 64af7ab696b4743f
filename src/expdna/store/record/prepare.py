"""Turning a manifest into what the store writes: blobs, a runs row, facts, metrics.

Pure: no database, no files. Everything that can be wrong with a manifest is found here,
before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from expdna.digest import hex_of
from expdna.digest.refs import ref, ref_hex
from expdna.errors import InvalidInputError, cut, quoted
from expdna.manifest.dna import (
    DNA_VERSION,
    DNA_VERSIONS,
    compute_dna,
    dna_value,
    short,
    stored_version,
)
from expdna.manifest.family import seedless_sections, setup_value
from expdna.manifest.io import first_string_path
from expdna.manifest.lineage import edge_problem
from expdna.manifest.model import Manifest
from expdna.manifest.runid import RUN_ID
from expdna.manifest.times import parse_time
from expdna.store.errors import DnaMismatchError
from expdna.store.record.factsets import FactSet, partition
from expdna.store.record.flatten import flatten
from expdna.store.record.sections import SectionMemo, assemble, split, to_json
from expdna.store.record.storeform import (
    move_patches,
    moved_config_texts,
    moved_patches,
    to_store_form,
)


@dataclass(frozen=True)
class BlobData:
    digest: str
    data: bytes
    kind: str
    #: the object's size when ``data`` is not held (a run rebuilt by ``reindex``)
    stored_size: int | None = None

    @property
    def size(self) -> int:
        return len(self.data) if self.stored_size is None else self.stored_size


@dataclass(frozen=True)
class Prepared:
    """One manifest, checked and ready to write."""

    run_id: str
    dna: str
    generated_at: datetime
    source: str | None
    #: digest of the store-form manifest (the first of ``blobs``)
    manifest_digest: str
    blobs: tuple[BlobData, ...]
    row: dict[str, Any]
    #: the shared fact sets, one per section (expdna.store.record.factsets); a section repeated
    #: across runs is one object
    fact_sets: tuple[FactSet, ...]
    #: the facts that are the run's own, a row each
    own_facts: FactSet
    metrics: dict[str, float]
    #: (relation, parent run id) from the manifest's ``lineage`` list
    lineage: tuple[tuple[str, str], ...] = ()

    @property
    def facts(self) -> frozenset[tuple[str, str]]:
        return self.own_facts.union(*self.fact_sets)


@dataclass(frozen=True)
class _Form:
    """The store form of a checked document and what the index needs from it."""

    doc: dict[str, Any]
    data: bytes
    digest: str
    patches: dict[str, bytes]
    fact_sets: tuple[FactSet, ...]
    own_facts: FactSet
    metrics: dict[str, float]
    #: the family digest (expdna.manifest.family)
    family: str
    #: the setup digest (expdna.manifest.family.setup_of)
    setup: str


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _typed_columns(doc: dict[str, Any]) -> dict[str, str | None]:
    code = doc.get("code") or {}
    commit = next(
        (
            repo["commit"]
            for repo in code.values()
            if isinstance(repo, dict) and isinstance(repo.get("commit"), str)
        ),
        None,
    )
    hardware = doc.get("hardware") or {}
    gpus = hardware.get("gpus") or []
    gpu_model = hardware.get("gpu_model")
    if gpu_model is None and gpus and isinstance(gpus[0], dict):
        gpu_model = gpus[0].get("name")
    return {
        "commit": commit,
        "algorithm": _text((doc.get("training") or {}).get("algorithm")),
        "gpu_model": _text(gpu_model),
        "driver_version": _text(hardware.get("driver_version")),
        "cuda_version": _text(hardware.get("cuda_version")),
        "nccl_version": _text(hardware.get("nccl_version")),
        "python_version": _text((doc.get("environment") or {}).get("python_version")),
    }


def _state(doc: dict[str, Any]) -> str | None:
    """``status.state`` for the ``runs.state`` column; None without a status (unknown)."""
    status = doc.get("status")
    state = status.get("state") if isinstance(status, dict) else None
    return state if isinstance(state, str) else None


def _unknown(doc: dict[str, Any]) -> str | None:
    """The sections a collector could not finish, comma-separated; None when complete."""
    unknown = doc.get("unknown")
    return (
        ",".join(sorted(str(name) for name in unknown))
        if isinstance(unknown, dict) and unknown
        else None
    )


def _check_version(stored: Any, source: str) -> None:
    if stored is not None and stored.get("version") not in DNA_VERSIONS:
        known = ", ".join(str(v) for v in DNA_VERSIONS)
        raise DnaMismatchError(
            f"{source}: DNA version {quoted(stored.get('version'))} is not one this expdna can "
            f"verify (it knows versions {known})"
        )


def _check_match(stored: Any, value: str, sections: dict[str, str], source: str) -> None:
    if stored.get("value") != value or stored.get("sections") != sections:
        raise DnaMismatchError(
            f"{source}: dna.value {short(str(stored.get('value')))} does not match the DNA "
            f"of its content ({short(value)}): the manifest was corrupted or edited"
        )


def _with_checked_dna(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """``doc`` with its DNA: computed when absent, refused when it does not match."""
    stored = doc.get("dna")
    _check_version(stored, source)
    # A manifest keeps the DNA version it was written in: an older one is verified in it.
    computed = compute_dna(doc, version=stored_version(doc))
    if stored is None:
        return {**doc, "dna": computed.model_dump(mode="python")}
    _check_match(stored, computed.value, computed.sections, source)
    return doc


def _whole(doc: dict[str, Any], source: str) -> _Form:
    """Check the DNA, build the store form and the facts from the whole document."""
    doc = _with_checked_dna(doc, source)
    form = to_store_form(doc)
    facts, metrics = flatten(form.doc)
    sets, own = partition(facts)
    version = form.doc["dna"]["version"]
    seedless = seedless_sections(form.doc, form.doc["dna"]["sections"], version=version)
    family = dna_value(seedless, version=version)
    setup = setup_value(seedless, version=version)
    return _Form(form.doc, form.data, form.digest, form.patches, sets, own, metrics, family, setup)


def _by_section(doc: dict[str, Any], source: str, memo: SectionMemo) -> _Form | None:
    """:func:`_whole`, with the work on sections seen before taken from ``memo``; None where
    only the whole-document path is exact (a ``dna_ignore`` list, an ``unknown`` section, a
    non-finite float)."""
    stored = doc.get("dna")
    _check_version(stored, source)
    if (doc.get("config") or {}).get("dna_ignore") or doc.get("unknown"):
        return None
    if stored is not None and stored.get("version") != DNA_VERSION:
        return None  # the memo works in the current version; an older one is rare
    form, patches = move_patches(doc)
    parts = split(form)
    if parts is None:
        return None
    keys = memo.keys(form, parts)
    config = memo.config_key(form, parts, keys)
    sections = memo.sections(form, keys, config)
    value = memo.value(sections)
    if stored is None:
        dna = {"version": DNA_VERSION, "value": value, "sections": sections}
        form = {**form, "dna": dna}
        parts["dna"] = to_json(dna)
    else:
        _check_match(stored, value, sections, source)
    data = assemble(form, parts)
    sets, own, metrics = memo.facts(form, keys)
    seedless = memo.seedless(form, sections, keys, config)
    family, setup = memo.value(seedless), memo.setup(seedless)
    return _Form(form, data, hex_of(data), patches, sets, own, metrics, family, setup)


def _lineage(doc: dict[str, Any], run_id: str, where: str) -> tuple[tuple[str, str], ...]:
    """The manifest's ``lineage`` list as (relation, parent) pairs; malformed is exit 2."""
    listed = doc.get("lineage")
    if listed is None:
        return ()
    if not isinstance(listed, list):
        raise InvalidInputError(f"{where}: lineage must be a list of {{relation, parent}}")
    edges = set()
    for entry in listed:
        relation = entry.get("relation") if isinstance(entry, dict) else None
        parent = entry.get("parent") if isinstance(entry, dict) else None
        problem = edge_problem(relation, parent, run_id)
        if problem is not None:
            raise InvalidInputError(f"{where}: {problem}")
        edges.add((str(relation), str(parent)))
    return tuple(sorted(edges))


def _nul_path(doc: dict[str, Any]) -> str | None:
    """The dotted path of the first key or string holding a NUL character, or None."""
    path = first_string_path(doc, lambda text: "\x00" in text)
    return None if path is None else path.replace("\x00", "\\x00")


def _refuse_nul(form: _Form, where: str) -> None:
    """A NUL character is refused on every index backend alike: PostgreSQL's text cannot
    hold one (it would fail the whole batch's transaction) and SQLite would keep it. The
    JSON of the store form writes it as ``\\u0000``, so one byte search finds it; a patch's
    text is a blob, never a fact, and may keep it."""
    if b"\\u0000" in form.data:
        path = _nul_path(form.doc)
        if path is not None:
            raise InvalidInputError(
                f"{where}: NUL character in {cut(path)}: an index cannot hold it (record the "
                "value in the escaped form, bytes:...%00)"
            )


def references(doc: dict[str, Any], *, patches: bool = False) -> dict[str, str]:
    """Digest references a caller may supply blobs for: 64 hex -> blob kind; with
    ``patches``, also the patch and config texts a stored manifest references (``reindex``)."""
    found: dict[str, str] = {}
    for text_digest in (moved_patches(doc) + moved_config_texts(doc)) if patches else ():
        found[text_digest] = "patch"  # config texts are stored as patches are
    for dataset in (doc.get("data") or {}).get("datasets") or []:
        digest = dataset.get("digest") if isinstance(dataset, dict) else None
        if isinstance(digest, str) and (hex_digest := ref_hex(digest)) is not None:
            found[hex_digest] = "listing"
    packages = (doc.get("environment") or {}).get("packages_digest")
    if isinstance(packages, str) and (hex_digest := ref_hex(packages)) is not None:
        found[hex_digest] = "packages"
    return found


def prepare(
    manifest: Manifest,
    *,
    source: str | None = None,
    attachments: Iterable[bytes] = (),
    memo: SectionMemo | None = None,
) -> Prepared:
    """Check ``manifest`` and build everything recording it writes.

    ``attachments``: the data listings and package listing the manifest references by
    digest (``data.datasets[].digest``, ``environment.packages_digest``), stored as blobs.
    ``memo``: a recorder's memo of sections seen before (the result is the same).
    """
    return prepare_doc(manifest.to_dict(), source=source, attachments=attachments, memo=memo)


def prepare_doc(
    doc: dict[str, Any],
    *,
    source: str | None = None,
    attachments: Iterable[bytes] = (),
    memo: SectionMemo | None = None,
) -> Prepared:
    """:func:`prepare` for a document as ``Manifest.to_dict()`` returns it."""
    run_id = str(doc.get("run_id"))
    where = source or f"run {cut(run_id)}"
    if RUN_ID.fullmatch(run_id) is None:
        raise InvalidInputError(
            f"{where}: run id {quoted(run_id)} is not usable (letters, digits, "
            "'._:+-', at most 128 characters)"
        )
    lineage = _lineage(doc, run_id, where)
    form = (_by_section(doc, where, memo) if memo is not None else None) or _whole(doc, where)
    _refuse_nul(form, where)
    generated_at = parse_time(str(doc.get("generated_at")), f"{where}: generated_at")
    blobs = [BlobData(form.digest, form.data, "manifest")]
    blobs += [BlobData(digest, data, "patch") for digest, data in form.patches.items()]
    refs = references(doc)
    for data in attachments:
        digest = hex_of(data)
        if digest not in refs:
            raise InvalidInputError(
                f"{where}: attached blob {ref(digest)} is not referenced by the manifest "
                "(data.datasets[].digest or environment.packages_digest)"
            )
        blobs.append(BlobData(digest, data, refs[digest]))
    dna = form.doc["dna"]
    row: dict[str, Any] = {
        "run_id": run_id,
        "dna": dna["value"],
        "dna_version": dna["version"],
        **{f"{name}_digest": digest for name, digest in dna["sections"].items()},
        "schema_version": str(doc.get("schema_version")),
        "generated_at": generated_at,
        "family": form.family,
        "setup": form.setup,
        "unknown": _unknown(doc),
        "state": _state(doc),
        **_typed_columns(doc),
    }
    return Prepared(
        run_id=run_id,
        dna=dna["value"],
        generated_at=generated_at,
        source=source,
        manifest_digest=form.digest,
        blobs=tuple(blobs),
        row=row,
        fact_sets=form.fact_sets,
        own_facts=form.own_facts,
        metrics=form.metrics,
        lineage=lineage,
    )
