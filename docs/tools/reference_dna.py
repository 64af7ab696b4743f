"""DNA v2 from a manifest file, without expdna: only json, math, re, fnmatch, rfc8785, blake3."""

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


def code(sec):
    out = []
    for repo in sec.values():
        patch = repo.get("patch") or {}
        ident = {
            "commit": repo.get("commit"),
            "dirty": repo.get("dirty"),
            "patch": patch.get("digest"),
        }
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


def config(sec):
    args = sec.get("resolved_args") or {}
    # arguments naming a recorded config file: the file's digest stands for them
    file_args = {arg_name(n) for n in sec.get("config_file_args") or [] if isinstance(n, str)}
    roots = [
        as_text(v).rstrip("/") + "/"
        for k, v in args.items()
        if as_text(v) is not None
        and as_text(v) not in TOO_BROAD_ROOTS
        and matches(arg_name(k), PER_RUN_ARGS)
    ]

    def per_run(k, v):
        text = as_text(v)
        return (
            matches(arg_name(k), PER_RUN_ARGS)
            or masked(v)
            or arg_name(k) in file_args
            or (
                text is not None
                and path_like(k)
                and any((text.rstrip("/") + "/").startswith(r) for r in roots)
            )
        )

    return {
        "resolved_args": {k: v for k, v in args.items() if not per_run(k, v)},
        "selected_env": {
            k: v
            for k, v in (sec.get("selected_env") or {}).items()
            if not matches(k, PER_ALLOCATION_ENV) and not masked(v)
        },
        "config_files": sorted((sec.get("config_files") or {}).values()),
    }


def framework(info):  # as installed, plus the loaded framework's determinism switches
    out = {k: v for k, v in info.items() if k != "loaded"}
    loaded = info.get("loaded")
    if isinstance(loaded, dict) and isinstance(loaded.get("determinism"), dict):
        out["determinism"] = {k: v for k, v in loaded["determinism"].items() if k != "initial_seed"}
    return out


def environment(sec):
    out = {k: v for k, v in sec.items() if k not in PER_MACHINE_ENVIRONMENT}
    if isinstance(out.get("kernel"), str):
        m = re.match(r"^([0-9]+\.[0-9]+)", out["kernel"])
        out["kernel"] = m.group(1) if m else out["kernel"]
    if isinstance(out.get("framework"), dict):
        out["framework"] = {
            name: framework(info) if isinstance(info, dict) else info
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


def dna(manifest):
    manifest = read(manifest)
    globs = (manifest.get("config") or {}).get("dna_ignore") or []
    unknown = manifest.get("unknown") or {}  # schema 1.1: sections a collector never finished
    sections = {}
    for name, project in PROJECT.items():
        section = {**DEFAULTS.get(name, {}), **(manifest.get(name) or {})}
        projected = drop_nulls(ignore(project(section), name, globs))
        if name in unknown:  # the marker, never the reason, wraps what was collected
            projected = {"unknown": True, "partial": projected}
        sections[name] = blake3(jcs(projected)).hexdigest()
    return blake3(jcs({"version": 2, "sections": sections})).hexdigest(), sections


def is_seed(k):  # seed, random_seed, *_seed: in any case, with "-" read as "_"
    name = arg_name(k).lstrip("_")
    return name in ("seed", "random_seed") or name.endswith("_seed")


def family(manifest):  # the DNA with every seed projected out
    manifest = read(manifest)
    config = dict(manifest.get("config") or {})
    config["resolved_args"] = {
        k: v for k, v in (config.get("resolved_args") or {}).items() if not is_seed(k)
    }
    training = dict(manifest.get("training") or {})
    if "seeds" in training:
        training["seeds"] = {}  # emptied, as a run that recorded no seed
    return dna({**manifest, "config": config, "training": training})[0]


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        doc = json.load(fh)
    stored = doc.get("dna")  # a manifest: {"value": ...}; a test vector: the hex itself
    stored = stored.get("value") if isinstance(stored, dict) else stored
    doc = doc.get("manifest", doc)  # a test vector holds the manifest under "manifest"
    value, sections = dna(doc)
    for name, digest in sections.items():
        print(f"{name:<12} {digest}")
    verdict = "" if stored is None else "  = stored" if stored == value else "  != stored"
    print(f"dna          {value}{verdict}")
