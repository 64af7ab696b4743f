"""The framework collector with the real torch (CPU build), imported by the caller or not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import version
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from expdna import api
from expdna.collectors import framework
from expdna.collectors.framework import _literal_assignments, dotted_version, loaded_torch

COLLECT = """\
from expdna.collectors.context import CollectContext
from expdna.collectors.framework import collect_framework
section = collect_framework(CollectContext())
"""


def _run(code: str, **env: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints one JSON object."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CUBLAS_WORKSPACE_CONFIG", "PYTHONHASHSEED")
    }
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        env={**environ, **env},
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def not_imported() -> dict[str, Any]:
    return _run(
        COLLECT
        + """
import json, sys
print(json.dumps({"section": section, "torch_imported": "torch" in sys.modules}))
"""
    )


def test_torch_is_never_imported_to_collect(not_imported: dict[str, Any]) -> None:
    assert not_imported["torch_imported"] is False
    torch = not_imported["section"]["framework"]["torch"]
    assert torch["version"] == version("torch")
    assert "loaded" not in torch  # no loaded truth without a loaded torch


def test_installed_build_is_read_from_version_py(not_imported: dict[str, Any]) -> None:
    build = not_imported["section"]["framework"]["torch"]["build"]
    assert build["cuda"] is None  # this venv has the CPU build
    assert len(build["git_version"]) == 40 and int(build["git_version"], 16) >= 0


@pytest.fixture(scope="module")
def imported() -> dict[str, Any]:
    return _run(
        """
import torch
torch.use_deterministic_algorithms(True)
torch.manual_seed(1234)
"""
        + COLLECT
        + """
import json
from expdna.collectors.gpu import collect_gpu
from expdna.digest import ref_of
print(json.dumps({
    "section": section,
    "gpu": collect_gpu(CollectContext(environ={"PATH": ""})),
    "expected_digest": ref_of(torch.__config__.show().encode()),
    "torch_version": torch.__version__,
    "git_version": torch.version.git_version,
}))
""",
        CUBLAS_WORKSPACE_CONFIG=":4096:8",
        PYTHONHASHSEED="0",
    )


@pytest.mark.slow  # imports torch in a fresh interpreter (2-5 s here)
def test_loaded_torch_truth(imported: dict[str, Any]) -> None:
    loaded = imported["section"]["framework"]["torch"]["loaded"]
    assert loaded["version"] == imported["torch_version"] == version("torch")
    assert loaded["git_version"] == imported["git_version"]
    assert (loaded["cuda"], loaded["cudnn_version"], loaded["nccl_version"]) == (
        None,
        None,
        None,  # CPU build: no CUDA runtime, no cuDNN, no NCCL
    )
    assert loaded["config_digest"] == imported["expected_digest"]
    assert loaded["config_digest"].startswith("blake3:")


@pytest.mark.slow  # imports torch in a fresh interpreter (2-5 s here)
def test_loaded_determinism_state(imported: dict[str, Any]) -> None:
    determinism = dict(imported["section"]["framework"]["torch"]["loaded"]["determinism"])
    # The numeric switches (DNA version 3), as this torch and machine set them by default.
    numeric = {k: determinism.pop(k) for k in list(determinism) if k.startswith(("sdp_", "num_"))}
    assert set(numeric) == {
        "sdp_flash", "sdp_mem_efficient", "sdp_math", "sdp_cudnn", "num_threads",
        "num_interop_threads",
    }  # fmt: skip
    assert numeric["num_threads"] >= 1
    assert determinism.pop("matmul_allow_tf32") is False
    assert determinism.pop("float32_matmul_precision") == "highest"
    assert isinstance(determinism.pop("cudnn_allow_tf32"), bool)
    assert determinism == {
        "deterministic_algorithms": True,
        "warn_only": False,
        "cudnn_deterministic": False,
        "cudnn_benchmark": False,
        "cublas_workspace_config": ":4096:8",
        "pythonhashseed": "0",
        "initial_seed": 1234,
    }


@pytest.mark.slow  # imports torch in a fresh interpreter (2-5 s here)
def test_installed_build_agrees_with_the_loaded_one(
    imported: dict[str, Any], not_imported: dict[str, Any]
) -> None:
    build = not_imported["section"]["framework"]["torch"]["build"]
    loaded = imported["section"]["framework"]["torch"]["loaded"]
    assert (build["cuda"], build["git_version"]) == (loaded["cuda"], loaded["git_version"])
    assert imported["section"]["framework"]["torch"]["build"] == build


@pytest.mark.slow  # imports torch in a fresh interpreter (2-5 s here)
def test_warn_only_benchmark_and_unset_variables_are_recorded() -> None:
    result = _run(
        """
