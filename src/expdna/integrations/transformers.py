"""Hugging Face Trainer: ``ExpdnaCallback`` records a ``Trainer.train`` run.

::

    from expdna.integrations.transformers import ExpdnaCallback

    trainer = Trainer(model=model, args=training_args, train_dataset=data,
                      callbacks=[ExpdnaCallback()])

At ``on_train_begin`` it calls :func:`expdna.start` with the ``TrainingArguments`` as the
run's resolved arguments (their ``to_dict()``; ``output_dir``, ``logging_dir``,
``run_name``, ``report_to``, ``logging_*``, ``save_*``, ``hub_*`` stay out of the DNA as
per-run values), merged over the script's own arguments (``ExpdnaCallback(args=(model_args,
data_args))``, else those parsed from ``sys.argv``), records the model (class, parameter
count, dtype, ``config.to_dict()``) as ``training.model``, and adds to the ``training`` section
the batch sizes (``micro_batch_size`` per device, ``global_batch_size`` = per device ×
gradient accumulation × world size), ``gradient_accumulation_steps``, ``learning_rate``,
the seeds (``seed``, ``data_seed``) and the precision flags (``fp16``, ``bf16``, ``tf32``);
then :meth:`~expdna.RunHandle.add_runtime`. The manifest is written into
``args.output_dir``. The arguments count as the command line's (``generate`` agrees), except
inside a Ray Tune trial, where they come from the search: there they are recorded as set in
code (``config.settings_source: "code"``) and count in the DNA. At ``on_save`` it pins the
checkpoint's weight files (``checkpoint-N/model*.safetensors``, ``pytorch_model*.bin``) when
a store is configured;
at ``on_train_end`` it finishes with the last logged value of each metric.

Every process runs the callback; the hook makes global rank 0 (the Trainer's main
process) the only one that collects and writes. Nothing here raises into training.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from expdna.integrations.args import in_tune_trial
from expdna.integrations.frameworks import add_training, main_script, model_fields, plain_metrics
from expdna.integrations.hook import RunHandle, setup_follows, start

log = logging.getLogger(__name__)

#: The weight files of a saved checkpoint (sharded or not), as Trainer names them.
WEIGHTS = ("model*.safetensors", "pytorch_model*.bin", "adapter_model*.safetensors")


def merged_args(training_args: Any, given: Any) -> dict[str, Any]:
    """The run's arguments: ``given`` (``args=``: the script's model and data dataclasses, a
    tuple of them as ``HfArgumentParser.parse_args_into_dataclasses`` returns, a namespace)
    or else the arguments parsed from ``sys.argv``, under the ``TrainingArguments``
    (which win where both name a key: they are what the Trainer runs with)."""
    from expdna.collectors.config import parse_args
    from expdna.integrations.args import resolved_args

    extra: dict[str, Any] = {}
    parts = given if isinstance(given, (tuple, list)) else [given]
    for part in parts:
        if part is None or part is training_args:
            continue
        try:
            extra.update(resolved_args(part))
        except Exception as exc:  # one part it cannot read costs only that part
            log.warning("expdna: args= part not recorded: %s: %s", type(exc).__name__, exc)
    if given is None:
        import sys

        extra = parse_args(list(getattr(sys, "argv", [])))
    return {**extra, **training_args.to_dict()}


def training_fields(args: Any) -> dict[str, Any]:
    """The ``training`` fields a ``TrainingArguments`` gives."""
    per_device = args.per_device_train_batch_size
    accumulation = args.gradient_accumulation_steps
    world = getattr(args, "world_size", 1) or 1
    seeds = {"seed": args.seed, "data_seed": args.data_seed}
    precision = {name: getattr(args, name, None) for name in ("fp16", "bf16", "tf32")}
    return {
        "micro_batch_size": per_device,
        "global_batch_size": per_device * accumulation * world,
        "gradient_accumulation_steps": accumulation,
        "learning_rate": args.learning_rate,
        "seeds": {k: v for k, v in seeds.items() if v is not None},
        "precision": {k: v for k, v in precision.items() if v is not None},
    }


class ExpdnaCallback(TrainerCallback):
    """Record the run ``Trainer.train`` trains; see the module doc.

    ``start_kwargs`` go to :func:`expdna.start` (``store=``, ``data=``, ``dna_ignore=``…);
    ``output_dir`` defaults to ``args.output_dir``.
    """

    def __init__(self, output_dir: str | Path | None = None, **start_kwargs: Any) -> None:
        self.output_dir = output_dir
        self.start_kwargs = start_kwargs
        #: The run of the last ``train()`` (kept after it ends; the next one starts another).
        self.run: RunHandle | None = None
        self.metrics: dict[str, Any] = {}
        self._open = False
        self._model: Any = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._open:
            return
        self._model = kwargs.get("model")
        self._open, self.run, self.metrics = True, None, {}
        try:
            output_dir = self.output_dir if self.output_dir is not None else args.output_dir
            kwargs = {"caller_file": main_script(), "output_dir": output_dir, **self.start_kwargs}
            # From argv (as generate reads them), unless a Ray Tune trial set them in code.
            kwargs.setdefault("settings_source", "code" if in_tune_trial() else "argv")
            with setup_follows():  # the trainer's settings join the DNA below
                self.run = start(merged_args(args, kwargs.pop("args", None)), **kwargs)
            if self.run is not None:
                fields = training_fields(args)
                model = self._model
                if model is not None:
                    fields["model"] = model_fields(model)
                add_training(self.run, fields)
                self.run.add_runtime()
        except Exception as exc:  # the hook's promise, kept around the framework's parts
            log.warning("expdna: Trainer run not recorded: %s: %s", type(exc).__name__, exc)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        run = self.run
        if run is None or run.manifest is None or not run.store.configured:
            return
        try:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            for pattern in WEIGHTS:
                for weights in sorted(folder.glob(pattern)):
                    run.pin(weights, name=f"{folder.name}/{weights.name}")
        except Exception as exc:  # the hook's promise, kept around the framework's parts
            log.warning("expdna: checkpoint not pinned: %s: %s", type(exc).__name__, exc)

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        self.metrics.update(plain_metrics(logs or {}))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        run, self._open = self.run, False
        if run is None:
            return
        try:
            run.finish(metrics=self.metrics)
        except Exception as exc:  # the hook's promise, kept around the framework's parts
            log.warning("expdna: Trainer run not finished: %s: %s", type(exc).__name__, exc)
