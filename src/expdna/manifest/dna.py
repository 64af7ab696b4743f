"""The experiment DNA, version 2 (and version 1, which old manifests still carry).

Each DNA section is projected to its identity fields, the projection is canonicalised
(RFC 8785) and hashed with BLAKE3; the DNA is the BLAKE3 of the canonical object
``{"version": 2, "sections": {name: hex}}``. docs/en/guide.md ("Recomputing the DNA") is
the specification, spec/js/dna.mjs a second implementation written from it, and
tests/vectors/dna holds vectors that pin both. Changing anything here is a new
``DNA_VERSION``, never a silent change.

Version 2 differs from version 1 only where version 1 followed Python rather than a rule
every language shares: names are lower-cased in ASCII only (``str.lower`` also folds the
Kelvin sign to ``k``), the kernel's version digits are ASCII (``\\d`` also matches other
scripts' digits), and a path-like name must end in ``_dir`` etc. (``$`` also matches before a
final newline). And the top-level object says ``"version": 2``, so every DNA changed.

Version 3 (docs/en/dna-v3.md) puts the command in the config section and keeps one setup
one DNA whichever path records it (``generate`` before the run, the hook or a callback in
it): ``config.resolved_args`` leaves the config projection (the argument words are in the
command, per-run values masked by the same rules), the ``training`` section projects to
``{}`` (it is derived from the arguments), and the facts only the running process reads
(the loaded framework's determinism switches, ``hash_randomization``) leave the
environment projection; ``diff`` still names a change of them. Settings the program handed
over in code (``config.settings_source`` other than ``"argv"``) are not in the command, so
then ``resolved_args`` (per-run values masked as in version 2) and the marker stay in.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from expdna.digest import hex_of
from expdna.manifest.canonical import canonical_bytes, drop_none, normalise
from expdna.manifest.command_identity import project_command
from expdna.manifest.display import SHORT_LENGTH as SHORT_LENGTH
from expdna.manifest.display import short as short
from expdna.manifest.globs import compile_globs, compile_globs_cached
from expdna.manifest.model import DNA_SECTIONS, Dna, Manifest
from expdna.manifest.redact import REDACTED_MARK


def _glob(patterns: Iterable[str]) -> re.Pattern[str]:
    """One compiled regex for a list of globs (see :mod:`expdna.manifest.globs`)."""
    return compile_globs(patterns)


#: The version new DNAs are computed in.
DNA_VERSION = 3
#: Every version this expdna can compute, so a manifest of any of them still verifies.
DNA_VERSIONS = (1, 2, 3)

# Resolved-arg names (lowercase, "-" read as "_") that name one run rather than its setup.
PER_RUN_ARGS: tuple[str, ...] = (
    "output_dir",
    "out_dir",
    "outdir",
    "output_path",
    "output",
    "save_dir",
    "save_path",
    "save",
    "log_dir",
    "logdir",
    "logging_dir",
    "log_path",
    "log_file",
    "tensorboard_dir",
    "tensorboard_log_dir",
    "tb_dir",
    "checkpoint_dir",
    "ckpt_dir",
    "run_name",
    "run_id",
    "exp_name",
    "experiment_name",
    "tags",
    "tag",
    "notes",
    "note",
    "output_root",
    "*_output_dir",
    "*_log_dir",
    "*_logging_dir",
    "*_save_dir",
    "*_checkpoint_dir",
    "*_run_name",
    "wandb_*",
    "mlflow_*",
    "comet_*",
    "neptune_*",
    "swanlab_*",
    "clearml_*",
    "store",
    "store_dir",
    "index_url",
    "expdna_*",
)
# Version 3 adds the trackers' reporting, logging, hub, progress and save arguments.
PER_RUN_ARGS_V3: tuple[str, ...] = (
    *PER_RUN_ARGS,
    "report_to",
    "logging_*",
    "log_level",
    "log_level_*",
    "log_on_each_node",
    "log_interval",
    "log_every*",
    "log_freq",
    "print_freq",
    "disable_tqdm",
    "progress_bar*",
    "enable_progress_bar",
    "verbose",
    "verbosity",
    "push_to_hub",
    "push_to_hub_*",
    "hub_*",
    "save_*",
    "master_addr",
    "master_port",
    "main_process_ip",
    "main_process_port",
    "rdzv_id",
    "rdzv_endpoint",
    "node_rank",
    "machine_rank",
    "local_rank",
    "local_addr",
)
# Version 3: environment variables that set debugging, logging or a cache's location.
DEBUG_ENV: tuple[str, ...] = (
    "*_DEBUG",
    "*_DEBUG_*",
    "TORCH_DISTRIBUTED_DEBUG",
    "TORCH_CPP_LOG_LEVEL",
    "TORCH_LOGS",
    "TORCH_LOGS_*",
    "TORCH_SHOW_CPP_STACKTRACES",
    "TORCHDYNAMO_VERBOSE",
    "CUDA_LAUNCH_BLOCKING",
    "PYTORCH_NVML_BASED_CUDA_CHECK",
    "*_LOG_LEVEL",
    "*_VERBOSITY",
    "*_LOGS",
    "RAY_LOG_*",
    "RAY_DEDUP_LOGS",
    "HF_HOME",
    "HF_*_CACHE",
    "TRANSFORMERS_CACHE",
    "*_CACHE_DIR",
    "*_CACHE_PATH",
    "HF_HUB_DISABLE_PROGRESS_BARS",
    "HF_HUB_DISABLE_TELEMETRY",
    "HF_HUB_ENABLE_HF_TRANSFER",
)
# Keys whose value, when it lies under an output root above, is per-run too.
_PATH_WORDS = ("dir", "path", "file", "prefix")
_PATH_SUFFIXES = tuple(f"_{word}" for word in _PATH_WORDS)
# Version 1 used this regex, whose "$" also matches before a final newline.
_PATH_KEY_V1 = re.compile(r"(^|_)(dir|path|file|prefix)$")
# The kernel's major.minor: version 2 reads ASCII digits only, version 1 any decimal digit.
_ASCII_KERNEL = re.compile(r"^([0-9]+\.[0-9]+)")
_KERNEL = {1: re.compile(r"^(\d+\.\d+)"), 2: _ASCII_KERNEL, 3: _ASCII_KERNEL}

# Environment values that describe one allocation, not the setup (DESIGN.md "The DNA").
PER_ALLOCATION_ENV: tuple[str, ...] = (
    "CUDA_VISIBLE_DEVICES",
    "RAY_ADDRESS",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_ARRAY_*",
    "SLURM_*NODELIST",
    "SLURM_NODEID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_STEP_*",
    "SLURM_STEPID",
    "SLURM_TASK_PID",
    "SLURM_SUBMIT_*",
    "SLURMD_NODENAME",
    "SLURM_TOPOLOGY_*",
    "SLURM_LAUNCH_NODE_IPADDR",
    "SLURM_SRUN_COMM_*",
    "SLURM_JOB_UID",
    "SLURM_JOB_USER",
    "SLURM_JOB_NAME",
    "SLURM_CONF",
    "*_ADDR",
    "*_ADDRESS",
    "*_PORT",
    "*_HOST",
    "*_IPADDR",
    "*_NODELIST",
    "*_JOB_ID",
    "*_JOBID",
)

# Hardware keys (at any depth) that name a device or a moment, not a kind of machine.
VOLATILE_HARDWARE: tuple[str, ...] = (
    "uuid",
    "serial",
    "*bus_id",
    "pci",
    "minor_number",
    "index",
    "hostname",
    "source",
    "temperature*",
    "*_temperature",
    "fan*",
    "power_draw*",
    "utilization*",
    "memory_used*",
    "memory_free*",
    "clocks*",
    "*_current",
    "current_*",
    "*_source",
    "power_limit*",
)

# Environment fields that name one machine's layout, not the software.
_PER_MACHINE_ENVIRONMENT = ("hostname", "python_executable", "container")

# Dataset fields that describe the files the digest already names, or where they are.
_DATASET_DETAIL = frozenset({"root", "listing", "tables", "table_groups"})

# Ray resources that vary with each allocation (memory is measured at start).
_VOLATILE_RESOURCES = ("node:*", "memory", "object_store_memory")

_PER_RUN = _glob(PER_RUN_ARGS)
_PER_RUN_V3 = _glob(PER_RUN_ARGS_V3)
_PER_ALLOCATION = _glob(PER_ALLOCATION_ENV)
_DEBUG_ENV = _glob(DEBUG_ENV)
_VOLATILE_HARDWARE = _glob(VOLATILE_HARDWARE)
_VOLATILE_RESOURCE = _glob(_VOLATILE_RESOURCES)

Projection = Callable[[Mapping[str, Any]], Any]


_glob_cached = compile_globs_cached


def _matches(name: str, pattern: re.Pattern[str]) -> bool:
    return pattern.match(name) is not None


@functools.lru_cache(maxsize=4096)
def _volatile_hardware_key(key: str) -> bool:
    return _VOLATILE_HARDWARE.match(key) is not None


def _without_volatile_hardware(value: Any) -> Any:
    """``value`` with every volatile hardware key removed, at any depth."""
    if isinstance(value, Mapping):
        return {
            k: _without_volatile_hardware(v)
            for k, v in value.items()
            if not _volatile_hardware_key(k)
        }
    if isinstance(value, list):
        return [_without_volatile_hardware(v) for v in value]
    return value


def _sorted_by_bytes(items: Iterable[Any]) -> list[Any]:
    """Sorted as their DNA bytes sort, so list order in the manifest does not matter."""
    items = [drop_none(item) for item in items]
    return sorted(items, key=canonical_bytes) if len(items) > 1 else items


def _repo_identity(repo: Mapping[str, Any], version: int = DNA_VERSION) -> dict[str, Any]:
    patch = repo.get("patch") or {}
    identity = {
        "commit": repo.get("commit"),
        "dirty": repo.get("dirty"),
        "patch": patch.get("digest"),
    }
    tree = repo.get("tree")
    if version >= 3 and isinstance(tree, Mapping):
        # Version 3: code outside git, by the digest of its [path, digest] listing.
        identity["tree"] = tree.get("digest")
    binaries = patch.get("binary_files")
    if binaries:
        identity["binary_files"] = sorted(
            [b.get("path") or "", b.get("digest") or ""] for b in binaries
        )
    submodules = repo.get("submodules")
    if submodules:
        identity["submodules"] = sorted(
            (
                {
                    "path": s.get("path") or "",
                    "commit": s.get("commit"),
                    "checked_out": s.get("checked_out"),
                }
                for s in submodules
            ),
            key=lambda s: s["path"],
        )
    return identity


def _project_code(section: Mapping[str, Any], version: int = DNA_VERSION) -> Any:
    # Repository names are checkout directory names: identity is the commits, not the names.
    return _sorted_by_bytes([_repo_identity(repo, version) for repo in section.values()])


# Roots so broad that "under the output root" would swallow every path argument.
_TOO_BROAD_ROOTS = frozenset({"", ".", "./", "/", "~", "~/", ".."})


def _as_text(value: Any) -> str | None:
    """The string a value is written as in the file (big ints and inf become strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        written = normalise(value)
        return written if isinstance(written, str) else None
    return None


def _output_roots(args: Mapping[str, Any], version: int) -> list[str]:
    roots = []
    for key, value in args.items():
        if not _per_run_name(key, version):
            continue
        text = _as_text(value)
        if text is not None and text not in _TOO_BROAD_ROOTS:
            roots.append(text.rstrip("/") + "/")
    return roots


def _masked(value: Any) -> bool:
    """A secret redaction left ``***``: its value was never the experiment's identity."""
    return isinstance(value, str) and value.endswith(REDACTED_MARK)


_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def ascii_lower(text: str) -> str:
    """``text`` with A-Z lower-cased and every other character kept (as in any language)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def arg_name(key: str, version: int = DNA_VERSION) -> str:
    """A resolved-arg name as the rules compare it: lower-cased, ``-`` read as ``_``.

    Version 1 lower-cased with Python's full Unicode ``str.lower``; version 2 in ASCII.
    """
    return (key.lower() if version == 1 else ascii_lower(key)).replace("-", "_")


@functools.lru_cache(maxsize=4096)
def _per_run_name(key: str, version: int = DNA_VERSION) -> bool:
    pattern = _PER_RUN if version < 3 else _PER_RUN_V3
    return pattern.match(arg_name(key, version)) is not None


@functools.lru_cache(maxsize=4096)
def _debug_env_name(key: str) -> bool:
    return _DEBUG_ENV.match(key) is not None


@functools.lru_cache(maxsize=4096)
def _path_name(key: str, version: int) -> bool:
    name = arg_name(key, version)
    if version == 1:
        return _PATH_KEY_V1.search(name) is not None
    return name in _PATH_WORDS or name.endswith(_PATH_SUFFIXES)


@functools.lru_cache(maxsize=4096)
def _volatile_resource(key: str) -> bool:
    return _VOLATILE_RESOURCE.match(key) is not None


@functools.lru_cache(maxsize=4096)
def _per_allocation_name(key: str) -> bool:
    return _PER_ALLOCATION.match(key) is not None


def is_per_run_arg(key: str) -> bool:
    """A resolved-arg name that names one run (``output_dir``, ``run_name``, ``wandb_*``)."""
    return _per_run_name(key)


def is_debug_env(name: str) -> bool:
    """An environment variable that sets debugging, logging or a cache location (v3)."""
    return _debug_env_name(name)


def is_per_allocation_env(name: str) -> bool:
    """An environment variable that names one allocation (job ids, addresses, ports)."""
    return _per_allocation_name(name)


def is_volatile_resource(name: str) -> bool:
    """A Ray resource that varies with each allocation (``node:<ip>``, measured memory)."""
    return _volatile_resource(name)


def _project_config(section: Mapping[str, Any], version: int = DNA_VERSION) -> Any:
    args = section.get("resolved_args") or {}
    roots = _output_roots(args, version)
    # Arguments that name a recorded config file (version 2): its digest in config_files
    # stands for them, so moving the file does not change the DNA. No version-1 manifest
    # has config_file_args; version 1 stays as it was.
    listed = section.get("config_file_args") if version != 1 else None
    file_args = {arg_name(n, version) for n in listed or () if isinstance(n, str)}

    def per_run(key: str, value: Any) -> bool:
        if _per_run_name(key, version) or _masked(value):
            return True
        if file_args and arg_name(key, version) in file_args:
            return True
        if not roots or not _path_name(key, version):
            return False
        text = _as_text(value)
        return text is not None and any((text.rstrip("/") + "/").startswith(root) for root in roots)

    projected: dict[str, Any] = {}
    source = section.get(SETTINGS_SOURCE_KEY) if version >= 3 else None
    if version < 3 or settings_from_code(source):
        # Version 3 leaves resolved_args out: their words are in the command (with per-run
        # values masked by the same rules), and only the process knows its defaults. Unless
        # the settings were handed over in code (a search loop's dict): then argv does not
        # hold them, and they count, with the marker itself.
        projected["resolved_args"] = {k: v for k, v in args.items() if not per_run(k, v)}
    if version >= 3 and settings_from_code(source):
        projected[SETTINGS_SOURCE_KEY] = source
    projected |= {
        "selected_env": {
            k: v
            for k, v in (section.get("selected_env") or {}).items()
            if not _per_allocation_name(k)
            and not _masked(v)
            and not (version >= 3 and _debug_env_name(k))
        },
        "config_files": sorted((section.get("config_files") or {}).values()),
    }
    if version >= 3:
        command = section.get(COMMAND_KEY)

        ignore = section.get("dna_ignore") or ()
        ignored = _glob_cached(tuple(g for g in ignore if isinstance(g, str))) if ignore else None

        files = [k for k in section.get("config_files") or {} if isinstance(k, str)]

        def hidden(key: str, value: str) -> bool:
            if not key:  # a positional word: redacted, or a recorded config file's path
                return _masked(value) or _names_config_file(value, files)
            # An argument the rules leave out of resolved_args, or dna_ignore names there.
            name = key.replace("-", "_")
            if ignored is not None and ignored.match(f"config.resolved_args.{name}"):
                return True
            return per_run(name, value)

        projected["command"] = project_command(
            command if isinstance(command, Mapping) else {}, hidden
        )
    return projected


def per_run_blanked(section: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]] | None:
    """The config section with the values of its per-run resolved arguments (``output_dir``,
    ``run_name``: current version) set to None, and the output roots those values give
    (each without its trailing ``/``); None where no argument is per-run.

    The config projection, and the one with seeds left out (:mod:`expdna.manifest.family`),
    read a per-run argument's name but its value only as an output root: another path
    argument (in ``resolved_args`` or the command) whose value lies under a root is left
    out too. So where no value of the blanked section or of the command holds a root's
    text, the section projects as its blanked form does, whatever the per-run values are:
    a recorder memoises the projection of a run's config under its blanked form
    (:mod:`expdna.store.record.sections`), once for all the runs of a setup.
    """
    args = section.get("resolved_args")
    if type(args) is not dict:
        return None
    named = [key for key in args if _per_run_name(key)]
    if not named:
        return None
    roots = []  # as _output_roots finds them
    for key in named:
        text = _as_text(args[key])
        if text is not None and text not in _TOO_BROAD_ROOTS:
            roots.append(text.rstrip("/"))
    return {**section, "resolved_args": {**args, **dict.fromkeys(named)}}, roots


#: The config key that says where the recorded settings came from (version 3): absent (or
#: ``null``, or ``"argv"``) when they were parsed from the command line; ``"code"`` when the
#: program handed them over in code (``expdna.track({"lr": 0.1})``, a Ray Tune trial).
SETTINGS_SOURCE_KEY = "settings_source"
#: The values of ``config.settings_source`` that keep the argv rule.
SETTINGS_FROM_ARGV = "argv"


def settings_from_code(source: Any) -> bool:
    """Whether ``config.settings_source`` puts ``resolved_args`` in the v3 projection: any
    value other than absent/``null``/``"argv"`` (so editing the marker to another value
    cannot take the settings out of the DNA)."""
    return source is not None and source != SETTINGS_FROM_ARGV


def _names_config_file(word: str, files: Sequence[str]) -> bool:
    """Whether a positional argument is the path of a recorded config file (``config/x.py``
    for ``/repo/config/x.py``): its place in the command is the file, whose digest the
    config section holds, so moving the file keeps the DNA."""
    written = word
    while written.startswith("./"):
        written = written[2:]
    return bool(written) and any(f == written or f.endswith("/" + written) for f in files)


#: Where :func:`config_input` puts the manifest's ``command`` for the version-3 config
#: projection (a key no config section has; any value there is replaced).
COMMAND_KEY = "\x00command"


def config_input(doc: Mapping[str, Any], version: int = DNA_VERSION) -> Mapping[str, Any]:
    """The config section as its projection reads it: in version 3 with the manifest's
    ``command`` (the command is part of the configuration)."""
    config = doc.get("config") or {}
    if version < 3 or not isinstance(config, Mapping):
        return config
    return {**config, COMMAND_KEY: doc.get("command") or {}}


def _project_training(section: Mapping[str, Any], version: int = DNA_VERSION) -> Any:
    # Version 3: the section is derived from the arguments (and the process's defaults),
    # which the command and the config files already stand for.
    return dict(section) if version < 3 else {}


# Version 3: facts only the running process can read (generate, before it, cannot): its
# determinism switches, and whether its str hashes are randomised (PYTHONHASHSEED, which
# decides it, is in config.selected_env). Recorded, and named by diff, outside the DNA.
_PROCESS_ENVIRONMENT = ("hash_randomization",)


def _project_environment(section: Mapping[str, Any], version: int = DNA_VERSION) -> Any:
    left_out = (
        _PER_MACHINE_ENVIRONMENT
        if version < 3
        else (
            *_PER_MACHINE_ENVIRONMENT,
            *_PROCESS_ENVIRONMENT,
        )
    )
    projected = {k: v for k, v in section.items() if k not in left_out}
    kernel = projected.get("kernel")
    if isinstance(kernel, str):
        # Patch level (6.1.0-18-amd64 -> 6.1) changes with security updates, not results.
        match = _KERNEL[version].match(kernel)
        projected["kernel"] = match.group(1) if match else kernel
    framework = projected.get("framework")
    if isinstance(framework, Mapping):
        projected["framework"] = {
            name: _framework_identity(info, version) if isinstance(info, Mapping) else info
            for name, info in framework.items()
        }
    return projected


def _framework_identity(info: Mapping[str, Any], version: int = DNA_VERSION) -> dict[str, Any]:
    """A framework as installed, plus (before version 3) the determinism switches of the
    loaded one.

    The rest of the loaded truth repeats the installed build (or, for the build config
    text, names the host CPU); ``initial_seed`` is random in every unseeded process. In
    version 3 the switches leave too: only the process reads them, at ``start()``, and a
    command recorded before it runs (``generate``) has none, so one setup would have two
    DNAs by the path that recorded it.
    """
    identity = {k: v for k, v in info.items() if k != "loaded"}
    if version >= 3:
        return identity
    loaded = info.get("loaded")
    if isinstance(loaded, Mapping) and isinstance(loaded.get("determinism"), Mapping):
        identity["determinism"] = {
            k: v for k, v in loaded["determinism"].items() if k != "initial_seed"
        }
    return identity


def _project_hardware(section: Mapping[str, Any]) -> Any:
    # Host memory as the kernel reports it differs by a few MiB between identical machines.
    host = {k: v for k, v in section.items() if k != "memory_gb"}
    return _without_volatile_hardware(host)


def _project_runtime(section: Mapping[str, Any]) -> Any:
    nodes = []
    for node in section.get("nodes") or []:
        resources = {
            k: v for k, v in (node.get("resources") or {}).items() if not _volatile_resource(k)
        }
        nodes.append(
            {
                "role": node.get("role"),
                "resources": resources,
                "fingerprint": node.get("fingerprint"),
            }
        )
    return {
        "mode": section.get("mode"),
        "node_count": section.get("node_count"),
        "nodes": _sorted_by_bytes(nodes),
    }


def _project_data(section: Mapping[str, Any]) -> Any:
    # The listing digest covers every file; the rest repeats it (an inline listing, footer
    # facts that exist only where pyarrow is installed) or names a mount point (root).
    datasets = [
        {k: v for k, v in dataset.items() if k not in _DATASET_DETAIL}
        for dataset in section.get("datasets") or []
    ]
    return {"datasets": _sorted_by_bytes(datasets)}


#: Section name -> identity projection (current version). Each takes the section as written
#: in the manifest.
PROJECTIONS: dict[str, Projection] = {
    "code": _project_code,
    "config": _project_config,
    "training": _project_training,
    "environment": _project_environment,
    "hardware": _project_hardware,
    "runtime": _project_runtime,
    "data": _project_data,
}
assert tuple(PROJECTIONS) == DNA_SECTIONS


def check_version(version: int) -> None:
    """ValueError for a DNA version this expdna cannot compute."""
    if version not in DNA_VERSIONS:
        known = ", ".join(str(v) for v in DNA_VERSIONS)
        raise ValueError(f"DNA version {version!r} is not one this expdna knows ({known})")


def _projection(name: str, version: int) -> Projection:
    if version == DNA_VERSION or name not in ("code", "config", "training", "environment"):
        return PROJECTIONS[name]
    if name == "code":
        return lambda section: _project_code(section, version)
    if name == "config":
        return lambda section: _project_config(section, version)
    if name == "training":
        return lambda section: _project_training(section, version)
    return lambda section: _project_environment(section, version)


def _apply_ignore(value: Any, path: str, patterns: re.Pattern[str]) -> Any:
    if isinstance(value, Mapping):
        return {
            k: _apply_ignore(v, f"{path}.{k}", patterns)
            for k, v in value.items()
            if not _matches(f"{path}.{k}", patterns)
        }
    return value


def mark_unknown(projected: Any) -> dict[str, Any]:
    """The projection of a section a collector could not finish: a marker around what it got.

    The reason is left out (it names timings and errors); that the section is incomplete is
    not, so an incomplete run never shares a DNA with a complete one, nor with a run that
    truly had nothing to collect there.
    """
    return {"unknown": True, "partial": projected}


def _project_section(doc: Mapping[str, Any], name: str, version: int) -> Any:
    """Section ``name`` of ``doc`` projected as the DNA hashes it: ``dna_ignore`` applied,
    an unknown section marked (``null`` values not dropped yet)."""
    ignore = tuple(((doc.get("config") or {}).get("dna_ignore")) or ())
    section = config_input(doc, version) if name == "config" else doc.get(name)
    projected = _projection(name, version)(section or {})
    if ignore:
        projected = _apply_ignore(projected, name, _glob_cached(ignore))
    if name in (doc.get("unknown") or {}):
        projected = mark_unknown(projected)
    return projected


def _raw_projections(manifest: Manifest | Mapping[str, Any], version: int) -> dict[str, Any]:
    check_version(version)
    doc = manifest.to_dict() if isinstance(manifest, Manifest) else manifest
    return {name: _project_section(doc, name, version) for name in DNA_SECTIONS}


def section_projection(
    manifest: Manifest | Mapping[str, Any], name: str, *, version: int = DNA_VERSION
) -> Any:
    """One DNA section's identity projection of a manifest (or its document), as
    :func:`compute_dna` hashes it: what the section's digest is the digest of
    (:func:`projection_digest`). ``name`` is one of ``DNA_SECTIONS``; in version 3 the
    ``config`` projection includes the manifest's ``command``."""
    check_version(version)
    if name not in PROJECTIONS:
        raise ValueError(f"{name!r} is not a DNA section ({', '.join(DNA_SECTIONS)})")
    doc = manifest.to_dict() if isinstance(manifest, Manifest) else manifest
    return _project_section(doc, name, version)


def projection_digest(projected: Any) -> str:
    """The section digest of a projection (:func:`section_projection`): BLAKE3 of its
    canonical bytes, ``null`` values dropped."""
    return hex_of(canonical_bytes(projected, drop_none_values=True))


def projections(
    manifest: Manifest | Mapping[str, Any], *, version: int = DNA_VERSION
) -> dict[str, Any]:
    """Each DNA section's identity projection, as hashed (``null`` values dropped)."""
    return {name: drop_none(p) for name, p in _raw_projections(manifest, version).items()}


def compute_dna(manifest: Manifest | Mapping[str, Any], *, version: int = DNA_VERSION) -> Dna:
    """The DNA of ``manifest`` in ``version`` (the current one unless a stored DNA of an
    older version is being verified): per-section digests and the top-level value."""
    sections = {
        name: projection_digest(projected)
        for name, projected in _raw_projections(manifest, version).items()
    }
    return Dna(version=version, value=dna_value(sections, version=version), sections=sections)


def stored_version(manifest: Manifest | Mapping[str, Any]) -> int:
    """The DNA version a manifest's stored ``dna`` block was computed in (the current one
    when it has none): the version to recompute it in when verifying it."""
    if isinstance(manifest, Manifest):
        return manifest.dna.version if manifest.dna is not None else DNA_VERSION
    stored = manifest.get("dna")
    version = stored.get("version") if isinstance(stored, Mapping) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else DNA_VERSION


def verify_dna(manifest: Manifest | Mapping[str, Any]) -> Dna:
    """The DNA of ``manifest`` recomputed in the version its stored DNA names, so a manifest
    written by an older expdna still verifies (ValueError for a version unknown here)."""
    return compute_dna(manifest, version=stored_version(manifest))


def dna_value(sections: Mapping[str, str], *, version: int = DNA_VERSION) -> str:
    """The DNA over section digests: the BLAKE3 of ``{"version": N, "sections": ...}``."""
    return hex_of(canonical_bytes({"version": version, "sections": dict(sections)}))


def section_digest(name: str, section: Mapping[str, Any], *, version: int = DNA_VERSION) -> str:
    """One section's digest for a document without ``dna_ignore`` or ``unknown``."""
    return hex_of(canonical_bytes(_projection(name, version)(section), drop_none_values=True))
