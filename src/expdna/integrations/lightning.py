"""PyTorch Lightning: ``ExpdnaCallback`` records a ``Trainer.fit`` run.

::

    from expdna.integrations.lightning import ExpdnaCallback

    trainer = Trainer(max_epochs=2, callbacks=[ExpdnaCallback(args=args)])
    trainer.fit(model, data)

At ``setup`` (stage ``fit``) it calls :func:`expdna.start` with ``start_kwargs`` and adds
the trainer's settings to the ``training`` section (``lightning``: ``max_epochs``,
``precision``, ``accumulate_grad_batches``, ``strategy``, ``devices``, ``num_nodes``; and
``gradient_accumulation_steps``) and the module (``training.model``: its class, parameter
count and ``hparams``; the global batch as per-device batch × world × the trainer's
``accumulate_grad_batches``), then :meth:`~expdna.RunHandle.add_runtime`; the trainer's view of
the ranks (local rank, devices per node, node rank, nodes) stands in for the launcher
variables ``ddp_spawn`` does not set, so the run's ``runtime`` is the one torchrun gives. At
``teardown`` it pins the best checkpoint of the trainer's ``ModelCheckpoint`` (when there
is one and a store is configured) and finishes with ``trainer.callback_metrics``. The
manifest goes to ``output_dir``, by default the trainer's ``log_dir``. Inside a Ray Tune
trial the module's ``hparams`` come from the search: they are recorded over ``args`` as
settings set in code (``config.settings_source: "code"``), which count in the DNA.

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

from expdna.integrations.args import in_tune_trial
from expdna.integrations.frameworks import add_training, main_script, model_fields, plain_metrics
from expdna.integrations.hook import RunHandle, setup_follows, start

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


def batch_fields(
    run: RunHandle, fields: dict[str, Any], trainer: Any, hparams: Any
) -> dict[str, int]:
    """The batch sizes with the trainer's accumulation and world: the micro batch from the
    arguments (else the module's ``hparams.batch_size``), the global one derived as
    ``expdna.collectors.training.global_batch`` does, unless the arguments gave it."""
    from expdna.collectors.training import global_batch

    training = run.manifest.to_dict().get("training") or {} if run.manifest else {}
    world = getattr(trainer, "world_size", None)
    world = world if isinstance(world, int) and world > 0 else 1
    rest = {k: v for k, v in training.items() if k != "global_batch_size"}
    recorded = training.get("global_batch_size")
    if recorded is not None and recorded != global_batch(rest, world):
        return {}  # given by an argument: kept
    found: dict[str, int] = {}
    micro = rest.get("micro_batch_size")
    if micro is None:
        candidate = getattr(hparams, "get", lambda _: None)("batch_size")
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            found["micro_batch_size"] = micro = candidate
    steps = fields.get("gradient_accumulation_steps") or rest.get("gradient_accumulation_steps")
    derived = global_batch(
        {"micro_batch_size": micro, "gradient_accumulation_steps": steps or 1}, world
    )
    if derived is not None:
        found["global_batch_size"] = derived
    return found


def tune_settings(args: Any, hparams: Any) -> dict[str, Any]:
    """A Ray Tune trial's settings: the module's ``hparams`` over ``args`` (when given)."""
    from expdna.integrations.args import UnsupportedArgs, plain, resolved_args

    settings: dict[str, Any] = {}
    if args is not None:
        try:
            settings.update(resolved_args(args))
        except UnsupportedArgs as exc:
            log.warning("expdna: args= not recorded: %s", exc)
    values = plain(hparams) if hparams is not None else None
    if isinstance(values, dict):
        settings.update(values)
    return settings


def trainer_ranks(trainer: Any) -> dict[str, int]:
    """This process's place in the job as the trainer knows it: under ``ddp_spawn`` no
    launcher variable says how many ranks share a node, so the hook is told."""
    found = {
        "local_rank": getattr(trainer, "local_rank", None),
        "local_world_size": getattr(trainer, "num_devices", None),
        "node_rank": getattr(trainer, "node_rank", None),
        "node_count": getattr(trainer, "num_nodes", None),
    }
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


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
            if in_tune_trial():  # the search set the module's hparams: they count
                args = tune_settings(args, getattr(pl_module, "hparams", None))
                kwargs.setdefault("settings_source", "code")
            kwargs.setdefault("ranks", trainer_ranks(trainer))
            with setup_follows():  # the trainer's settings join the DNA below
                self.run = start(args, output_dir=output_dir, **kwargs)
            if self.run is not None:
                fields = trainer_settings(trainer)
                hparams = getattr(pl_module, "hparams", None)
                fields["model"] = model_fields(pl_module, hparams)
                fields.update(batch_fields(self.run, fields, trainer, hparams))
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
