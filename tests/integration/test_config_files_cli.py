"""Config files through the installed command: nanoGPT, YAML, DeepSpeed, TOML, Hydra, secrets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from blake3 import blake3

from tests.factories import EXPDNA, git

HF = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"
HF_ROTATED = "hf_" + "zY9xW7vU5tS3rQ1pN9mL7kJ5hG3fE1dC9b"


def expdna(cwd: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EXPDNA_STORE": str(store)}
    env.pop("EXPDNA_INDEX_URL", None)
    return subprocess.run(
        [EXPDNA, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


def generate(cwd: Path, store: Path, output: Path, *argv: str) -> dict[str, Any]:
    done = expdna(cwd, store, "generate", "--record", "-o", str(output), "--", *argv)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(output.read_text()))


def details(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found = [d for d in doc["config"]["config_file_details"].values() if d["name"] == name]
    assert len(found) == 1, doc["config"]["config_file_details"]
    return dict(found[0])


def test_nanogpt_python_configs_inside_and_outside_the_checkout(repo: Path, tmp_path: Path) -> None:
    (repo / "config").mkdir()
    (repo / "config" / "train_shakespeare_char.py").write_text(
        "out_dir = 'out-shakespeare-char'\nbatch_size = 64\nlearning_rate = 1e-3\n"
    )
    git(repo, "add", "config")
    git(repo, "commit", "-q", "-m", "config")
    shared = tmp_path / "shared"
    shared.mkdir()
    mine = shared / "my_run.py"
    mine.write_text("learning_rate = 6e-4  # tuned\ngradient_accumulation_steps = 5 * 8\n")
    store = tmp_path / "store"
    argv = ["python", "train.py", "config/train_shakespeare_char.py", str(mine)]
    a = generate(repo, store, tmp_path / "a.json", *argv, "--batch_size=12")
    files = a["config"]["config_files"]
    assert set(files) == {str(repo / "config" / "train_shakespeare_char.py"), str(mine)}
    assert a["config"]["config_values"]["my_run.py"] == {
        "learning_rate": 6e-4,
        "gradient_accumulation_steps": 40,
    }
    assert details(a, "my_run.py")["text"].startswith("learning_rate = 6e-4")
    assert a["training"]["micro_batch_size"] == 12  # argv beats the config files
    # nanoGPT counts every rank in its accumulation: 12 x 40 samples per step
    assert a["training"]["global_batch_size"] == 480
    assert a["training"]["gradient_accumulation_steps"] == 40

    # moved elsewhere: the same DNA; edited: a new one, and diff names the key
    moved = tmp_path / "elsewhere" / "my_run.py"
    moved.parent.mkdir()
    moved.write_text(mine.read_text())
    argv[-1] = str(moved)
    b = generate(repo, store, tmp_path / "b.json", *argv, "--batch_size=12")
    assert b["dna"]["value"] == a["dna"]["value"]
    moved.write_text("learning_rate = 3e-4\ngradient_accumulation_steps = 5 * 8\n")
    c = generate(repo, store, tmp_path / "c.json", *argv, "--batch_size=12")
    assert c["dna"]["sections"]["config"] != a["dna"]["sections"]["config"]
    assert {k: v for k, v in c["dna"]["sections"].items() if k != "config"} == {
        k: v for k, v in a["dna"]["sections"].items() if k != "config"
    }
    done = expdna(repo, store, "diff", str(tmp_path / "b.json"), str(tmp_path / "c.json"))
    assert done.returncode == 1
    # The file's changed key, under the in-DNA change of its digest.
    assert "config.config_files[my_run.py]: " in done.stdout
    assert "\n    learning_rate: 0.0006 -> 0.0003\n" in done.stdout


def test_yaml_deepspeed_and_toml_files(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text("optimizer:\n  lr: 0.0003\ntrainer:\n  seed: 7\n")
    (tmp_path / "ds_config.json").write_text(
        json.dumps(
            {
                "train_micro_batch_size_per_gpu": 8,
                "gradient_accumulation_steps": 4,
                "bf16": {"enabled": True},
                "zero_optimization": {"stage": 3},
            }
        )
    )
    (tmp_path / "model.toml").write_text('[model]\nlayers = 12\nname = "gpt2"\n')
    doc = generate(
        tmp_path,
        tmp_path / "store",
        tmp_path / "m.json",
        "deepspeed",
        "train.py",
        "--config",
        "exp.yaml",
        "--deepspeed",
        "ds_config.json",
        "--model=model.toml",
    )
    config = doc["config"]
    assert config["config_values"] == {
        "exp.yaml": {"optimizer": {"lr": 0.0003}, "trainer": {"seed": 7}},
        "ds_config.json": {
            "train_micro_batch_size_per_gpu": 8,
            "gradient_accumulation_steps": 4,
            "bf16": {"enabled": True},
            "zero_optimization": {"stage": 3},
        },
        "model.toml": {"model": {"layers": 12, "name": "gpt2"}},
    }
    assert [details(doc, n)["source"] for n in ("exp.yaml", "ds_config.json", "model.toml")] == [
        "--config",
        "--deepspeed",
        "argument",
    ]
    assert config["config_file_args"] == ["config", "deepspeed", "model"]
    assert {k: doc["training"][k] for k in ("micro_batch_size", "precision", "seeds")} == {
        "micro_batch_size": 8,
        "precision": "bf16",
        "seeds": {"seed": 7},
    }
    assert doc["training"]["gradient_accumulation_steps"] == 4
    assert doc["collection"]["collectors"]["config_files"]["status"] == "ok"


def test_a_secret_in_a_config_is_redacted_in_manifest_and_blob(tmp_path: Path) -> None:
    store = tmp_path / "store"
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"hub:\n  token: {HF}\ndb:\n  password: hunter2\nlr: 0.1\n")
    a = generate(tmp_path, store, tmp_path / "a.json", "python", "t.py", "--config", "exp.yaml")
    raw = (tmp_path / "a.json").read_text()
    assert HF not in raw and "hunter2" not in raw
    record = details(a, "exp.yaml")
    assert "hf_***" in record["text"]
    assert a["config"]["config_values"]["exp.yaml"]["db"]["password"] == "***"
    # the store keeps the redacted text as a blob whose name is its BLAKE3
    hex_digest = record["digest"].removeprefix("blake3:")
    blob = (store / "objects" / hex_digest[:2] / hex_digest[2:]).read_bytes()
    assert blob.decode() == record["text"]
    assert blake3(blob).hexdigest() == hex_digest
    stored = expdna(tmp_path, store, "show", a["run_id"], "--manifest")
    assert stored.returncode == 0, stored.stderr
    assert "text" not in details(json.loads(stored.stdout), "exp.yaml")
    inline = expdna(tmp_path, store, "show", a["run_id"], "--inline")
    assert details(json.loads(inline.stdout), "exp.yaml")["text"] == record["text"]
    assert HF not in inline.stdout
    # a rotated secret is the same setup
    exp.write_text(f"hub:\n  token: {HF_ROTATED}\ndb:\n  password: swordfish\nlr: 0.1\n")
    b = generate(tmp_path, store, tmp_path / "b.json", "python", "t.py", "--config", "exp.yaml")
    assert b["dna"]["value"] == a["dna"]["value"]


def test_find_runs_and_diff_name_a_key_inside_a_yaml_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    exp = tmp_path / "exp.yaml"
    runs = []
    for lr in ("0.1", "0.2"):
        exp.write_text(f"optimizer:\n  lr: {lr}\n  name: adamw\n")
        out = tmp_path / f"m{lr}.json"
        runs.append(generate(tmp_path, store, out, "python", "t.py", "--config", "exp.yaml"))
    where = "config.config_values.exp.yaml.optimizer.lr=0.2"
    found = expdna(tmp_path, store, "find", "--where", where, "--json")
    assert found.returncode == 0, found.stderr
    assert [r["run_id"] for r in json.loads(found.stdout)] == [runs[1]["run_id"]]
    listed = expdna(tmp_path, store, "runs", "--where", where, "--json")
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [runs[1]["run_id"]]
    both = expdna(
        tmp_path, store, "find", "--where", "config.config_values.exp.yaml.optimizer.name=adamw"
    )
    assert both.returncode == 0 and both.stdout.count("\n") >= 2
    done = expdna(tmp_path, store, "diff", runs[0]["run_id"], runs[1]["run_id"])
    assert done.returncode == 1
    assert "\n    optimizer.lr: 0.1 -> 0.2\n" in done.stdout
    assert "config      != " in done.stdout and "training    =  " in done.stdout
    # export: the key as a column
    parquet = tmp_path / "runs.parquet"
    column = "config.config_values.exp.yaml.optimizer.lr"
    done = expdna(tmp_path, store, "export", "--parquet", str(parquet), "--column", column)
    assert done.returncode == 0, done.stderr
    table = pq.read_table(parquet).to_pydict()
    # two runs of the same second: oldest-first order between them is not defined
    assert dict(zip(table["run_id"], table[column], strict=True)) == {
        runs[0]["run_id"]: "0.1",
        runs[1]["run_id"]: "0.2",
    }
    bad = expdna(tmp_path, store, "export", "--parquet", str(parquet), "--column", "a..b")
    assert bad.returncode == 2 and "expected a dotted manifest path" in bad.stderr


def test_a_config_that_cannot_be_read_leaves_the_section_unknown(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "exp.yaml")  # opening it to read would block forever
    done = expdna(
        tmp_path,
        tmp_path / "store",
        "generate",
        "--json",
        "-o",
        "m.json",
        "--",
        "python",
        "t.py",
        "--config",
        "exp.yaml",
    )
    assert done.returncode == 0, done.stderr
    reason = (
        f"collector config_files partial: config file {tmp_path / 'exp.yaml'}: "
        "not a regular file (a FIFO)"
    )
    assert json.loads(done.stdout)["unknown"] == {"config": reason}
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["unknown"] == {"config": reason}
    assert "Traceback" not in done.stderr


HYDRA_APP = """
    import hydra
    from hydra.core.hydra_config import HydraConfig

    import expdna


    @hydra.main(version_base=None, config_path="conf", config_name="config")
    def main(cfg):
        expdna.start(cfg, output_dir=HydraConfig.get().runtime.output_dir).finish()


    main()
