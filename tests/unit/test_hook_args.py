"""Parsed arguments of every supported kind become plain, stable JSON values."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import math
import types
from pathlib import Path
from typing import Any

import pydantic
import pytest

from expdna.integrations.args import UnsupportedArgs, plain, resolved_args


class Optim(enum.Enum):
    SGD = "sgd"
    ADAM = "adam"


@dataclasses.dataclass
class Model:
    width: int = 32
    act: str = "tanh"


@dataclasses.dataclass
class Config:
    lr: float = 0.1
    model: Model = dataclasses.field(default_factory=Model)
    layers: tuple[int, ...] = (1, 2)
    out: Path = Path("/tmp/out")


class PydanticConfig(pydantic.BaseModel):
    lr: float = 0.1
    optim: Optim = Optim.ADAM
    model: dict[str, int] = {"width": 8}


def train() -> None:
    """Stands for a subcommand's function (``parser.set_defaults(func=train)``)."""


class Opaque:
    """An object whose repr names its memory address."""


EXPECTED = {"lr": 0.1, "model": {"width": 32, "act": "tanh"}, "layers": [1, 2], "out": "/tmp/out"}


def test_namespace_from_a_real_parser_keeps_defaults_and_types() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--output-dir", type=Path, default=Path("/runs/a"))
    parser.add_argument("--optim", type=Optim, default=Optim.SGD)
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--amp", action="store_true")
    parser.set_defaults(func=train)
    args = parser.parse_args(["--lr", "0.5"])
    assert resolved_args(args) == {
        "lr": 0.5,
        "output_dir": "/runs/a",
        "optim": "sgd",
        "layers": [1, 2],
        "amp": False,
        "func": f"{__name__}.train",
    }


def test_dict_dataclass_pydantic_and_simple_namespace() -> None:
    assert resolved_args(Config()) == EXPECTED
    assert resolved_args(dataclasses.asdict(Config())) == {**EXPECTED, "out": "/tmp/out"}
    assert resolved_args(PydanticConfig()) == {"lr": 0.1, "optim": "adam", "model": {"width": 8}}
    assert resolved_args(types.SimpleNamespace(a=1, b=[Path("x")])) == {"a": 1, "b": ["x"]}


def test_values_that_would_change_on_every_run_are_made_stable() -> None:
    first, second = plain(Opaque()), plain(Opaque())
    assert first == second == {}  # attributes, not "<Opaque object at 0x7f...>"
    weird = object()
    assert " at 0x" not in plain(weird)
    assert plain({3, 1, 2}) == [1, 2, 3]
    assert plain(frozenset({"b", "a"})) == ["a", "b"]
    assert plain(b"bytes") == "bytes"


def test_non_finite_floats_are_kept_for_the_canonical_form() -> None:
    value = plain({"x": float("nan"), "y": float("inf")})
    assert math.isnan(value["x"]) and value["y"] == math.inf


def test_tensors_become_numbers() -> None:
    import torch  # imported here: the rest of this file needs no torch

    assert plain(torch.tensor(0.25)) == 0.25
    assert plain(torch.tensor([1, 2])) == [1, 2]


def test_self_reference_does_not_recurse_forever() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    value: Any = resolved_args(loop)
    depth = 0
    while isinstance(value, dict):
        value, depth = value["self"], depth + 1
    assert isinstance(value, str) and depth > 10


@pytest.mark.parametrize("args", ["--lr 0.1", ["--lr", "0.1"], 3, b"x"])
def test_things_without_named_arguments_are_refused(args: Any) -> None:
    with pytest.raises(UnsupportedArgs):
        resolved_args(args)
