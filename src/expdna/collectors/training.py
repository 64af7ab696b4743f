"""The training setup, read from the resolved arguments through a table of common names.

Each manifest field is filled from the first argument name in its row that the command
line gives (names compared in lower case, ``-`` read as ``_``, as
:func:`expdna.collectors.config.parse_args` writes them). An argument given several times
counts with its last value, as argparse does.

===============================  =============================================================
manifest field                   argument names, in priority order
===============================  =============================================================
``algorithm``                    ``algorithm``, ``algo``
``parallel_topology.tensor``     ``tensor_model_parallel_size``, ``tensor_parallel_size``,
                                 ``tp_size``, ``tp``
``parallel_topology.pipeline``   ``pipeline_model_parallel_size``, ``pipeline_parallel_size``,
                                 ``pp_size``, ``pp``
``parallel_topology.context``    ``context_parallel_size``, ``cp_size``, ``cp``
``parallel_topology.expert``     ``expert_model_parallel_size``, ``expert_parallel_size``,
                                 ``ep_size``, ``ep``
``parallel_topology.data``       ``data_parallel_size``, ``dp_size``, ``dp``
``global_batch_size``            ``global_batch_size``, ``train_batch_size`` (DeepSpeed); else
                                 derived (below)
``micro_batch_size``             ``micro_batch_size``, ``train_micro_batch_size_per_gpu``
                                 (DeepSpeed), ``per_device_train_batch_size`` (HF Trainer),
                                 ``micro_batch_size_per_gpu``, ``batch_size``
``gradient_accumulation_steps``  ``gradient_accumulation_steps``, ``accumulate_grad_batches``
                                 (Lightning), ``grad_accum_steps``
``seeds.seed``                   ``seed``, ``random_seed``
``seeds.data_seed``              ``data_seed`` (HF Trainer)
``precision``                    ``precision`` (Lightning), ``mixed_precision`` (accelerate),
                                 ``amp_dtype``, ``dtype`` (nanoGPT); else ``bf16``/``fp16``
                                 when set true (HF Trainer, DeepSpeed's ``bf16.enabled``)
===============================  =============================================================

Besides argv, the values of the config files the run reads
(:mod:`expdna.collectors.config_files`) and nested values of the resolved arguments (a
Hydra config) count, by their last key (``optimizer.seed`` is ``seed``; of two equal names
in one source the shallower wins, then the first). Precedence, lowest first: config files
in argv order (a later file overrides an earlier one, as nanoGPT's configurator does),
nested resolved values, then the top-level arguments.

Besides the table, every other argument named ``*_seed`` is recorded under ``seeds`` by its
own name (``--shuffle-seed 3`` -> ``seeds.shuffle_seed``).

A plain ``--batch-size`` is the batch each process takes per step (each rank of a DDP job
parses the same argument and gives it to its own ``DataLoader``): the micro batch, when no
name above says per device. Where no argument gives the global batch, it is derived
(:func:`global_batch`) as **per-device batch × world size × accumulation steps**: the world
size from the job's layout (``WORLD_SIZE``, the initialised process group) or, for a
command still to be started, from its launcher's options (``torchrun --nproc-per-node N
--nnodes M``, ``accelerate launch --num_processes N``, ``deepspeed --num_gpus N
--num_nodes M``; none: 1 process; a launcher whose size is not a number, or ``deepspeed``
without ``--num_gpus``, which counts the devices when it starts: not derived), and
accumulation 1 when none is given. One convention differs: a plain ``batch_size`` with
``gradient_accumulation_steps`` is nanoGPT's, whose accumulation already counts every rank
(its ``train.py`` divides it by the world size), so there the global batch is
``batch_size × gradient_accumulation_steps``.

Parallel sizes, batch sizes and accumulation steps must be integers; a value that is not
(``--tp auto``) is left out with a warning (status ``partial``). Nothing else is derived:
a field is recorded only when an argument gives it.

Extend the table with :func:`register_training_field`; a field is ``name`` or
``group.name`` (e.g. ``parallel_topology.sequence`` or ``seeds.sampler``). Nothing found is
an empty section with status ``ok``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from expdna.collectors.config import parse_args
from expdna.collectors.context import CollectContext, Partial
from expdna.collectors.distributed import layout
from expdna.collectors.launched import launcher_option as _option
from expdna.manifest.command_line import CommandShape, parse_command

#: Manifest field -> accepted argument names, highest priority first. See the module doc.
TRAINING_FIELDS: dict[str, tuple[str, ...]] = {
    "algorithm": ("algorithm", "algo"),
    "parallel_topology.tensor": (
        "tensor_model_parallel_size",
        "tensor_parallel_size",
        "tp_size",
        "tp",
    ),
    "parallel_topology.pipeline": (
        "pipeline_model_parallel_size",
        "pipeline_parallel_size",
        "pp_size",
        "pp",
    ),
    "parallel_topology.context": ("context_parallel_size", "cp_size", "cp"),
    "parallel_topology.expert": (
        "expert_model_parallel_size",
        "expert_parallel_size",
        "ep_size",
        "ep",
    ),
    "parallel_topology.data": ("data_parallel_size", "dp_size", "dp"),
    "global_batch_size": ("global_batch_size", "train_batch_size"),
    "micro_batch_size": (
        "micro_batch_size",
        "train_micro_batch_size_per_gpu",
        "per_device_train_batch_size",
        "micro_batch_size_per_gpu",
        "batch_size",
    ),
    "gradient_accumulation_steps": (
        "gradient_accumulation_steps",
        "accumulate_grad_batches",
        "grad_accum_steps",
    ),
    "seeds.seed": ("seed", "random_seed"),
    "seeds.data_seed": ("data_seed",),
    "precision": ("precision", "mixed_precision", "amp_dtype", "dtype"),
}
#: Boolean switches that name the precision when no field of the table gives it.
PRECISION_SWITCHES: tuple[str, ...] = ("bf16", "fp16")

#: Fields (or groups, ending in ".") whose value must be an integer.
INTEGER_FIELDS: tuple[str, ...] = (
    "parallel_topology.",
    "global_batch_size",
    "micro_batch_size",
    "gradient_accumulation_steps",
)

_SEED_SUFFIX = "_seed"


def _arg_name(name: str) -> str:
    return name.strip().lstrip("-").replace("-", "_").lower()


def register_training_field(field: str, *names: str, first: bool = False) -> None:
    """Accept ``names`` as arguments for ``field``, after the known ones (before: ``first``).

    ``field`` is ``name`` or ``group.name``; names are written as on the command line or
    as argparse dests (``--tensor-parallel`` and ``tensor_parallel`` are the same).
    """
    parts = field.split(".")
    if not names or len(parts) > 2 or not all(parts):
        raise ValueError(
            f"register_training_field({field!r}, ...): need 'name' or "
            "'group.name' and at least one argument name"
        )
    known = TRAINING_FIELDS.get(field, ())
    given = tuple(dict.fromkeys(_arg_name(n) for n in names))
    if first:  # a known name given again moves to the front with the others
        TRAINING_FIELDS[field] = given + tuple(n for n in known if n not in given)
    else:
        TRAINING_FIELDS[field] = known + tuple(n for n in given if n not in known)


def _is_integer_field(field: str) -> bool:
    return any(field.startswith(f) if f.endswith(".") else field == f for f in INTEGER_FIELDS)


def _put(section: dict[str, Any], field: str, value: Any) -> None:
    group, _, name = field.rpartition(".")
    (section.setdefault(group, {}) if group else section)[name] = value


def _value(field: str, arg: str, raw: Any) -> tuple[Any, str | None]:
    """The value to record and a warning, or ``(None, warning)`` when it does not fit."""
    value = raw[-1] if isinstance(raw, list) else raw  # given twice: argparse keeps the last
    if _is_integer_field(field):
        if isinstance(value, int) and not isinstance(value, bool):
            return value, None
        return None, f"{field}: --{arg} {value!r} is not an integer"
    if field in ("algorithm", "precision"):
        if isinstance(value, (bool, dict, list)):
            return None, f"{field}: --{arg} has no value"
        return str(value), None
    return value, None


def training_section(
    args: Mapping[str, Any], fields: Mapping[str, tuple[str, ...]] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The training section read from resolved ``args``, and a warning per unusable value."""
    table = TRAINING_FIELDS if fields is None else fields
    by_name: dict[str, tuple[str, Any]] = {}
    for key, value in args.items():
        by_name.setdefault(_arg_name(key), (key, value))
    section: dict[str, Any] = {}
    warnings: list[str] = []
    used: set[str] = set()
    for field, names in table.items():
        for name in names:
            if name not in by_name:
                continue
            used.add(name)
            value, warning = _value(field, name.replace("_", "-"), by_name[name][1])
            if warning:
                warnings.append(warning)
                continue
            _put(section, field, value)
            break
    for name, (_, raw) in by_name.items():
        if name.endswith(_SEED_SUFFIX) and name not in used:
            value = raw[-1] if isinstance(raw, list) else raw
            section.setdefault("seeds", {}).setdefault(name, value)
    return section, warnings


