"""DNA v3 (and v2) from a manifest file, without expdna: only json, math, re, fnmatch, rfc8785,
blake3. Version 3's rules are marked "v3"; `--dna-version 2` computes version 2."""

import fnmatch
import json
import math
import re
import sys

import rfc8785
from blake3 import blake3

PER_RUN_ARGS = [
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
]
PER_RUN_ARGS_V3 = [
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
]
DEBUG_ENV = [
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
]
PER_RUN_LAUNCHER_OPTIONS = [
    "rdzv-id",
    "rdzv-endpoint",
    "rdzv-conf",
    "master-addr",
    "master-port",
    "main-process-ip",
    "main-process-port",
    "node-rank",
    "machine-rank",
    "local-addr",
    "log-dir",
    "logs-specs",
    "redirects",
    "tee",
    "local-ranks-filter",
    "monitor-interval",
    "hostfile",
    "include",
    "exclude",
    "save-pid",
    "ssh-port",
    "comment",
    "r",
    "t",
    "H",
    "i",
    "e",
]
PER_ALLOCATION_ENV = [
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
]
VOLATILE_HARDWARE = [
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
]
VOLATILE_RESOURCES = ["node:*", "memory", "object_store_memory"]
TOO_BROAD_ROOTS = ["", ".", "./", "/", "~", "~/", ".."]
PER_MACHINE_ENVIRONMENT = ["hostname", "python_executable", "container"]
DATASET_DETAIL = ["root", "listing", "tables", "table_groups"]
LEGACY_NAMES = [  # old -> new, in this order; the new name, once present, wins
    ("cli_args", "command.argv"),
    ("command.cli_args", "command.argv"),
    ("argv", "command.argv"),
    ("cwd", "command.cwd"),
    ("git", "code"),
    ("env", "config.selected_env"),
    ("config.env", "config.selected_env"),
    ("args", "config.resolved_args"),
    ("config.args", "config.resolved_args"),
]
INTEGER_FIELDS = [  # typed as integers: a whole float there is that integer
    ("training", "global_batch_size"),
    ("training", "micro_batch_size"),
    ("hardware", "gpu_count"),
    ("hardware", "cpu_count"),
    ("runtime", "node_count"),
]


def matches(name, globs):  # fnmatch globs, case-sensitive, `*` also matches "."
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def drop_nulls(v):  # null dict values go at every depth; list items stay
    if isinstance(v, dict):
        return {k: drop_nulls(x) for k, x in v.items() if x is not None}
    return [drop_nulls(x) for x in v] if isinstance(v, list) else v


def normalise(v):  # what JSON cannot carry exactly becomes a string
    if isinstance(v, float) and not math.isfinite(v):
        return "<non-finite:nan>" if math.isnan(v) else f"<non-finite:{'inf' if v > 0 else '-inf'}>"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53 - 1:
        return str(v)
    if isinstance(v, dict):
        return {k: normalise(x) for k, x in v.items()}
    return [normalise(x) for x in v] if isinstance(v, list) else v


def jcs(v):
    return rfc8785.dumps(normalise(v))


def by_bytes(items):  # list order in the manifest does not matter
    return sorted((drop_nulls(i) for i in items), key=jcs)


def code(sec, version):
    out = []
    for repo in sec.values():
        patch = repo.get("patch") or {}
        ident = {
            "commit": repo.get("commit"),
            "dirty": repo.get("dirty"),
            "patch": patch.get("digest"),
        }
        if version >= 3 and isinstance(repo.get("tree"), dict):  # v3: code outside git
            ident["tree"] = repo["tree"].get("digest")
        if patch.get("binary_files"):
            ident["binary_files"] = sorted(
                [b.get("path") or "", b.get("digest") or ""] for b in patch["binary_files"]
            )
        if repo.get("submodules"):
            ident["submodules"] = sorted(
                (
                    {
                        "path": s.get("path") or "",
                        "commit": s.get("commit"),
                        "checked_out": s.get("checked_out"),
                    }
                    for s in repo["submodules"]
                ),
                key=lambda s: s["path"],
            )
        out.append(ident)
    return by_bytes(out)