"""


def test_hydra_app_composed_from_two_config_groups(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    for group, option, text in (
        ("db", "mysql", "driver: mysql\nport: 3306\n"),
        ("db", "postgres", "driver: postgresql\nport: 5432\n"),
        ("model", "small", "layers: 6\n"),
        ("model", "large", "layers: 24\n"),
    ):
        (conf / group).mkdir(parents=True, exist_ok=True)
        (conf / group / f"{option}.yaml").write_text(text)
    (conf / "config.yaml").write_text(
        "defaults:\n  - db: mysql\n  - model: small\n  - _self_\n"
        "training:\n  batch_size: 32\n  seed: 3\n  lr: 0.001\n  warmup_lr: ${training.lr}\n"
    )
    (tmp_path / "app.py").write_text(textwrap.dedent(HYDRA_APP))

    def run(out: str, *overrides: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "app.py", *overrides, f"hydra.run.dir={out}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")},
        )
        assert done.returncode == 0, done.stderr
        (manifest,) = (tmp_path / out).glob("manifest_*.json")
        return dict(json.loads(manifest.read_text()))

    a = run("out/a", "db=postgres", "model=large", "model.layers=12")
    config = a["config"]
    composed = {
        "db": {"driver": "postgresql", "port": 5432},
        "model": {"layers": 12},
        "training": {"batch_size": 32, "seed": 3, "lr": 0.001, "warmup_lr": 0.001},
    }
    assert config["resolved_args"] == composed
    assert config["hydra"] == {
        "config_name": "config",
        "overrides": ["db=postgres", "model=large", "model.layers=12"],
    }
    saved = str(tmp_path / "out" / "a" / ".hydra" / "config.yaml")
    # the files Hydra composed, in its order (read from @hydra.main and the defaults list),
    # then the config it saved
    assert list(config["config_files"]) == [
        *(str(conf / f) for f in ("db/postgres.yaml", "model/large.yaml", "config.yaml")),
        saved,
    ]
    details = config["config_file_details"]
    assert details[str(conf / "db/postgres.yaml")]["hydra_group"] == "db"
    assert config["config_values"][".hydra/config.yaml"] == composed
    assert config["config_values"]["db/postgres.yaml"] == {"driver": "postgresql", "port": 5432}
    assert a["training"]["global_batch_size"] == 32 and a["training"]["seeds"] == {"seed": 3}
    # an app that changes directory into its output folder: the same files, found from
    # where it started
    moved = run("out/d", "db=postgres", "model=large", "hydra.job.chdir=True")
    assert str(conf / "db/postgres.yaml") in moved["config"]["config_files"]
    # the same overrides in another output directory: the same DNA; another group: a new one
    b = run("out/b", "db=postgres", "model=large", "model.layers=12")
    assert b["dna"]["value"] == a["dna"]["value"]
    c = run("out/c", "db=mysql", "model=large", "model.layers=12")
    assert c["dna"]["sections"]["config"] != a["dna"]["sections"]["config"]
