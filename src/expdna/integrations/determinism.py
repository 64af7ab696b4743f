"""The determinism switches read again at ``finish()``: a change since ``start()`` is said.

The DNA keeps what ``start()`` read (``environment.framework.torch.loaded.determinism``);
a script that turns TF32 on after ``start()`` (nanoGPT sets ``allow_tf32`` after parsing its
configuration) trained with another setting than recorded, so ``finish()`` names each
switch that moved, in the manifest's ``collection.determinism_changed`` and as a warning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from expdna.collectors.framework import _determinism, loaded_torch

#: Switches that are not settings (a random seed of an unseeded process).
_NOT_SETTINGS = frozenset({"initial_seed"})


def changed_switches(recorded: Mapping[str, Any]) -> list[str]:
    """``name: before -> now`` for each switch that differs from ``recorded`` (the
    manifest's ``environment`` section); empty when torch is not loaded."""
    torch = loaded_torch()
    framework = recorded.get("framework")
    entry = framework.get("torch") if isinstance(framework, Mapping) else None
    loaded = entry.get("loaded") if isinstance(entry, Mapping) else None
    before = loaded.get("determinism") if isinstance(loaded, Mapping) else None
    if torch is None or not isinstance(before, Mapping):
        return []
    now = _determinism(torch, os.environ)
    return [
        f"{name}: {before.get(name)!r} -> {value!r}"
        for name, value in now.items()
        if name not in _NOT_SETTINGS and name in before and before.get(name) != value
    ]