def as_text(v):  # a string, or a number the file writes as a string (2**60, inf)
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = normalise(v)
        return v if isinstance(v, str) else None
    return None


def masked(v):  # a secret that redaction replaced: never part of the identity
    return isinstance(v, str) and v.endswith("***")


def arg_name(k):  # "--Output-Dir" was stored as "Output-Dir": compare as "output_dir"
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in k).replace("-", "_")


def path_like(k):  # dir, path, file, prefix, or a name ending in _dir, _path, _file, _prefix
    name = arg_name(k)
    return name in ("dir", "path", "file", "prefix") or name.endswith(
        ("_dir", "_path", "_file", "_prefix")
    )


def config(sec, version, doc):
    per_run_args = PER_RUN_ARGS_V3 if version >= 3 else PER_RUN_ARGS
    args = sec.get("resolved_args") or {}
    # arguments naming a recorded config file: the file's digest stands for them
    file_args = {arg_name(n) for n in sec.get("config_file_args") or [] if isinstance(n, str)}
    roots = [
        as_text(v).rstrip("/") + "/"
        for k, v in args.items()
        if as_text(v) is not None
        and as_text(v) not in TOO_BROAD_ROOTS
        and matches(arg_name(k), per_run_args)
    ]

    def per_run(k, v):
        text = as_text(v)
        return (
            matches(arg_name(k), per_run_args)
            or masked(v)
            or arg_name(k) in file_args
            or (
                text is not None
                and path_like(k)
                and any((text.rstrip("/") + "/").startswith(r) for r in roots)
            )
        )

    # v3: settings handed over in code (settings_source other than absent, null, "argv")
    source = sec.get("settings_source") if version >= 3 else None
    from_code = source is not None and source != "argv"
    projected = (
        {}
        if version >= 3 and not from_code
        else {  # v3: the argument words are in the command, unless set in code
            "resolved_args": {k: v for k, v in args.items() if not per_run(k, v)}
        }
    )
    if from_code:  # the marker too, so editing it changes the DNA
        projected["settings_source"] = source
    projected |= {
        "selected_env": {
            k: v
            for k, v in (sec.get("selected_env") or {}).items()
            if not matches(k, PER_ALLOCATION_ENV)
            and not masked(v)
            and not (version >= 3 and matches(k, DEBUG_ENV))
        },
        "config_files": sorted((sec.get("config_files") or {}).values()),
    }
    if version >= 3:  # v3: the command, its values masked by the rules above and dna_ignore
        ignore_globs = [g for g in sec.get("dna_ignore") or [] if isinstance(g, str)]
        files = list((sec.get("config_files") or {}).keys())

        def names_config_file(word):  # a positional config file: its digest is in config
            while word.startswith("./"):
                word = word[2:]
            return word != "" and any(f == word or f.endswith("/" + word) for f in files)

        def hidden(key, value):
            if not key:
                return masked(value) or names_config_file(value)
            name = key.replace("-", "_")
            if ignore_globs and matches(f"config.resolved_args.{name}", ignore_globs):
                return True
            return per_run(name, value)

        command = doc.get("command") if isinstance(doc.get("command"), dict) else {}
        projected["command"] = project_command(command, hidden)
    return projected


# -- v3: the command (docs/en/dna-v3.md) --------------------------------------------------------

