"""Hydra composition read statically: the files found equal the files Hydra composes.

Hydra itself (hydra-core, in the test extra) is the oracle: its own defaults-list
algorithm (``compute_defaults_list``, what ``compose`` uses) names the configs, which are
mapped to the files in the config directories, in Hydra's composition order.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from expdna.collectors.config_find import find_config_files
from expdna.collectors.context import CollectContext
from expdna.collectors.hydra_compose import compose_files
from expdna.collectors.hydra_entry import read_hydra_main
from expdna.collectors.training import collect_training

TEMPLATE = Path(__file__).parent.parent / "data" / "hydra_template"


def hydra_composes(conf: Path, name: str | None, overrides: list[str]) -> list[str]:
    """The files of ``conf`` that Hydra composes, in its order (Hydra's own configs left
    out: they are part of the installed package)."""
    pytest.importorskip("hydra")
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    with initialize_config_dir(version_base="1.3", config_dir=str(conf)):
        loader = GlobalHydra.instance().config_loader()
        found = loader.compute_defaults_list(name, overrides, RunMode.RUN)
        sources = [Path(s.path) for s in loader.get_sources() if s.scheme() == "file"]
    own = Path(__import__("hydra").__file__).parent / "conf"
    files: list[str] = []
    for result in found.defaults:
        name_ = f"{result.config_path.removesuffix('.yaml')}.yaml"
        if (own / name_).is_file():
            continue
        where = next((s / name_ for s in sources if (s / name_).is_file()), None)
        if where is not None and os.path.realpath(where) not in files:
            files.append(os.path.realpath(where))
    return files


def ours(cwd: Path, entry: str, words: list[str]) -> tuple[list[str], list[str]]:
    composition = compose_files(cwd, entry, words)
    assert composition is not None
    return [os.path.realpath(f.path) for f in composition.files], composition.warnings


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["trainer=cpu"],
        ["trainer=gpu", "model=mnist", "seed=3", "model.optimizer.lr=0.01"],
        ["experiment=example"],  # overrides /data, /model, /trainer and nested model/optimizer
        ["experiment=example", "trainer=cpu"],  # the command line beats the experiment
        ["logger=many_loggers", "debug=fdr"],  # defaults lists inside group files
        ["~callbacks"],
        ["callbacks=none", "logger=[csv,tensorboard]"],
        ["+profiler=simple", "hparams_search=mnist_grid", "model/optimizer=sgd"],
        ["data='cifar'", "debug=default"],
    ],
)
def test_the_template_composes_as_hydra_composes_it(overrides: list[str]) -> None:
    found, warnings = ours(TEMPLATE, "src/train.py", overrides)
    assert found == hydra_composes(TEMPLATE / "configs", "train", overrides)
    assert warnings == []


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


APP = {
    "app.py": """
        import hydra

        @hydra.main(config_path="conf", config_name="config", version_base=None)
        def main(cfg):
            pass
    """,
    "conf/config.yaml": """
        defaults:
          - db: mysql
          - db@backup: sqlite
          - server: apache
          - dataset: imagenet
          - dataset_model: ${dataset}_${server}
          - optional site: missing
          - override hydra/job_logging: custom
          - _self_
        name: app
    """,
    "conf/db/mysql.yaml": "driver: mysql\n",
    "conf/db/postgres.yaml": "driver: postgres\n",
    "conf/db/sqlite.yaml": "driver: sqlite\n",
    "conf/server/apache.yaml": """
        # @package _global_
        defaults:
          - cache: [redis, memcached]
          - /db@server_db: postgres
          - _self_
        port: 80
    """,
    "conf/server/nginx.yaml": "port: 8080\n",
    "conf/server/cache/redis.yaml": "size: 1\n",
    "conf/server/cache/memcached.yaml": "size: 2\n",
    "conf/dataset/imagenet.yaml": "size: 1000\n",
    "conf/dataset/cifar.yaml": "size: 10\n",
    "conf/dataset_model/imagenet_apache.yaml": "lr: 0.1\n",
    "conf/dataset_model/cifar_nginx.yaml": "lr: 0.2\n",
    "conf/hydra/job_logging/custom.yaml": "version: 1\n",
}


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["db=postgres", "db@backup=mysql"],  # a package's own choice
        ["server=nginx", "dataset=cifar"],  # the interpolated default follows both
        ["~db@backup"],
        ["~db=mysql", "server/db@server_db=mysql"],
        ["+db@extra=sqlite"],
        ["hydra/job_logging=stdout"],  # Hydra's own option: nothing of ours
    ],
)
def test_packages_lists_interpolation_and_hydra_groups(
    tmp_path: Path, overrides: list[str]
) -> None:
    root = _tree(tmp_path, APP)
    found, warnings = ours(root, "app.py", overrides)
    assert found == hydra_composes(root / "conf", "config", overrides)
    assert warnings == []


def test_the_search_path_command_line_dir_and_config_path_outside(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo", {"app.py": APP["app.py"]})
    shared = _tree(tmp_path / "shared", {k[5:]: v for k, v in APP.items() if k != "app.py"})
    extra = _tree(tmp_path / "extra", {"db/oracle.yaml": "driver: oracle\n"})
    words = ["-cp", str(shared), "-cd", "../extra", "db=oracle"]
    found, _ = ours(root, "app.py", words)
    assert os.path.realpath(shared / "config.yaml") in found
    assert os.path.realpath(extra / "db" / "oracle.yaml") in found
    # hydra.searchpath (command line) adds a folder as --config-dir does
    found, _ = ours(root, "app.py", ["-cp", str(shared), f"hydra.searchpath=[file://{extra}]"])
    expected = hydra_composes(shared, "config", [f"hydra.searchpath=[file://{extra}]"])
    assert found == expected
    # --config-path relative: to the script's folder, as Hydra has it (not the cwd)
    sub = tmp_path / "repo" / "src"
    sub.mkdir()
    shutil.move(str(root / "app.py"), sub / "app.py")
    found, _ = ours(root, "src/app.py", ["--config-path=../../shared", "--config-name", "config"])
    assert os.path.realpath(shared / "config.yaml") in found


def test_missing_options_warn_and_never_raise(tmp_path: Path) -> None:
    root = _tree(tmp_path, APP)
    found, warnings = ours(root, "app.py", ["db=nosuch", "+dataset_model=also_missing"])
    assert os.path.realpath(root / "conf" / "config.yaml") in found
    assert any("db/nosuch not found" in w for w in warnings)
    (root / "conf" / "server" / "apache.yaml").write_text("defaults: {a: 1}\n")
    _, warnings = ours(root, "app.py", [])
    assert any("defaults is not a list" in w for w in warnings)
    # a defaults list that includes itself stops at the bound
    (root / "conf" / "server" / "apache.yaml").write_text("defaults:\n  - /server: apache\n")
    _, warnings = ours(root, "app.py", [])
    assert any("the rest not read" in w for w in warnings)


def test_hydra_main_is_read_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(
        f"open({str(marker)!r}, 'w')\n"
        "from hydra import main as hydra_main\n"
        "@hydra_main('../configs', 'train', version_base='1.3')\n"
        "def run(cfg): pass\n"
    )
    main = read_hydra_main(script)
    assert main is not None and not marker.exists()
    assert (main.config_path, main.config_name, main.version_base) == ("../configs", "train", "1.3")
    script.write_text("import hydra as h\nmain = h.main(config_path=CONF, config_name='x')(f)\n")
    main = read_hydra_main(script)
    assert main is not None and isinstance(main.config_path, ValueError)
    assert main.config_name == "x"
    script.write_text("import hydra\nprint('no app here')\n")
    assert read_hydra_main(script) is None
    script.write_text("def broken(:\n hydra.main\n")
    assert read_hydra_main(script) is None


def test_not_a_hydra_app_reads_nothing(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"train.py": "import sys\n", "db/x.yaml": "a: 1\n"})
    assert compose_files(root, "train.py", ["db=x", "lr=0.1"]) is None


def test_config_files_of_a_template_outside_the_checkout(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(TEMPLATE / "src", repo / "src")
    shared = tmp_path / "sharedcfg"
    shutil.copytree(TEMPLATE / "configs", shared)
    ctx = CollectContext(
        argv=("python", "src/train.py", "--config-path", str(shared), "trainer=cpu"),
        cwd=repo,
        environ={},
    )
    found = {c.hydra_config: c for c in find_config_files(ctx)}
    assert found["train.yaml"].source == "--config-name"
    assert found["train.yaml"].arg == "config_path"
    short = CollectContext(argv=("src/train.py", "-cp", str(shared)), cwd=repo, environ={})
    assert [c.arg for c in find_config_files(short) if c.source == "--config-name"] == ["cp"]
    # -cp names the config folder, not context parallelism; the group files give the batch
    training = collect_training(short)
    assert "context" not in training.get("parallel_topology", {})
    assert training["micro_batch_size"] == 128  # data/mnist.yaml
    assert found["trainer/cpu"].hydra_group == "trainer"
    assert found["model/optimizer/adam"].hydra_group == "model/optimizer"
    assert found["callbacks/model_checkpoint"].hydra_group is None
    assert found["model/mnist"].path == shared / "model" / "mnist.yaml"
    assert found["trainer/cpu"].source == "hydra-defaults"


@pytest.mark.parametrize(
    "text",
    [
        "defaults:\n  - 5\n  - null\n  - {}\n  - {db: 1}\n  - {db: [1, 2]}\n  - /\n  - '@'\n",
        "defaults: 3\n",
        "- a\n- b\n",
        "defaults:\n  - db: ${nope}\n  - db@x: ???\n",
        "defaults:\n  - db: [a, '${x}']\n  - ../../../etc/hostname\n",
        "!!python/object/apply:os.system ['true']\n",
        "defaults:\n  - override db: mysql\n",  # overrides only: the primary still counts
    ],
)
def test_hostile_defaults_lists_warn_and_never_raise(tmp_path: Path, text: str) -> None:
    root = _tree(tmp_path, {"app.py": APP["app.py"], "conf/db/mysql.yaml": "a: 1\n"})
    (root / "conf" / "config.yaml").write_text(text)
    words = ["+db@y=[mysql]", "db='", "db=[", "db=choice(a,b)", "~", "++db=1"]
    composition = compose_files(root, "app.py", words)
    assert composition is not None
    assert os.path.realpath(root / "conf" / "config.yaml") in [
        os.path.realpath(f.path) for f in composition.files
    ]
