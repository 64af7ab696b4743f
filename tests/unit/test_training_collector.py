"""The training collector: the argument-name table, its extension, bad values."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from expdna.api import collect
from expdna.collectors import CollectContext, Collector, run_collectors
from expdna.collectors import training as training_mod
from expdna.collectors.training import (
    TRAINING_FIELDS,
    collect_training,
    register_training_field,
)


@pytest.fixture
def restore_fields() -> Iterator[None]:
    saved = dict(TRAINING_FIELDS)
    yield
    TRAINING_FIELDS.clear()
    TRAINING_FIELDS.update(saved)


def training(command: str) -> dict[str, Any]:
    return collect_training(CollectContext(argv=tuple(shlex.split(command))))


def test_megatron_style() -> None:
    section = training(
        "pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 "
        "--context-parallel-size 2 --expert-model-parallel-size 8 --global-batch-size 1024 "
        "--micro-batch-size 2 --seed 1234 --lr 3e-4 --save /ckpt"
    )
    assert section == {
        "parallel_topology": {"tensor": 4, "pipeline": 2, "context": 2, "expert": 8},
        "global_batch_size": 1024,
        "micro_batch_size": 2,
        "seeds": {"seed": 1234},
    }


def test_hugging_face_trainer_style() -> None:
    section = training(
        "run_clm.py --per_device_train_batch_size 8 --gradient_accumulation_steps 4 "
        "--seed 42 --data_seed 7 --output_dir /out"
    )
    assert section == {
        "micro_batch_size": 8,
        "gradient_accumulation_steps": 4,
        "global_batch_size": 32,  # 8 per device x 1 process x 4 steps
        "seeds": {"seed": 42, "data_seed": 7},
    }


def test_deepspeed_style_and_plain_short_names() -> None:
    assert training(
        "train.py --train_batch_size 256 --train_micro_batch_size_per_gpu 4 --dp 8 --tp 2 "
        "--pp 1 --cp 1 --ep 4 --algorithm GRPO"
    ) == {
        "algorithm": "GRPO",
        "parallel_topology": {"tensor": 2, "pipeline": 1, "context": 1, "expert": 4, "data": 8},
        "global_batch_size": 256,
        "micro_batch_size": 4,
    }
    assert training("train.py --algo ppo --batch-size 32 --seed=5") == {
        "algorithm": "ppo",
        "micro_batch_size": 32,
        "global_batch_size": 32,
        "seeds": {"seed": 5},
    }


def test_priority_order_last_value_and_other_seeds() -> None:
    # the Megatron name outranks the short one, whatever the order on the command line
    section = training(
        "train.py --tp 8 --tensor-model-parallel-size 2 --seed 1 --seed 2 "
        "--shuffle-seed 9 --Data-Seed 3"
    )
    assert section["parallel_topology"] == {"tensor": 2}
    assert section["seeds"] == {"seed": 2, "data_seed": 3, "shuffle_seed": 9}


def test_nothing_found_is_an_empty_ok_section() -> None:
    out = run_collectors(
        CollectContext(argv=("python", "train.py", "--lr", "0.1")),
        [Collector("training", "training", collect_training)],
    )
    assert (out["training"].status, out["training"].section) == ("ok", {})


def test_a_value_that_is_not_an_integer_is_left_out_with_a_warning() -> None:
    out = run_collectors(
        CollectContext(
            argv=(
                "train.py",
                "--tensor-model-parallel-size",
                "auto",
                "--tp",
                "2",
                "--micro-batch-size",
                "1.5",
                "--seed",
                "3",
                "--algo",
            )
        ),
        [Collector("training", "training", collect_training)],
    )
    result = out["training"]
    assert result.status == "partial"
    assert result.section == {"parallel_topology": {"tensor": 2}, "seeds": {"seed": 3}}
    warning = result.warnings[0]
    assert "--tensor-model-parallel-size 'auto' is not an integer" in warning
    assert "--micro-batch-size 1.5 is not an integer" in warning
    assert "algorithm: --algo has no value" in warning


@pytest.mark.usefixtures("restore_fields")
def test_users_extend_the_table() -> None:
    assert training("train.py --sp 4 --num-rollouts 16") == {}
    register_training_field("parallel_topology.sequence", "--sp")
    register_training_field("rollouts", "num_rollouts")
    register_training_field("parallel_topology.tensor", "--model-tp", first=True)
    assert TRAINING_FIELDS["parallel_topology.tensor"][0] == "model_tp"
    assert training("train.py --sp 4 --num-rollouts 16 --tp 2 --model-tp 8") == {
        "parallel_topology": {"sequence": 4, "tensor": 8},
        "rollouts": 16,
    }
    # a name registered again does not appear twice
    register_training_field("rollouts", "num-rollouts", "rollout_count")
    assert TRAINING_FIELDS["rollouts"] == ("num_rollouts", "rollout_count")
    # first=True moves a known name to the front too, ahead of the table's own
    register_training_field("rollouts", "rollout_count", "n_rollouts", first=True)
    assert TRAINING_FIELDS["rollouts"] == ("rollout_count", "n_rollouts", "num_rollouts")
    assert training("train.py --num-rollouts 16 --rollout-count 4") == {"rollouts": 4}
    with pytest.raises(ValueError, match=r"group\.name"):
        register_training_field("a.b.c", "x")
    with pytest.raises(ValueError, match="at least one"):
        register_training_field("rollouts")


def test_resolved_args_carried_by_the_context_win_over_argv() -> None:
    @dataclass(frozen=True)
    class WithArgs(CollectContext):
        resolved_args: Mapping[str, Any] | None = None

    ctx = WithArgs(argv=("train.py", "--seed", "1"), resolved_args={"seed": 42, "tp": 2})
    assert collect_training(ctx) == {"seeds": {"seed": 42}, "parallel_topology": {"tensor": 2}}
    assert collect_training(WithArgs(argv=("train.py", "--seed", "1"))) == {"seeds": {"seed": 1}}


def test_the_table_is_documented_in_the_module() -> None:
    doc = training_mod.__doc__ or ""
    for field, names in TRAINING_FIELDS.items():
        assert f"``{field}``" in doc, field
        for name in names:
            assert f"``{name}``" in doc, name


def test_seeds_and_topology_enter_the_dna_output_paths_do_not() -> None:
    def dna(*argv: str) -> dict[str, str]:
        manifest = collect(
            ["train.py", *argv], collectors=["command", "training", "config"], environ={}
        )
        assert manifest.dna is not None
        assert manifest.collection.collectors["training"].status == "ok"
        return manifest.dna.sections

    # DNA version 3 projects the training section to {}: the arguments it is derived from
    # count as the command's words, in config.
    base = dna("--seed", "1", "--tp", "2")
    assert dna("--seed", "2", "--tp", "2")["config"] != base["config"]
    assert dna("--seed", "1", "--tp", "4")["config"] != base["config"]
    assert dna("--seed", "1", "--tp", "2", "--output-dir", "/tmp/x")["config"] == base["config"]
    assert dna("--seed", "2", "--tp", "4")["training"] == base["training"]


def _with_env(command: str, **environ: str) -> dict[str, Any]:
    argv = tuple(shlex.split(command))
    return collect_training(CollectContext(argv=argv, environ=environ))


def test_the_global_batch_is_per_device_times_world_times_accumulation() -> None:
    # each rank of a 2-rank DDP job parses --batch_size 64: 128 samples per step
    assert _with_env("train.py --batch_size 64", RANK="0", WORLD_SIZE="2") == {
        "micro_batch_size": 64,
        "global_batch_size": 128,
    }
    # HF Trainer: per device x world x accumulation
    hf = "train.py --per_device_train_batch_size 8 --gradient_accumulation_steps 4"
    assert _with_env(hf, RANK="1", WORLD_SIZE="4")["global_batch_size"] == 128
    # Lightning's name for the accumulation counts the same way
    lit = "train.py --batch-size 16 --accumulate-grad-batches 2"
    assert _with_env(lit, RANK="0", WORLD_SIZE="2")["global_batch_size"] == 64
    # a global batch the command gives is kept as given
    given = "train.py --global-batch-size 1024 --micro-batch-size 2"
    assert _with_env(given, RANK="0", WORLD_SIZE="8")["global_batch_size"] == 1024


def test_nanogpts_accumulation_already_counts_every_rank() -> None:
    nano = "train.py config/train_gpt2.py --batch_size=12 --gradient_accumulation_steps=40"
    assert training(nano)["global_batch_size"] == 480
    assert _with_env(nano, RANK="0", WORLD_SIZE="8")["global_batch_size"] == 480


@pytest.mark.parametrize(
    ("launcher", "world"),
    [
        ("torchrun --nproc-per-node 2", 2),
        ("torchrun --nnodes=2 --nproc_per_node=4", 8),
        ("accelerate launch --num_processes 2", 2),
        ("accelerate launch --multi_gpu --num-processes=3", 3),
        ("deepspeed --num_gpus 2 --num_nodes 2", 4),
        ("python -m torch.distributed.run --nproc-per-node 2", 2),
        ("python", 1),
    ],
)
def test_a_command_still_to_start_counts_its_launchers_processes(launcher: str, world: int) -> None:
    section = training(f"{launcher} train.py --batch_size 4")
    assert section["global_batch_size"] == 4 * world


def test_a_launcher_size_that_is_not_a_number_derives_nothing() -> None:
    section = training("torchrun --nnodes 1:4 --nproc-per-node gpu train.py --batch_size 4")
    assert section == {"micro_batch_size": 4}
    # deepspeed without --num_gpus starts a rank per device it finds.
    assert training("deepspeed train.py --batch_size 4") == {"micro_batch_size": 4}