INTERPRETER = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[dmt]*(\.exe)?$", re.IGNORECASE)
PY_VALUE_OPTIONS = "XWcm"
LAUNCHER_FLAGS = {
    "torchrun": "--standalone --no-python --run-path -m --module --use-env --help -h --version",
    "accelerate": "--cpu --multi-gpu --tpu --ipex --use-deepspeed --use-fsdp --use-megatron-lm "
    "--use-xpu --debug -q --quiet --same-network -m --module --no-python --dynamo-use-fullgraph "
    "--dynamo-use-dynamic --dynamo-use-regional-compilation --enable-cpu-affinity "
    "--tpu-use-cluster --tpu-use-sudo --downcast-bf16 --help -h",
    "deepspeed": "--no-python --no-local-rank --module --force-multi --save-pid "
    "--elastic-training --no-ssh-check --no-ssh --bind-cores-to-rank --help -h",
}
LAUNCHER_FLAGS = {k: set(v.split()) for k, v in LAUNCHER_FLAGS.items()}
LAUNCHER_MODULES = {
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torchrun",
    "accelerate.commands.launch": "accelerate",
    "deepspeed.launcher.runner": "deepspeed",
}
MASK = "<masked>"
OPTION = re.compile(r"^--?[A-Za-z_][\w.-]*$", re.ASCII)
OVERRIDE = re.compile(r"^[+~]{0,2}([A-Za-z_][\w.@/-]*)=(.*)$", re.ASCII | re.DOTALL)


def basename(word):
    return word.replace("\\", "/").split("/")[-1]


def is_interpreter(word):
    return INTERPRETER.match(basename(word)) is not None


def shape(**parts):
    found = dict(launcher=None, launcher_args=[], interpreter=None, interpreter_args=[])
    found.update(module=None, script=None, args=[])
    found.update(parts)
    return found


def dashed(option):
    name = option.split("=")[0]
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name


def launcher_options(words, flags):  # a launcher's own words, up to its entry
    options, module_entry, no_python, i = [], False, False, 0
    while i < len(words):
        word = words[i]
        if word == "--":
            options.append(word)
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name = dashed(word)
        options.append(word)
        i += 1
        module_entry = module_entry or (name in ("-m", "--module") and name in flags)
        no_python = no_python or name == "--no-python"
        attached = not word.startswith("--") and len(word) > 2
        if "=" in word or name in flags or attached:
            continue
        if i < len(words):
            options.append(words[i])
            i += 1
    return options, words[i:], module_entry, no_python


def interpreter_options(words):  # (options, module, rest); -c's program stays an option
    options, i = [], 0
    while i < len(words):
        word = words[i]
        if word == "-" or not word.startswith("-"):
            break
        i += 1
        if word == "--":
            options.append(word)
            break
        if word.startswith("--"):
            options.append(word)
            if word == "--check-hash-based-pycs" and i < len(words):
                options.append(words[i])
                i += 1
            continue
        for pos, c in enumerate(word[1:], start=1):
            if c not in PY_VALUE_OPTIONS:
                continue
            attached = word[pos + 1 :]
            if not attached and i < len(words):
                attached, i = words[i], i + 1
            if c == "m":
                if pos > 1:
                    options.append(word[:pos])
                return options, attached or None, words[i:]
            options.append(word[: pos + 1])
            if attached:
                options.append(attached)
            if c == "c":
                return options, None, words[i:]
            break
        else:
            options.append(word)
    return options, None, words[i:]


def entry(words, module_entry):
    if not words:
        return {}
    if module_entry:
        return {"module": words[0], "args": words[1:]}
    return {"script": words[0], "args": words[1:]}


def launched(launcher, words, base):
    options, program, module_entry, no_python = launcher_options(words, LAUNCHER_FLAGS[launcher])
    launcher_args = base["launcher_args"] + options
    if no_python and program and is_interpreter(program[0]):
        inner = python(program[0], program[1:])
        return {**inner, "launcher": launcher, "launcher_args": launcher_args}
    return shape(
        launcher=launcher,
        launcher_args=launcher_args,
        interpreter=base["interpreter"],
        interpreter_args=base["interpreter_args"],
        **entry(program, module_entry),
    )


RAY_WORKER = "ray/_private/workers/default_worker.py"  # every Ray task's, actor's, trial's


def worker(script, words, base):  # a Ray worker: launcher "ray", its words all per-process
    path = script.replace("\\", "/")
    if path == RAY_WORKER or path.endswith("/" + RAY_WORKER):
        return {**base, "launcher": "ray", "launcher_args": words}
    return None


