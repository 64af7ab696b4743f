"""What the Lightning and Hugging Face callbacks share: the script, the trainer's settings, metrics.

A callback is called from inside the framework, so the hook's "nearest caller outside
expdna" would be the framework's own file: the callbacks name the script that was started
(``__main__``) instead. A framework's settings join the manifest's ``training`` section
(they are the setup, so they enter the DNA), and its final metrics arrive as tensors or
numbers that the manifest takes as plain floats.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from expdna.integrations.hook import RunHandle
from expdna.manifest.dna import compute_dna
from expdna.manifest.model import Manifest

log = logging.getLogger(__name__)


def main_script() -> Path | None:
    """The file Python was started with (``python train.py``, ``torchrun train.py``)."""
    found = getattr(sys.modules.get("__main__"), "__file__", None)
    return Path(found).resolve() if found else None


def add_training(handle: RunHandle, fields: Mapping[str, Any]) -> None:
    """Merge ``fields`` into the run's ``training`` section and recompute the DNA.

    Nested mappings merge one level deep (``seeds`` keeps what the arguments gave).
    Never raises: a value the manifest refuses costs only itself, as a warning.
    """
    if handle.manifest is None:
        return
    try:
        doc = handle.manifest.to_dict()
        training = doc.setdefault("training", {})
        for name, value in fields.items():
            if value is None:
                continue
            if isinstance(value, Mapping) and isinstance(training.get(name), Mapping):
                training[name] = {**training[name], **value}
            else:
                training[name] = value
        updated = Manifest.model_validate(doc)
        updated.dna = compute_dna(updated)
        handle.manifest = updated
    except Exception as exc:  # the trainer's settings are an extra: never cost the run
        handle._warn(f"trainer settings not recorded: {type(exc).__name__}: {exc}")


def model_fields(model: Any, hparams: Any = None) -> dict[str, Any]:
    """The ``training.model`` entry of a model: its class, parameter count and dtype, the
    Hugging Face ``config.to_dict()`` and Lightning ``hparams`` where it has them. Each part
    it cannot read is left out (never raises)."""
    from expdna.integrations.args import plain

    module = type(model).__module__
    # A multiprocessing spawn child (Lightning's ddp_spawn) imports the script as
    # __mp_main__: the same class as __main__'s in a process started directly.
    module = "__main__" if module == "__mp_main__" else module
    found: dict[str, Any] = {"class": f"{module}.{type(model).__qualname__}"}
    try:
        found["parameters"] = int(sum(p.numel() for p in model.parameters()))
    except Exception as exc:  # not a torch module: the class still names it
        log.debug("no parameter count: %s", exc)
    dtype = getattr(model, "dtype", None)
    if dtype is not None:
        found["dtype"] = str(dtype)
    to_dict = getattr(getattr(model, "config", None), "to_dict", None)
    if callable(to_dict):
        try:
            config = plain(to_dict())
            if isinstance(config, dict):
                config.pop("transformers_version", None)  # the package list has it
                found["config"] = config
        except Exception as exc:  # a config that cannot be read costs only itself
            log.debug("no model config: %s", exc)
    if hparams is not None:
        try:
            found["hparams"] = plain(dict(hparams))
        except Exception as exc:
            log.debug("no hparams: %s", exc)
    return found


def plain_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Numbers as numbers: one-element tensors and numpy scalars become floats."""
    found: dict[str, Any] = {}
    for name, value in metrics.items():
        item = getattr(value, "item", None)
        if callable(item):
            try:
                value = item()
            except Exception:  # a tensor of many elements is not a final metric
                continue
        if isinstance(value, (int, float, str, bool)):
            found[str(name)] = value
    return found
