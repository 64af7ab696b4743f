"""Which config file of one run plays which config file's part in another.

A manifest keys its config files by path, and a path names a machine's layout: the same
``exp.yaml`` under ``/shared`` and under ``/elsewhere`` is one file in two places (the DNA
already leaves the path out). ``diff`` pairs config files by their role, the flag that
named them (``--config``), the Hydra group that chose them (``trainer``), else their short
name (``exp.yaml``), and keys both runs' files by the first run's short name, so a moved
file is equal and a changed one is named.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

#: The fields of ``config`` keyed by a config file's path.
BY_PATH = ("config_files", "config_file_details")


def _details(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    details = config.get("config_file_details")
    if not isinstance(details, Mapping):
        return {}
    return {str(p): d for p, d in details.items() if isinstance(d, Mapping)}


def _paths(config: Mapping[str, Any]) -> list[str]:
    paths = dict.fromkeys(str(p) for p in config.get("config_files") or {})
    paths.update(dict.fromkeys(_details(config)))
    return list(paths)


def short_name(config: Mapping[str, Any], path: str) -> str:
    """The file's short name (its key in ``config_values``), else its base name."""
    name = _details(config).get(path, {}).get("name")
    return name if isinstance(name, str) and name else posixpath.basename(path) or path


def _flag(config: Mapping[str, Any], path: str) -> str | None:
    source = _details(config).get(path, {}).get("source")
    return source if isinstance(source, str) and source.startswith("-") else None


def _hydra_group(config: Mapping[str, Any], path: str) -> str | None:
    """A Hydra group's choice plays the group's part (``trainer/cpu.yaml`` for
    ``trainer/gpu.yaml`` when the runs chose differently)."""
    group = _details(config).get(path, {}).get("hydra_group")
    return f"hydra group {group}" if isinstance(group, str) and group else None


def _unique(roles: Mapping[str, str | None]) -> dict[str, str]:
    """``{role: path}`` for the roles exactly one file has."""
    seen: dict[str, list[str]] = {}
    for path, role in roles.items():
        if role is not None:
            seen.setdefault(role, []).append(path)
    return {role: paths[0] for role, paths in seen.items() if len(paths) == 1}


def pair_config_files(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, str]:
    """``{path in a: path in b}``: by the same path, then flag, Hydra group, short name;
    one-to-one."""
    paths_a, paths_b = _paths(a), _paths(b)
    pairs = {p: p for p in paths_a if p in paths_b}
    for role_of in (_flag, _hydra_group, short_name):
        left = [p for p in paths_a if p not in pairs]
        free = [p for p in paths_b if p not in pairs.values()]
        in_a = _unique({p: role_of(a, p) for p in left})
        in_b = _unique({p: role_of(b, p) for p in free})
        pairs.update({path: in_b[role] for role, path in in_a.items() if role in in_b})
    return pairs


def by_role(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both documents with their config files keyed by short name (``b``'s paired files
    by the name of their partner in ``a``), each file's path kept in its details.

    Only ``config_files``' values enter the DNA, so the keys can change freely.
    """
    config_a, config_b = a.get("config") or {}, b.get("config") or {}
    if not isinstance(config_a, Mapping) or not isinstance(config_b, Mapping):
        return a, b
    pairs = pair_config_files(config_a, config_b)
    labels_a = {p: short_name(config_a, p) for p in _paths(config_a)}
    labels_b = {pb: labels_a[pa] for pa, pb in pairs.items()}
    taken = set(labels_a.values())
    for path in _paths(config_b):
        if path not in labels_b:
            name = short_name(config_b, path)
            labels_b[path] = name if name not in taken else f"{name} (b)"
    return _relabel(a, labels_a), _relabel(b, labels_b)


def _relabel(doc: dict[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    config = dict(doc.get("config") or {})
    if not labels:
        return doc
    names = {short_name(config, p): label for p, label in labels.items()}
    for field in BY_PATH:
        value = config.get(field)
        if isinstance(value, Mapping):
            config[field] = {labels.get(str(p), str(p)): v for p, v in value.items()}
    details = config.get("config_file_details")
    if isinstance(details, Mapping):
        by_label = {label: path for path, label in labels.items()}
        config["config_file_details"] = {
            label: {"path": by_label.get(label), **d} if isinstance(d, Mapping) else d
            for label, d in details.items()
        }
    values = config.get("config_values")
    if isinstance(values, Mapping):
        config["config_values"] = {names.get(str(n), str(n)): v for n, v in values.items()}
    return {**doc, "config": config}