def python(interpreter, words):
    options, module, rest = interpreter_options(words)
    if module in LAUNCHER_MODULES:
        base = shape(interpreter=interpreter, interpreter_args=options)
        return launched(LAUNCHER_MODULES[module], rest, base)
    if module is not None:
        return shape(interpreter=interpreter, interpreter_args=options, module=module, args=rest)
    if "-c" in options:
        return shape(interpreter=interpreter, interpreter_args=options, args=rest)
    found = entry(rest, False)
    found.pop("module", None)
    base = shape(interpreter=interpreter, interpreter_args=options)
    ray = worker(found["script"], found["args"], base) if found else None
    return ray or shape(interpreter=interpreter, interpreter_args=options, **found)


def parse_command(argv):  # launcher, its options, interpreter, its options, entry, arguments
    words = [str(w) for w in argv]
    if not words:
        return shape()
    name = basename(words[0])
    name = name[:-4] if name.endswith(".exe") else name
    if name in ("torchrun", "deepspeed"):
        return launched(name, words[1:], shape())
    if name == "accelerate" and len(words) > 1 and words[1] == "launch":
        return launched("accelerate", words[2:], shape())
    if is_interpreter(words[0]):
        return python(words[0], words[1:])
    return worker(words[0], words[1:], shape()) or shape(script=words[0], args=words[1:])


def split_assignments(words):  # --key=value as two words
    out = []
    for word in words:
        name, eq, value = word.partition("=")
        if eq and word.startswith("-") and OPTION.match(name):
            out += [name, value]
        else:
            out.append(word)
    return out


def launcher_words(words):
    out, hidden = [], False
    for word in split_assignments(words):
        if word.startswith("-") and OPTION.match(word):
            name = word.lstrip("-").replace("_", "-")
            hidden = name in PER_RUN_LAUNCHER_OPTIONS
            if not hidden:
                out.append(("--" if word.startswith("--") else "-") + name)
            continue
        if not hidden:
            out.append(word)
        hidden = False
    return out


def masked_args(words, hidden, hydra=True):  # hidden options leave with their values
    out, pending = [], None
    for word in split_assignments(words):
        if word.startswith("-") and OPTION.match(word):
            if pending is not None and not hidden(pending.lstrip("-"), ""):
                out.append(pending)
            pending = word
            continue
        if pending is not None:
            if not hidden(pending.lstrip("-"), word):
                out += [pending, word]
            pending = None
            continue
        override = OVERRIDE.match(word)
        if override is not None:
            name, value = override.groups()
            last = name.split(".")[-1].split("/")[-1]
            if not ((hydra and name.split(".")[0] == "hydra") or hidden(last, value)):
                out.append(word)
        else:
            out.append(MASK if hidden("", word) else word)
    if pending is not None and not hidden(pending.lstrip("-"), ""):
        out.append(pending)
    return out


def script_of(script, entry_path):  # command.entry when it names the same file
    written = script.replace("\\", "/")
    while written.startswith("./"):
        written = written[2:]
    same = isinstance(entry_path, str) and entry_path.split("/")[-1] == written.split("/")[-1]
    return entry_path if same and entry_path else written


def project_command(command, hidden):
    argv = command.get("argv")
    argv = [] if argv is None else argv  # a manifest without argv recorded none
    if not isinstance(argv, list):
        return {}
    if not all(isinstance(w, str) for w in argv):
        return {"argv": argv}
    parts = parse_command(argv)
    projected = {}
    if parts["launcher"] is not None:
        args = [] if parts["launcher"] == "ray" else launcher_words(parts["launcher_args"])
        projected["launcher"] = {"name": parts["launcher"], "args": args}
    script = parts["script"] or ""
    if (
        parts["interpreter"] is not None
        or parts["module"] is not None
        or parts["launcher"] is not None
        or script.endswith(".py")
    ):
        kept = [a for a in parts["interpreter_args"] if a not in ("-u", "-B")]
        projected["interpreter"] = {"name": "python", "args": kept}
    if parts["module"] is not None:
        projected["module"] = parts["module"]
    elif parts["script"] is not None:
        projected["script"] = script_of(parts["script"], command.get("entry"))
    projected["args"] = masked_args(parts["args"], hidden)
    return projected


