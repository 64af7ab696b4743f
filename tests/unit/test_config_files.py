"""The config-files collector: which argv words are config files, safe parsing, bad files."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from expdna.collectors.config_files import TEXT_MAX, _record, collect_config_files
from expdna.collectors.config_find import READ_MAX, Candidate, find_config_files
from expdna.collectors.config_parse import jsonable, parse_text
from expdna.collectors.context import CollectContext, NotAvailable, Unknown
from expdna.collectors.pyconfig import read_python_config
from expdna.collectors.training import collect_training


def ctx(cwd: Path, *argv: str, **kwargs: Any) -> CollectContext:
    return CollectContext(argv=argv, cwd=cwd, environ={}, **kwargs)


def names(found: list[Candidate]) -> list[tuple[str, str, str | None]]:
    return [(c.path.name, c.source, c.arg) for c in found]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name in ("a.yaml", "b.json", "c.toml", "d.ini", "e.cfg", "cfg.py", "train.py", "ds"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "dir.yaml").mkdir()
    return tmp_path


def test_positional_option_and_equals_forms(files: Path) -> None:
    found = find_config_files(
        ctx(
            files,
            "python",
            "-u",
            "train.py",
            "cfg.py",
            "a.yaml",
            "--data=b.json",
            "-c",
            "c.toml",
            "--deepspeed",
            "ds",
            "d.ini",
            "--cfg=e.cfg",
            "dir.yaml",
            "missing.yaml",
            "--batch_size=12",
        )
    )
    assert names(found) == [
        ("cfg.py", "argument", None),
        ("a.yaml", "argument", None),
        ("b.json", "argument", "data"),
        ("c.toml", "-c", "c"),
        ("ds", "--deepspeed", "deepspeed"),
        ("d.ini", "argument", None),
        ("e.cfg", "--cfg", "cfg"),
    ]


def test_the_entry_script_is_code_not_config(files: Path) -> None:
    assert names(find_config_files(ctx(files, "train.py", "cfg.py"))) == [
        ("cfg.py", "argument", None)
    ]
    # a launcher: the first .py is the script
    found = find_config_files(ctx(files, "torchrun", "--nproc-per-node", "2", "train.py", "cfg.py"))
    assert names(found) == [("cfg.py", "argument", None)]
    found = find_config_files(
        ctx(files, "python", "-m", "torch.distributed.run", "train.py", "cfg.py")
    )
    assert names(found) == [("cfg.py", "argument", None)]
    # a launcher's own config counts: accelerate launch --config_file acc.yaml train.py
    found = find_config_files(
        ctx(files, "accelerate", "launch", "--config_file", "a.yaml", "train.py", "-c", "b.json")
    )
    assert names(found) == [("a.yaml", "--config_file", "config_file"), ("b.json", "-c", "c")]
    # the hook's caller is never its own config, and a .py option value is not a config
    found = find_config_files(ctx(files, "cfg.py", "--model", "train.py", caller_file=Path("x")))
    assert found == []


def test_outputs_and_data_files_are_not_config(files: Path) -> None:
    data = files / "train.json"
    with open(data, "wb") as fh:
        fh.truncate(READ_MAX + 1)
    (files / "out").mkdir()
    (files / "out" / "args.yaml").write_text("lr: 1\n")
    found = find_config_files(
        ctx(
            files,
            "train.py",
            "--train_file",
            "train.json",  # data: too large to be a config
            "--log-file",
            "a.yaml",  # a per-run argument: the run's output
            "--output_dir",
            "out",
            "out/args.yaml",  # under the run's output directory
            "--config",
            "train.json",  # named as a config: recorded (as unknown, being too large)
        )
    )
    assert names(found) == [("train.json", "--config", "config")]
    # an output directory at or above the working directory does not hide the configs
    found = find_config_files(ctx(files, "train.py", "a.yaml", "--output_dir", "."))
    assert names(found) == [("a.yaml", "argument", None)]


def test_hydra_primary_config(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "exp.yaml").write_text("lr: 1\n")
    found = find_config_files(
        ctx(tmp_path, "python", "app.py", "--config-path", "conf", "--config-name", "exp", "a=1")
    )
    assert names(found) == [("exp.yaml", "--config-name", "config_path")]


@pytest.mark.parametrize(
    ("fmt", "text", "values"),
    [
        ("yaml", "a:\n  b: [1, 2]\nwhen: 2024-01-02\n", {"a": {"b": [1, 2]}, "when": "2024-01-02"}),
        ("json", '{"a": {"b": 1.5}}', {"a": {"b": 1.5}}),
        (
            "toml",
            "[opt]\nlr = 3e-4\nbetas = [0.9, 0.95]\n",
            {"opt": {"lr": 3e-4, "betas": [0.9, 0.95]}},
        ),
        (
            "ini",
            "[DEFAULT]\nx = 1\n[train]\nlr = 0.1\n",
            {"x": "1", "train": {"x": "1", "lr": "0.1"}},
        ),
    ],
)
def test_safe_loaders(fmt: str, text: str, values: Any) -> None:
    assert jsonable(parse_text(text, fmt)) == values


def test_yaml_never_builds_python_objects() -> None:
    with pytest.raises(ValueError, match="YAML"):
        parse_text("x: !!python/object/apply:os.system ['true']\n", "yaml")


def test_python_configs_are_read_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = (
        "# nanoGPT style\n"
        "import os\n"
        f"open({str(marker)!r}, 'w')\n"
        "out_dir = 'out-shakespeare-char'\n"
        "gradient_accumulation_steps = 5 * 8\n"
        "learning_rate = 6e-4 # comment\n"
        "betas = (0.9, 0.95)\n"
        "eps = -1e-8\n"
        "name = 'a' 'b'\n"
        "opts = {'x': [1, 2], 'y': None, 'z': True}\n"
        "wandb_run_name = 'ft-' + str(time.time())\n"
        "if True:\n"
        "    hidden = 1\n"
    )
    values, skipped = read_python_config(text)
    assert values == {
        "out_dir": "out-shakespeare-char",
        "gradient_accumulation_steps": 40,
        "learning_rate": 6e-4,
        "betas": [0.9, 0.95],
        "eps": -1e-8,
        "name": "ab",
        "opts": {"x": [1, 2], "y": None, "z": True},
    }
    assert skipped == ["wandb_run_name"]
    assert not marker.exists()
    assert read_python_config("x = 'a' * 10**9\n") == ({}, ["x"])


def test_yaml_alias_bomb_is_bounded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(ValueError, match="too large"):
        jsonable(parse_text("\n".join(lines) + "\n", "yaml"))


def record(path: Path) -> tuple[dict[str, Any], Any, str | None]:
    return _record(Candidate(path, "--config", "config"), deadline=float("inf"))


def test_bad_files_are_unknown_with_a_reason(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    binary = tmp_path / "model.json"
    binary.write_bytes(b"\x00\x01\x02")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as fh:
        fh.truncate(READ_MAX + 1)  # sparse: costs no disk
    reasons = {
        "fifo": record(fifo)[2],
        "binary": record(binary)[2],
        "latin": record(latin)[2],
        "huge": record(huge)[2],
        "vanished": record(tmp_path / "gone.yaml")[2],
        # a regular file whose read fails (EIO at offset 0)
        "unreadable": record(Path("/proc/self/mem"))[2],
    }
    assert reasons == {
        "fifo": f"config file {fifo}: not a regular file (a FIFO)",
        "binary": f"config file {binary}: binary (holds NUL bytes), not a config file",
        "latin": f"config file {latin}: not UTF-8 text (byte 9)",
        "huge": f"config file {huge}: too large for a config file "
        f"({READ_MAX + 1} bytes > {READ_MAX})",
        "vanished": f"config file {tmp_path / 'gone.yaml'}: vanished before it could be read",
        "unreadable": "config file /proc/self/mem: unreadable: Input/output error",
    }


def test_an_unreadable_file_makes_the_section_unknown(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text("lr: 1\n")
    os.mkfifo(tmp_path / "bad.yaml")
    with pytest.raises(Unknown) as caught:
        collect_config_files(ctx(tmp_path, "train.py", "ok.yaml", "--config", "bad.yaml"))
    section = caught.value.section
    assert list(section["config_files"]) == [str(tmp_path / "ok.yaml")]
    assert section["config_file_details"][str(tmp_path / "bad.yaml")]["unknown"] == (
        "not a regular file (a FIFO)"
    )
    assert "bad.yaml: not a regular file" in caught.value.reason
    with pytest.raises(NotAvailable):
        collect_config_files(ctx(tmp_path, "train.py", "--lr", "1"))


def test_large_and_unparseable_files_count_by_digest(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("k: " + "v" * TEXT_MAX + "\n")
    details, values, why = record(big)
    assert why is None and values is None and details["truncated"] is True
    assert "text" not in details and details["digest"].startswith("blake3:")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    details, values, why = record(broken)
    assert why is None and values is None and details["text"] == "{not json"
    assert details["parse_error"].startswith("JSON: Expecting property name")


def test_without_pyyaml_yaml_counts_by_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # what an environment without PyYAML has
    with pytest.raises(ValueError, match="PyYAML is not installed"):
        parse_text("a: 1\n", "yaml")


def test_names_of_values_stay_short_and_unique(tmp_path: Path) -> None:
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "config.yaml").write_text(f"who: {sub}\n")
    section = collect_config_files(ctx(tmp_path, "x", "a/config.yaml", "b/config.yaml"))
    assert section["config_values"] == {
        "a/config.yaml": {"who": "a"},
        "b/config.yaml": {"who": "b"},
    }


def test_training_fields_come_from_config_files_below_argv(tmp_path: Path) -> None:
    (tmp_path / "base.py").write_text("batch_size = 64\nseed = 1\ndtype = 'bfloat16'\n")
    (tmp_path / "ds.json").write_text(
        json.dumps({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8})
    )
    (tmp_path / "exp.yaml").write_text("trainer:\n  seed: 7\n  shuffle_seed: 2\n")
    argv = ("python", "train.py", "base.py", "--deepspeed", "ds.json", "-c", "exp.yaml")
    section = collect_training(ctx(tmp_path, *argv, "--batch_size=12"))
    assert section == {
        "global_batch_size": 32,  # 4 per device x 8 steps x 1 process (batch_size is not used)
        "micro_batch_size": 4,
        "gradient_accumulation_steps": 8,
        "seeds": {"seed": 7, "shuffle_seed": 2},
        "precision": "bfloat16",
    }
    (tmp_path / "ds.json").write_text(json.dumps({"bf16": {"enabled": True}}))
    assert collect_training(ctx(tmp_path, "train.py", "--deepspeed", "ds.json")) == {
        "precision": "bf16"
    }


def test_a_dictconfig_is_recorded_resolved() -> None:
    from omegaconf import OmegaConf

    from expdna.integrations.args import resolved_args

    cfg = OmegaConf.create(
        {"lr": 0.1, "warmup": "${lr}", "layers": [1, "${lr}"], "db": {"port": 1}, "must": "???"}
    )
    assert resolved_args(cfg) == {
        "lr": 0.1,
        "warmup": 0.1,
        "layers": [1, 0.1],
        "db": {"port": 1},
        "must": "???",
    }
    # an interpolation without its resolver: recorded as written, never an exception
    assert resolved_args(OmegaConf.create({"x": "${oc.nothing:1}"})) == {"x": "${oc.nothing:1}"}


def test_import_expdna_loads_no_config_parser() -> None:
    import subprocess

    code = (
        "import sys, expdna, expdna.cli, expdna.collectors;"
        "print([m for m in ('yaml', 'omegaconf', 'hydra', 'tomllib') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_config_texts_leave_the_file_form_first_and_move_to_blobs(tmp_path: Path) -> None:
    from expdna.api import collect
    from expdna.manifest.io import MAX_WRITE_BYTES, fit_to_cap
    from expdna.store.record.storeform import to_file_form, to_store_form

    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("".join(f"{name[0]}{i}: {i}\n" for i in range(9000)))
    manifest = collect(
        ["python", "t.py", "a.yaml", "b.yaml"], cwd=tmp_path, collectors=["config_files"]
    )
    data, shrunk = fit_to_cap(manifest)
    assert len(data) <= MAX_WRITE_BYTES
    assert shrunk == [
        f"config.config_file_details.{tmp_path / n}.text" for n in ("a.yaml", "b.yaml")
    ]
    written = json.loads(data)["config"]["config_file_details"]
    assert all(d["text"] is None and d["truncated"] for d in written.values())
    # in a store the texts are blobs, and the file form gets them back
    form = to_store_form(manifest.to_dict())
    assert all("text" not in d for d in form.doc["config"]["config_file_details"].values())
    assert len(form.patches) == 2
    restored = to_file_form(form.doc, lambda digest: form.patches[digest])
    assert restored == manifest.to_dict()


def test_seed_keys_in_a_config_file_leave_the_family_digest(tmp_path: Path) -> None:
    """``--config exp.yaml`` runs that differ only in the file's seed are one family."""
    import expdna
    from expdna.manifest.family import family_of

    runs = []
    for seed in (1, 2):
        folder = tmp_path / f"s{seed}"
        folder.mkdir()
        (folder / "exp.yaml").write_text(f"lr: 0.1\ntrainer:\n  seed: {seed}\n")
        runs.append(
            expdna.collect(
                ["python", "train.py", "--config", "exp.yaml"],
                cwd=folder,
                collectors=["command", "config", "config_files"],
            )
        )
    details = next(iter(runs[0].config.config_file_details.values()))
    assert details.model_dump()["seedless_digest"].startswith("blake3:")
    assert runs[0].dna is not None and runs[1].dna is not None
    assert runs[0].dna.value != runs[1].dna.value
    assert family_of(runs[0]) == family_of(runs[1])