import torch
torch.use_deterministic_algorithms(True, warn_only=True)
torch.backends.cudnn.benchmark = True
"""
        + COLLECT
        + """
import json
print(json.dumps(section["framework"]["torch"]["loaded"]["determinism"]))
"""
    )
    assert (result["warn_only"], result["cudnn_benchmark"]) == (True, True)
    assert (result["cublas_workspace_config"], result["pythonhashseed"]) == (None, None)
    assert isinstance(result["initial_seed"], int)


@pytest.mark.slow  # imports torch in a fresh interpreter (2-5 s here)
def test_the_gpu_collector_reads_the_loaded_torch_too(imported: dict[str, Any]) -> None:
    # CPU torch: nothing to list (its CUDA was never initialised, and it has none), and the
    # loaded torch's answer (no cuDNN, no NCCL) is the truth: no wheel is consulted.
    gpu = imported["gpu"]
    assert {
        k: gpu[k]
        for k in (
            "gpu_count",
            "gpu_source",
            "cuda_version",
            "cudnn_version",
            "nccl_version",
            "cudnn_version_source",
            "nccl_version_source",
        )
    } == {
        "gpu_count": 0,
        "gpu_source": None,
        "cuda_version": None,
        "cudnn_version": None,
        "nccl_version": None,
        "cudnn_version_source": None,
        "nccl_version_source": None,
    }


def test_the_environment_section_gets_both_collectors() -> None:
    manifest = api.collect(collectors=["environment", "framework"])
    environment = manifest.to_dict()["environment"]
    assert environment["framework"]["torch"]["version"] == version("torch")
    assert environment["packages"]["torch"] == version("torch")
    assert manifest.to_dict()["collection"]["collectors"]["framework"]["status"] == "ok"


def test_a_torch_still_being_imported_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    half = ModuleType("torch")
    half.__spec__ = SimpleNamespace(_initializing=True)  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "torch", half)
    assert loaded_torch() is None


def test_no_torch_no_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framework, "installed_version", lambda name: None)
    monkeypatch.setattr(framework, "loaded_torch", lambda: None)
    assert framework.collect_framework(framework.CollectContext()) == {"framework": {}}


@pytest.mark.parametrize(
    ("raw", "dotted"),
    [
        ((2, 21, 5), "2.21.5"),
        ((2, 21, 5, "+cuda12.2"), "2.21.5+cuda12.2"),
        ([2, 27, 3], "2.27.3"),
        (2708, "2.7.8"),  # NCCL before 2.9 as an int
        (22105, "2.21.5"),  # NCCL since 2.9 as an int
        (8902, "8.9.2"),  # cuDNN 8
        (90100, "9.1.0"),  # cuDNN 9
        (91002, "9.10.2"),
        (None, None),
        (0, None),
        (True, None),
        ("2.21.5", "2.21.5"),
        ("", None),
    ],
)
def test_dotted_versions(raw: object, dotted: str | None) -> None:
    assert dotted_version(raw) == dotted


def test_version_py_constants_only_when_literal() -> None:
    text = (
        "from typing import Optional\n"
        "__version__ = '2.5.1+cu124'\n"
        'cuda: Optional[str] = "12.4"  # the build\n'
        "git_version = compute()\n"
        "hip = None\n"
        "debug = False\n"
        "rocm = 'a' + 'b'\n"
    )
    assert _literal_assignments(text, ("cuda", "git_version", "hip", "debug", "rocm")) == {
        "cuda": "12.4",
        "hip": None,
        "debug": False,
    }
