"""The training framework (PyTorch): what is installed, and what the running process loaded.

Never imports torch. Installed facts come from ``importlib.metadata`` and from the text of
the installed ``torch/version.py`` (parsed, not executed). The *loaded* truth (the CUDA,
cuDNN and NCCL the process really runs with, the build configuration, the determinism
switches) is read only when the caller has already imported torch: it is the module in
``sys.modules``, so reading it costs microseconds and changes nothing.

Section ``environment``, key ``framework``::

    {"torch": {"version": "2.13.0+cpu",              # importlib.metadata
               "build": {"cuda": None, "git_version": "cf30…"},   # torch/version.py
               "loaded": {...}}}                     # only when torch is in sys.modules
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any

from expdna.collectors.context import CollectContext, NotAvailable
from expdna.collectors.interpreter import ProbeFailed, foreign_interpreter
from expdna.digest import ref_of

log = logging.getLogger(__name__)

#: Assignments of torch/version.py worth keeping (the rest restate ``__version__``).
_BUILD_NAMES = ("cuda", "git_version", "hip", "rocm", "xpu")


def installed_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def torch_build() -> dict[str, Any] | None:
    """The installed torch's ``version.py`` constants, read as text: torch is not imported.

    ``find_spec`` on a top-level name only locates the package; it runs none of it.
    """
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / "version.py"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        return build_constants(text)
    return None


def build_constants(text: str) -> dict[str, Any]:
    """The constants worth keeping from the text of a ``torch/version.py``."""
    return _literal_assignments(text, _BUILD_NAMES)


#: ``name = literal`` or ``name: type = literal`` on one line, as torch's generated
#: version.py writes its constants.
_ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]*)?=\s*(.+?)\s*(?:#.*)?$")
_STRING = re.compile(r"""^(?:'([^'\\]*)'|"([^"\\]*)")$""")
_SCALARS: dict[str, Any] = {"None": None, "True": True, "False": False}


def _literal_assignments(text: str, names: tuple[str, ...]) -> dict[str, Any]:
    """Literal values assigned to ``names``, read line by line, never through ``ast``.

    CPython before 3.11.8 keeps one AST recursion counter for all threads (gh-106905), so
    parsing in a collector's thread could fail another thread's import; and only plain
    strings, ``None``, booleans and integers are wanted here. A value computed at import
    time is not knowable without running it, and is left out.
    """
    found: dict[str, Any] = {}
    for line in text.splitlines():
        match = _ASSIGNMENT.match(line)
        if match is None or match.group(1) not in names:
            continue
        value = match.group(2)
        string = _STRING.match(value)
        if string is not None:
            found[match.group(1)] = (
                string.group(1) if string.group(1) is not None else string.group(2)
            )
        elif value in _SCALARS:
            found[match.group(1)] = _SCALARS[value]
        elif re.fullmatch(r"-?\d+", value):
            found[match.group(1)] = int(value)
    return {name: found[name] for name in names if name in found}


def loaded_torch() -> ModuleType | None:
    """torch as the caller imported it, or None; a torch still being imported counts as
    not loaded (another thread holds its import lock and its attributes are half-set)."""
    module = sys.modules.get("torch")
    if module is None:
        return None
    if getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


