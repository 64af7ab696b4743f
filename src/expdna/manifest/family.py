"""The family digest: the DNA of a manifest with every seed projected out.

Runs of one setup that differ only in their seeds share a family digest ("N seeds, one
setup"). The seeds are the resolved arguments named ``seed``, ``random_seed`` or ``*_seed``
(any case, ``-`` read as ``_``, leading ``_`` ignored) and ``training.seeds``; in version 3
also seed arguments in ``command.argv`` (with their values) and seed keys inside parsed
config files. A family
digest is computed in a DNA version, like the DNA it belongs to. Ignoring a seed argument in
``dna_ignore`` also ignores the training field derived from it
(:func:`with_derived_seed_ignores`).

The setup digest is narrower: the seedless digests of the sections that say what was run
(:data:`SETUP_SECTIONS`: code, config, training, data) and nothing of where it ran, so runs
of one experiment on machines with another VBIOS, driver or package set share it
(``expdna explain --same-setup``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from expdna.digest import hex_of
from expdna.manifest.canonical import canonical_bytes
from expdna.manifest.command_identity import masked_args
from expdna.manifest.dna import (
    DNA_VERSION,
    arg_name,
    compute_dna,
    config_input,
    dna_value,
    section_digest,
)
from expdna.manifest.model import Manifest

#: The DNA sections a setup digest covers: what was run, not where (hardware, environment
#: and runtime are free to vary).
SETUP_SECTIONS = ("code", "config", "training", "data")

#: Resolved-arg names (lowercase, "-" read as "_") that are seeds; the training collector
#: records the same under ``training.seeds`` (``seed`` and ``random_seed`` as ``seed``).
_SEED_NAMES = frozenset({"seed", "random_seed"})
_SEED_SUFFIX = "_seed"


@functools.lru_cache(maxsize=4096)
def is_seed_arg(key: str, version: int = DNA_VERSION) -> bool:
    """A resolved-arg name that names a seed: ``seed``, ``random_seed``, ``*_seed``."""
    name = arg_name(key, version).lstrip("_")
    return name in _SEED_NAMES or name.endswith(_SEED_SUFFIX)


def seed_field(key: str) -> str | None:
    """The ``training.seeds`` field a seed argument is recorded as, else None."""
    if not is_seed_arg(key):
        return None
    name = arg_name(key).lstrip("_")
    return "seed" if name in _SEED_NAMES else name


_RESOLVED_ARG_GLOB = "config.resolved_args."


def with_derived_seed_ignores(globs: Iterable[str]) -> list[str]:
    """``globs`` plus, for each that names a resolved seed argument exactly, the training
    field derived from it: ignoring ``config.resolved_args.seed`` also ignores
    ``training.seeds.seed``, so the seed is pooled whichever section records it."""
    result = list(dict.fromkeys(globs))
    for glob in list(result):
        if not glob.startswith(_RESOLVED_ARG_GLOB):
            continue
        name = glob[len(_RESOLVED_ARG_GLOB) :]
        field = seed_field(name) if name and not any(c in name for c in "*?[") else None
        derived = f"training.seeds.{field}" if field else None
        if derived and derived not in result:
            result.append(derived)
    return result


def without_seeds(doc: Mapping[str, Any], *, version: int = DNA_VERSION) -> dict[str, Any]:
    """The document with every seed left out: resolved seed arguments are dropped and
    ``training.seeds`` (where present) is emptied. In version 3 also: seed arguments and
    seed overrides leave ``command.argv`` with their values, and a config file holding
    seed keys counts by its ``seedless_digest`` (its parsed values without them)."""
    config = dict(doc.get("config") or {})
    args = config.get("resolved_args") or {}
    config["resolved_args"] = {k: v for k, v in args.items() if not is_seed_arg(str(k), version)}
    training = dict(doc.get("training") or {})
    if "seeds" in training:
        training["seeds"] = {}  # as a run that recorded no seed
    seedless = {**doc, "config": config, "training": training}
    if version >= 3:
        config["config_files"] = {
            path: _seedless_digest(config, path) or digest
            for path, digest in (config.get("config_files") or {}).items()
        }
        command = doc.get("command")
        argv = command.get("argv") if isinstance(command, Mapping) else None
        if isinstance(argv, list) and all(isinstance(word, str) for word in argv):
            seedless["command"] = {**command, "argv": _without_seed_words(argv, version)}  # type: ignore[dict-item]
    return seedless


def _without_seed_words(argv: list[str], version: int) -> list[str]:
    """``argv`` without its seed options and their values (``--seed 1``, ``--data-seed=7``)
    and without its seed overrides (``seed=42``, ``+model.init_seed=3``), as the resolved
    seed arguments are dropped, so runs that differ in one more seed are still one family."""
    return masked_args(argv, lambda key, _: bool(key) and is_seed_arg(key, version), hydra=False)


def _seedless_digest(config: Mapping[str, Any], path: str) -> str | None:
    details = config.get("config_file_details")
    entry = details.get(path) if isinstance(details, Mapping) else None
    found = entry.get("seedless_digest") if isinstance(entry, Mapping) else None
    return found if isinstance(found, str) else None


def has_seeds(doc: Mapping[str, Any], *, version: int = DNA_VERSION) -> bool:
    """Whether the document records any seed (else its family digest is its DNA)."""
    if (doc.get("training") or {}).get("seeds"):
        return True
    config = doc.get("config") or {}
    args = config.get("resolved_args") or {}
    if any(is_seed_arg(str(k), version) for k in args):
        return True
    if version < 3:
        return False
    if any(_seedless_digest(config, path) for path in config.get("config_files") or {}):
        return True
    return without_seeds(doc, version=version).get("command") != doc.get("command")


def seedless_sections(
    manifest: Manifest | Mapping[str, Any],
    sections: Mapping[str, str] | None = None,
    *,
    version: int = DNA_VERSION,
) -> dict[str, str]:
    """The DNA section digests of the manifest with every seed projected out.

    ``sections``: the document's DNA section digests in ``version`` when known, so only
    ``config`` and ``training`` are projected again (exact for a document without
    ``dna_ignore`` or ``unknown``).
    """
    doc = manifest.to_dict() if isinstance(manifest, Manifest) else manifest
    seedless = without_seeds(doc, version=version)
    if sections is None or (doc.get("config") or {}).get("dna_ignore") or doc.get("unknown"):
        return dict(compute_dna(seedless, version=version).sections)
    if not has_seeds(doc, version=version):
        return dict(sections)
    redone = {
        "config": section_digest("config", config_input(seedless, version), version=version),
        "training": section_digest("training", seedless.get("training") or {}, version=version),
    }
    return {**sections, **redone}


def family_of(
    manifest: Manifest | Mapping[str, Any],
    sections: Mapping[str, str] | None = None,
    *,
    version: int = DNA_VERSION,
) -> str:
    """The family digest: the DNA of the manifest with every seed projected out.

    Runs of one setup that differ only in their seeds share it ("N seeds, one setup"); a
    run without seeds has a family digest equal to its DNA. ``sections`` as for
    :func:`seedless_sections`.
    """
    return dna_value(seedless_sections(manifest, sections, version=version), version=version)


def setup_value(seedless: Mapping[str, str], *, version: int = DNA_VERSION) -> str:
    """The setup digest over seedless section digests: the BLAKE3 of
    ``{"version": N, "setup": {code, config, training, data}}`` (never equal to a DNA,
    whose object says ``sections``)."""
    setup = {name: seedless[name] for name in SETUP_SECTIONS}
    return hex_of(canonical_bytes({"version": version, "setup": setup}))


def setup_of(
    manifest: Manifest | Mapping[str, Any],
    sections: Mapping[str, str] | None = None,
    *,
    version: int = DNA_VERSION,
) -> str:
    """The setup digest: code, config, training and data with seeds pooled, hardware,
    environment and runtime left out (module doc). ``sections`` as for
    :func:`seedless_sections`."""
    return setup_value(seedless_sections(manifest, sections, version=version), version=version)