def leaf_values(values: Any) -> dict[str, Any]:
    """Nested values by their last key: shallower first, then the first met."""
    found: dict[str, Any] = {}
    level = [values]
    depth = 0
    while level and depth < 32:
        below: list[Any] = []
        for item in level:
            if not isinstance(item, Mapping):
                continue
            for key, value in item.items():
                if isinstance(value, Mapping):
                    below.append(value)
                    _switch(found, str(key), value)
                else:
                    found.setdefault(str(key), value)
        level, depth = below, depth + 1
    return found


def _switch(found: dict[str, Any], key: str, value: Mapping[str, Any]) -> None:
    """DeepSpeed's ``"bf16": {"enabled": true}`` read as the switch ``bf16``."""
    if _arg_name(key) in PRECISION_SWITCHES and isinstance(value.get("enabled"), bool):
        found.setdefault(key, value["enabled"])


def merged_args(args: Mapping[str, Any], files: list[Any]) -> dict[str, Any]:
    """The arguments the training fields are read from (see the module doc)."""
    merged: dict[str, Any] = {}
    for values in files:
        merged.update({_arg_name(k): v for k, v in leaf_values(values).items()})
    nested = {k: v for k, v in args.items() if isinstance(v, Mapping)}
    merged.update({_arg_name(k): v for k, v in leaf_values(nested).items()})
    merged.update({_arg_name(k): v for k, v in args.items()})
    return merged