def dotted_version(value: object) -> str | None:
    """A library version as "major.minor.patch".

    NCCL comes as a tuple ``(2, 21, 5)`` or ``(2, 21, 5, "suffix")``; old torch returned
    NCCL as an int, and cuDNN is an int: ``major*1000 + minor*100 + patch`` before 2.9
    (NCCL) / 9.0 (cuDNN), ``major*10000 + minor*100 + patch`` since.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (tuple, list)):
        numbers = [str(v) for v in value[:3]]
        suffix = "".join(str(v) for v in value[3:])
        return ".".join(numbers) + suffix if numbers else None
    if isinstance(value, int):
        if value <= 0:
            return None
        major, rest = divmod(value, 10000) if value >= 10000 else divmod(value, 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    text = str(value).strip()
    return text or None


def _call(fn: Callable[[], Any], what: str) -> Any:
    # Each getter on its own: an old torch lacks some, a CPU build raises on others.
    try:
        return fn()
    except Exception as exc:
        log.debug("torch %s: %s", what, exc)
        return None


def loaded_versions(torch: ModuleType) -> dict[str, str | None]:
    """CUDA runtime, cuDNN and NCCL as the loaded torch reports them (no CUDA init)."""
    return {
        "cuda": _call(lambda: torch.version.cuda, "version.cuda"),
        "cudnn_version": dotted_version(
            _call(lambda: torch.backends.cudnn.version(), "cudnn.version")
        ),
        "nccl_version": dotted_version(_call(lambda: torch.cuda.nccl.version(), "nccl.version")),
    }


def _determinism(torch: ModuleType, environ: Mapping[str, str]) -> dict[str, Any]:
    return {
        "deterministic_algorithms": _call(
            torch.are_deterministic_algorithms_enabled, "deterministic algorithms"
        ),
        "warn_only": _call(torch.is_deterministic_algorithms_warn_only_enabled, "warn only"),
        "cudnn_deterministic": _call(lambda: torch.backends.cudnn.deterministic, "cudnn"),
        "cudnn_benchmark": _call(lambda: torch.backends.cudnn.benchmark, "cudnn"),
        "cublas_workspace_config": environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "pythonhashseed": environ.get("PYTHONHASHSEED"),
        "initial_seed": _call(torch.initial_seed, "initial_seed"),
        **numerics(torch),
    }


def numerics(torch: ModuleType) -> dict[str, Any]:
    """The switches that change results on the same code: TF32, float32 matmul precision,
    the scaled-dot-product attention backends, and the CPU thread counts. Read from the
    loaded module only (no CUDA initialisation)."""
    cuda: Any = getattr(torch.backends, "cuda", None)
    return {
        "matmul_allow_tf32": _call(lambda: cuda.matmul.allow_tf32, "matmul tf32"),
        "cudnn_allow_tf32": _call(lambda: torch.backends.cudnn.allow_tf32, "cudnn tf32"),
        "float32_matmul_precision": _call(
            torch.get_float32_matmul_precision, "float32 matmul precision"
        ),
        "sdp_flash": _call(lambda: cuda.flash_sdp_enabled(), "flash sdp"),
        "sdp_mem_efficient": _call(lambda: cuda.mem_efficient_sdp_enabled(), "mem sdp"),
        "sdp_math": _call(lambda: cuda.math_sdp_enabled(), "math sdp"),
        "sdp_cudnn": _call(lambda: cuda.cudnn_sdp_enabled(), "cudnn sdp"),
        "num_threads": _call(torch.get_num_threads, "num threads"),
        "num_interop_threads": _call(torch.get_num_interop_threads, "interop threads"),
    }


def _loaded(torch: ModuleType, environ: Mapping[str, str]) -> dict[str, Any]:
    config = _call(lambda: torch.__config__.show(), "__config__.show")
    return {
        "version": _call(lambda: str(torch.__version__), "__version__"),
        "git_version": _call(lambda: torch.version.git_version, "git_version"),
        **loaded_versions(torch),
        "config_digest": ref_of(config.encode("utf-8")) if isinstance(config, str) else None,
        "determinism": _determinism(torch, environ),
    }


def collect_torch(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """torch's entry of ``environment.framework``, or None when torch is not installed."""
    module = loaded_torch()
    installed = installed_version("torch")
    if installed is None and module is None:
        return None
    found: dict[str, Any] = {"version": installed, "build": torch_build()}
    if module is not None:
        found["loaded"] = _loaded(module, environ)
    return found


def collect_framework(ctx: CollectContext) -> dict[str, Any]:
    """Section ``environment``: ``{"framework": {"torch": {...}}}`` (empty when absent).

    Skipped when the command runs under another interpreter: the environment collector
    asks that one, torch included."""
    if ctx.probe_interpreter:
        try:
            other = foreign_interpreter(ctx.argv, ctx.cwd, ctx.environ)
        except ProbeFailed:
            other = Path()  # not found: the environment collector says so
        if other is not None:
            raise NotAvailable("the command's interpreter is asked by the environment collector")
    frameworks: dict[str, Any] = {}
    torch = collect_torch(ctx.environ)
    if torch is not None:
        frameworks["torch"] = torch
    return {"framework": frameworks}
