"""PyTorch Lightning: ``ExpdnaCallback`` records a ``Trainer.fit`` run.

::

    from expdna.integrations.lightning import ExpdnaCallback

    trainer = Trainer(max_epochs=2, callbacks=[ExpdnaCallback(args=args)])
    trainer.fit(model, data)

At ``setup`` (stage ``fit``) it calls :func:`expdna.start` with ``start_kwargs`` and adds
the trainer's settings to the ``training`` section (``lightning``: ``max_epochs``,
``precision``, ``accumulate_grad_batches``, ``strategy``, ``devices``, ``num_nodes``; and
``gradient_accumulation_steps``) and the module (``training.model``: its class, parameter
count and ``hparams``), then :meth:`~expdna.RunHandle.add_runtime`. At
``teardown`` it pins the best checkpoint of the trainer's ``ModelCheckpoint`` (when there
is one and a store is configured) and finishes with ``trainer.callback_metrics``. The
manifest goes to ``output_dir``, by default the trainer's ``log_dir``.

Every rank runs the callback; the hook makes global rank 0 the only one that collects and
writes (under DDP the process group is initialised before ``setup``), so the run has one
manifest with every node's fingerprint. Works with the ``lightning`` package
(``lightning.pytorch``) and with the older ``pytorch_lightning``: the callback subclasses
whichever ``Callback`` is installed, ``lightning.pytorch``'s first, and the hooks it
defines are the same in both. Nothing here raises into training.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from expdna.integrations.frameworks import add_training, main_script, model_fields, plain_metrics
from expdna.integrations.hook import RunHandle, start

try:  # the current package name first; the older one has the same Callback
    from lightning.pytorch import Callback
except ImportError:  # pragma: no cover - exercised where only pytorch_lightning exists
    from pytorch_lightning import Callback  # type: ignore[assignment]

log = logging.getLogger(__name__)


def trainer_settings(trainer: Any) -> dict[str, Any]:
    """The trainer's settings that shape the run, as the ``training`` section holds them."""
    strategy = getattr(trainer, "strategy", None)
    settings = {
        "max_epochs": getattr(trainer, "max_epochs", None),
        "precision": str(getattr(trainer, "precision", None)),
        "accumulate_grad_batches": getattr(trainer, "accumulate_grad_batches", None),
        "strategy": type(strategy).__name__ if strategy is not None else None,
        "devices": getattr(trainer, "num_devices", None),
        "num_nodes": getattr(trainer, "num_nodes", None),
    }
    return {
        "lightning": {k: v for k, v in settings.items() if v is not None},
        "gradient_accumulation_steps": settings["accumulate_grad_batches"],
    }


class ExpdnaCallback(Callback):
    """Record the run ``Trainer.fit`` trains; see the module doc."""

    def __init__(self, output_dir: str | os.PathLike[str] | None = None, **start_kwargs: Any):
        super().__init__()
        self.output_dir = output_dir
        self.start_kwargs = start_kwargs
        #: The run of the last fit (kept after it ends; the next fit starts another).
        self.run: RunHandle | None = None
        self._open = False

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage != "fit" or self._open:
            return
        self._open = True
        self.run = None
        try:
            # log_dir is a broadcast under DDP: every rank asks, as Lightning requires.
            output_dir = self.output_dir if self.output_dir is not None else trainer.log_dir
            kwargs = {"caller_file": main_script(), **self.start_kwargs}
            args = kwargs.pop("args", None)
            self.run = start(args, output_dir=output_dir, **kwargs)
            if self.run is not None:
                fields = trainer_settings(trainer)
                fields["model"] = model_fields(pl_module, getattr(pl_module, "hparams", None))
                add_training(self.run, fields)
                self.run.add_runtime()
        except Exception as exc:  # the hook's promise, kept around the framework's parts
            log.warning("expdna: Lightning setup not recorded: %s: %s", type(exc).__name__, exc)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """The fit raised: the run ends ``failed`` with the exception (``interrupted`` for a
        ``KeyboardInterrupt``); teardown then finds it ended and only adds the metrics."""
        run = self.run
        if run is None or not self._open:
            return
        try:
            run.finish(error=exception)
        except Exception as exc:  # the hook's promise, kept around the framework's parts
            log.warning("expdna: Lightning failure not recorded: %s: %s", type(exc).__name__, exc)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        run = self.run
        if stage != "fit" or not self._open:
            return
        self._open = False
        if run is None:
            return
        try:
            best = getattr(trainer.checkpoint_callback, "best_model_path", None)
            if best and run.manifest is not None and run.store.configured:
                run.pin(best)
            run.finish(metrics=plain_metrics(trainer.callback_metrics))
        except Exception as exc:  # the hook's promise, kept around the framework's parts
            log.warning("expdna: Lightning run not finished: %s: %s", type(exc).__name__, exc)