def framework(info, version):  # as installed, plus (v2) the loaded determinism switches
    out = {k: v for k, v in info.items() if k != "loaded"}
    loaded = info.get("loaded")
    if version < 3 and isinstance(loaded, dict) and isinstance(loaded.get("determinism"), dict):
        out["determinism"] = {k: v for k, v in loaded["determinism"].items() if k != "initial_seed"}
    return out


def environment(sec, version):
    # v3: hash_randomization, which only the running process reads, leaves too
    left_out = [*PER_MACHINE_ENVIRONMENT, *(["hash_randomization"] if version >= 3 else [])]
    out = {k: v for k, v in sec.items() if k not in left_out}
    if isinstance(out.get("kernel"), str):
        m = re.match(r"^([0-9]+\.[0-9]+)", out["kernel"])
        out["kernel"] = m.group(1) if m else out["kernel"]
    if isinstance(out.get("framework"), dict):
        out["framework"] = {
            name: framework(info, version) if isinstance(info, dict) else info
            for name, info in out["framework"].items()
        }
    return out


def hardware(sec):
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if not matches(k, VOLATILE_HARDWARE)}
        return [strip(x) for x in v] if isinstance(v, list) else v

    return strip({k: v for k, v in sec.items() if k != "memory_gb"})


def runtime(sec):
    nodes = [
        {
            "role": n.get("role"),
            "fingerprint": n.get("fingerprint"),
            "resources": {
                k: v
                for k, v in (n.get("resources") or {}).items()
                if not matches(k, VOLATILE_RESOURCES)
            },
        }
        for n in sec.get("nodes") or []
    ]
    return {"mode": sec.get("mode"), "node_count": sec.get("node_count"), "nodes": by_bytes(nodes)}


def data(sec):
    return {
        "datasets": by_bytes(
            {k: v for k, v in d.items() if k not in DATASET_DETAIL}
            for d in sec.get("datasets") or []
        )
    }


PROJECT = {
    "code": code,
    "config": config,
    "training": dict,
    "environment": environment,
    "hardware": hardware,
    "runtime": runtime,
    "data": data,
}
DEFAULTS = {
    "training": {"parallel_topology": {}, "seeds": {}},
    "environment": {"packages": {}},
    "hardware": {"gpus": []},
}


def ignore(v, path, globs):  # dna_ignore: dotted paths through objects, not into lists
    if not isinstance(v, dict):
        return v
    return {
        k: ignore(x, f"{path}.{k}", globs)
        for k, x in v.items()
        if not matches(f"{path}.{k}", globs)
    }


def move(doc, old, new):  # a legacy name to its current place, unless that is taken
    *old_path, old_key = old.split(".")
    *new_path, new_key = new.split(".")
    parent = doc
    for part in old_path:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if not isinstance(parent, dict) or old_key not in parent:
        return
    value = parent.pop(old_key)
    target = doc
    for part in new_path:
        if target.get(part) is None:
            target[part] = {}
        target = target[part]
        if not isinstance(target, dict):
            return
    target.setdefault(new_key, value)


def typed(doc):  # numbers in the fields the schema types as integers or floats
    def as_int(v):
        return int(v) if isinstance(v, float) and v.is_integer() else v

    def as_float(v):
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v

    for section, key in INTEGER_FIELDS:
        if key in doc.get(section, {}):
            doc[section][key] = as_int(doc[section][key])
    training = doc.setdefault("training", {})
    training["parallel_topology"] = {
        k: as_int(v) for k, v in (training.get("parallel_topology") or {}).items()
    }
    for d in (doc.get("data") or {}).get("datasets") or []:
        d.update({k: as_int(d[k]) for k in ("files", "bytes") if k in d})
    for g in (doc.get("hardware") or {}).get("gpus") or []:
        if "memory_gb" in g:
            g["memory_gb"] = as_float(g["memory_gb"])
    for n in (doc.get("runtime") or {}).get("nodes") or []:
        n["resources"] = {k: as_float(v) for k, v in (n.get("resources") or {}).items()}
    return doc