def test_a_local_model_directory_counts_by_its_config_json(tmp_path: Path) -> None:
    from expdna.api import collect

    def model(name: str, layers: int) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"num_hidden_layers": layers}))
        (folder / "model.safetensors").write_bytes(b"\0" * 64)  # weights: not config
        return folder

    one, two, moved = model("one", 1), model("two", 2), model("elsewhere", 1)

    def config_digest(*words: str) -> str:
        argv = ["python", "run_glue.py", *words, "--lr", "0.1"]
        found = collect(argv, cwd=tmp_path, collectors=["command", "config", "config_files"])
        assert found.dna is not None
        return found.dna.sections["config"]

    for flag in ("--model_name_or_path", "--model-path", "--config_name"):
        assert config_digest(flag, str(one)) != config_digest(flag, str(two)), flag
        assert config_digest(flag, str(one)) == config_digest(f"{flag}={moved}"), flag
    files = collect(
        ["python", "run_glue.py", "--model_name_or_path", "one"],
        cwd=tmp_path,
        collectors=["config_files"],
    ).config.model_dump()
    assert list(files["config_files"]) == [str(one / "config.json")]
    assert files["config_file_args"] == ["model_name_or_path"]
    # A hub name is no directory: it stays a word of the command.
    assert config_digest("--model_name_or_path", "bert-base-uncased") != config_digest(
        "--model_name_or_path", "bert-large-uncased"
    )