def _precision_switch(section: dict[str, Any], args: Mapping[str, Any]) -> None:
    if "precision" in section:
        return
    for name in PRECISION_SWITCHES:
        if args.get(name) is True:
            section["precision"] = name
            return


#: The names of a per-process batch and an accumulation that counts every rank (nanoGPT).
_NANOGPT_BATCH = "batch_size"
_NANOGPT_STEPS = "gradient_accumulation_steps"


def _first_given(args: Mapping[str, Any], field: str) -> str | None:
    return next((name for name in TRAINING_FIELDS.get(field, ()) if name in args), None)


def global_batch(
    section: Mapping[str, Any], world_size: int | None, *, nanogpt: bool = False
) -> int | None:
    """per-device batch × world size × accumulation steps (see the module doc); None when
    the section gives the global batch itself, or a factor is not known."""
    if "global_batch_size" in section or world_size is None or world_size < 1:
        return None
    micro: Any = section.get("micro_batch_size")
    steps: Any = section.get("gradient_accumulation_steps", 1)
    if not (_positive(micro) and _positive(steps)):
        return None
    return int(micro) * int(steps) * (1 if nanogpt else world_size)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _count(value: str | None, default: int) -> int | None:
    if value is None:
        return default
    return int(value) if value.isdigit() and int(value) > 0 else None


def launcher_world_size(shape: CommandShape) -> int | None:
    """How many processes the command's launcher starts (1 without one; None: not said)."""
    words = shape.launcher_args
    if shape.launcher is None:
        return 1
    if shape.launcher == "torchrun":
        per_node = _count(_option(words, "--nproc-per-node"), 1)
        nodes = _count(_option(words, "--nnodes"), 1)
    elif shape.launcher == "accelerate":
        per_node, nodes = _count(_option(words, "--num-processes"), 1), 1
    else:
        # deepspeed without --num_gpus starts a rank per device it counts when it starts.
        per_node = _count(_option(words, "--num-gpus", "--num-accelerators"), 0) or None
        nodes = _count(_option(words, "--num-nodes"), 1)
    return per_node * nodes if per_node is not None and nodes is not None else None


def world_size(ctx: CollectContext) -> int | None:
    """The job's world size: its layout when this process is in one, else what the
    command's launcher will start."""
    found = layout(ctx.environ)
    if found is not None:
        return found.world_size
    return launcher_world_size(parse_command(ctx.argv))


def collect_training(ctx: CollectContext) -> dict[str, Any]:
    from expdna.collectors.config_files import parsed_config_values

    # A caller's parsed arguments (defaults included), where the context carries them, say
    # more than the words of argv; values in config files count below both.
    # A launcher's own options count here (accelerate's --mixed_precision names the precision).
    given = parse_args(ctx.argv, launcher=True) if ctx.resolved_args is None else ctx.resolved_args
    files = parsed_config_values(ctx)
    given = {k: v for k, v in given.items() if k not in files.file_args}
    args = merged_args(given, files.values)
    section, warnings = training_section(args)
    _precision_switch(section, args)
    nanogpt = (
        _first_given(args, "micro_batch_size") == _NANOGPT_BATCH
        and _first_given(args, "gradient_accumulation_steps") == _NANOGPT_STEPS
    )
    derived = global_batch(section, world_size(ctx), nanogpt=nanogpt)
    if derived is not None:
        section["global_batch_size"] = derived
    if warnings:
        raise Partial(section, "; ".join(warnings))
    return section
