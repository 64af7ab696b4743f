"""argv -> resolved args, and the environment whitelist."""

from __future__ import annotations

from expdna.collectors.config import parse_args, select_env, typed


def test_forms_of_arguments() -> None:
    argv = [
        "python",
        "train.py",
        "--lr",
        "3e-4",
        "--epochs=10",
        "--fp16",
        "--model-name",
        "vit_base",
        "--warmup",
        "-5",
        "--tag",
        "a",
        "--tag",
        "b",
        "data/",
        "-n",
        "4",
        "--ratio",
        ".5",
        "--name=",
        "--eq=a=b",
    ]
    assert parse_args(argv) == {
        "lr": 3e-4,
        "epochs": 10,
        "fp16": True,
        "model_name": "vit_base",
        "warmup": -5,
        "tag": ["a", "b"],
        "n": 4,
        "ratio": 0.5,
        "name": "",
        "eq": "a=b",
    }


def test_flag_before_flag_and_at_end() -> None:
    assert parse_args(["--a", "--b", "1", "--c"]) == {"a": True, "b": 1, "c": True}


def test_numbers_typed_but_not_words() -> None:
    assert typed("42") == 42 and isinstance(typed("42"), int)
    assert typed("1e3") == 1000.0 and isinstance(typed("1e3"), float)
    for word in ("nan", "inf", "Infinity", "1_000", "0x10", "v1.2", "2.11.0+cu129", "TRUE", "no"):
        assert typed(word) == word


def test_double_dash_ends_nothing_but_is_not_a_value() -> None:
    assert parse_args(["--x", "--", "y"]) == {"x": True}


def test_environment_whitelist() -> None:
    environ = {
        "CUDA_HOME": "/usr/local/cuda",
        "NCCL_DEBUG": "INFO",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "x",
        "PYTHONHASHSEED": "0",
        "PATH": "/bin",
        "HF_TOKEN": "hf_x",
        "OMP_NUM_THREADS": "8",
        "SLURM_JOB_ID": "1",
    }
    assert select_env(environ) == {
        "CUDA_HOME": "/usr/local/cuda",
        "HF_TOKEN": "hf_x",
        "NCCL_DEBUG": "INFO",
        "OMP_NUM_THREADS": "8",
        "PYTHONHASHSEED": "0",
        "SLURM_JOB_ID": "1",
    }


def test_interpreter_options_are_not_training_arguments() -> None:
    assert parse_args(["python", "-u", "train.py", "--lr", "1"]) == {"lr": 1}
    assert parse_args(
        ["/usr/bin/python3.11", "-X", "dev", "-W", "ignore", "train.py", "--fp16"]
    ) == {"fp16": True}
    assert parse_args(
        [
            "python",
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "8",
            "train.py",
            "--lr",
            "0.1",
        ]
    ) == {"lr": 0.1}
    assert parse_args(["torchrun", "--nproc_per_node", "8", "train.py", "--lr", "0.1"]) == {
        "lr": 0.1
    }


def test_launcher_options_are_not_the_scripts_arguments() -> None:
    # The process torchrun starts never sees --nproc-per-node: the hook there records only
    # the script's own arguments, and the command line must record the same.
    argv = ["torchrun", "--standalone", "--nproc-per-node", "2", "train.py", "--lr", "0.2"]
    assert parse_args(argv) == {"lr": 0.2}
    assert parse_args(argv, launcher=True) == {"standalone": True, "nproc_per_node": 2, "lr": 0.2}


def test_a_launcher_value_never_runs_on_into_the_scripts_positionals() -> None:
    # pytorch/examples' DDP tutorial: `torchrun ... multigpu_torchrun.py 50 10`.
    argv = ["torchrun", "--standalone", "--nproc-per-node", "2", "multigpu_torchrun.py", "50"]
    assert parse_args([*argv, "10"]) == {}
    assert parse_args([*argv, "10"], launcher=True) == {"standalone": True, "nproc_per_node": 2}
    assert parse_args(["python", "-X", "dev", "train.py", "--lr", "0.1", "0.2"]) == {
        "lr": [0.1, 0.2]
    }


def test_numbers_after_a_value_form_a_list() -> None:
    assert parse_args(["--betas", "0.9", "0.999", "--gpus", "0", "1", "2", "--name", "a", "1"]) == {
        "betas": [0.9, 0.999],
        "gpus": [0, 1, 2],
        "name": "a",
    }


def test_booleans_are_typed_as_the_hook_records_them() -> None:
    """nanoGPT's ``--compile=False`` is ``compile = False`` in the script: the CLI agrees."""
    assert parse_args(["python", "train.py", "--compile=False", "--bias", "true"]) == {
        "compile": False,
        "bias": True,
    }


def test_hydra_overrides_are_arguments() -> None:
    argv = ["python", "src/train.py", "model.optimizer.lr=0.001", "+trainer=gpu", "++seed=3"]
    assert parse_args([*argv, "~callbacks.early_stopping", "experiment=example"]) == {
        "model.optimizer.lr": 0.001,
        "trainer": "gpu",
        "seed": 3,
        "callbacks.early_stopping": "<deleted>",
        "experiment": "example",
    }
    assert parse_args(["python", "train.py", "config/train_gpt2.py"]) == {}