def read(manifest):  # step 1: a copy with legacy names moved and typed numbers read
    doc = json.loads(json.dumps(manifest))
    for old, new in LEGACY_NAMES:
        move(doc, old, new)
    return typed(doc)


def project(name, section, version, doc):
    if name == "code":
        return code(section, version)
    if name == "config":
        return config(section, version, doc)
    if name == "training":  # v3: derived from the arguments, which the command holds
        return dict(section) if version < 3 else {}
    if name == "environment":
        return environment(section, version)
    return PROJECT[name](section)


def dna(manifest, version=3):
    manifest = read(manifest)
    return dna_of_read(manifest, version)


def dna_of_read(manifest, version):
    globs = (manifest.get("config") or {}).get("dna_ignore") or []
    unknown = manifest.get("unknown") or {}  # schema 1.1: sections a collector never finished
    sections = {}
    for name in PROJECT:
        section = {**DEFAULTS.get(name, {}), **(manifest.get(name) or {})}
        projected = drop_nulls(ignore(project(name, section, version, manifest), name, globs))
        if name in unknown:  # the marker, never the reason, wraps what was collected
            projected = {"unknown": True, "partial": projected}
        sections[name] = blake3(jcs(projected)).hexdigest()
    return blake3(jcs({"version": version, "sections": sections})).hexdigest(), sections


def is_seed(k):  # seed, random_seed, *_seed: in any case, with "-" read as "_"
    name = arg_name(k).lstrip("_")
    return name in ("seed", "random_seed") or name.endswith("_seed")


def family(manifest, version=3):  # the DNA with every seed projected out
    manifest = read(manifest)
    config = dict(manifest.get("config") or {})
    config["resolved_args"] = {
        k: v for k, v in (config.get("resolved_args") or {}).items() if not is_seed(k)
    }
    training = dict(manifest.get("training") or {})
    training["seeds"] = {}  # emptied, as a run that recorded no seed
    doc = {**manifest, "config": config, "training": training}
    if version >= 3:  # v3: seedless config-file digests; seed options leave command.argv
        details = config.get("config_file_details") or {}

        def seedless(path):
            found = (details.get(path) or {}).get("seedless_digest")
            return found if isinstance(found, str) else None

        files = config.get("config_files") or {}
        config["config_files"] = {p: seedless(p) or d for p, d in files.items()}
        command = doc.get("command") if isinstance(doc.get("command"), dict) else {}
        argv = command.get("argv")
        if isinstance(argv, list) and all(isinstance(w, str) for w in argv):
            seeds = masked_args(argv, lambda k, _: bool(k) and is_seed(k), hydra=False)
            doc["command"] = {**command, "argv": seeds}
    return dna_of_read(doc, version)[0]


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        doc = json.load(fh)
    stored = doc.get("dna")  # a manifest: {"value": ...}; a test vector: the hex itself
    version = stored.get("version", 3) if isinstance(stored, dict) else doc.get("dna_version", 3)
    if "--dna-version" in sys.argv:
        version = int(sys.argv[sys.argv.index("--dna-version") + 1])
    stored = stored.get("value") if isinstance(stored, dict) else stored
    doc = doc.get("manifest", doc)  # a test vector holds the manifest under "manifest"
    value, sections = dna(doc, version)
    for name, digest in sections.items():
        print(f"{name:<12} {digest}")
    verdict = "" if stored is None else "  = stored" if stored == value else "  != stored"
    print(f"dna          {value}{verdict}")
