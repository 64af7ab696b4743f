"""Which recorded environment variables ``rerun --confirm`` applies: an allow-list.

A manifest may come from anyone, and a variable can load code (``LD_PRELOAD``,
``CUDA_INJECTION64_PATH``, ``NCCL_NET_PLUGIN``), point the run at a service
(``HF_ENDPOINT``, ``RAY_ADDRESS``), relax what loaded files may execute
(``HF_DATASETS_TRUST_REMOTE_CODE``, ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD``) or name where to
read from (``HF_HUB_CACHE``). A deny-list of such names always misses the next one, so
only the names in :data:`APPLIED` are applied: settings that shape the numbers a run
produces and load nothing. Every other recorded variable is shown, commented out, with the
first reason of :data:`REASONS` that fits it (docs/en/check-and-rerun.md lists both).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from expdna.manifest.dna import is_per_allocation_env

#: Name -> what it shapes. Applied by ``--confirm``; values are taken as recorded.
APPLIED: dict[str, str] = {
    "PYTHONHASHSEED": "Python's hash seed (set and dict order of str keys)",
    "CUBLAS_WORKSPACE_CONFIG": "cuBLAS workspaces (deterministic GEMMs)",
    "OMP_NUM_THREADS": "OpenMP threads (CPU reduction order)",
    "MKL_NUM_THREADS": "MKL threads",
    "OPENBLAS_NUM_THREADS": "OpenBLAS threads",
    "NUMEXPR_NUM_THREADS": "numexpr threads",
    "VECLIB_MAXIMUM_THREADS": "Accelerate threads (macOS)",
    "MKL_CBWR": "MKL conditional numerical reproducibility",
    "KMP_DETERMINISTIC_REDUCTION": "Intel OpenMP deterministic reductions",
    "NVIDIA_TF32_OVERRIDE": "TF32 in cuBLAS/cuDNN",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "TF32 in torch matmuls",
    "CUDA_DEVICE_MAX_CONNECTIONS": "CUDA work queues (kernel overlap order)",
    "NCCL_ALGO": "NCCL collective algorithm",
    "NCCL_PROTO": "NCCL protocol",
    "NCCL_BUFFSIZE": "NCCL buffer size",
    "NCCL_NTHREADS": "NCCL threads per block",
    "NCCL_MIN_NCHANNELS": "NCCL channels",
    "NCCL_MAX_NCHANNELS": "NCCL channels",
    "NCCL_MIN_CTAS": "NCCL CTAs",
    "NCCL_MAX_CTAS": "NCCL CTAs",
    "NCCL_CHUNK_SIZE": "NCCL chunk size",
    "NCCL_TREE_THRESHOLD": "NCCL tree/ring switch",
    "NCCL_LL_THRESHOLD": "NCCL low-latency protocol switch",
    "NCCL_LL128_ENABLE": "NCCL LL128 protocol",
    "NCCL_NVLS_ENABLE": "NCCL NVLink SHARP",
    "NCCL_COLLNET_ENABLE": "NCCL CollNet",
    "NCCL_CROSS_NIC": "NCCL ring/tree layout across NICs",
    "TF_DETERMINISTIC_OPS": "TensorFlow deterministic kernels",
    "TF_CUDNN_DETERMINISTIC": "TensorFlow deterministic cuDNN",
}

#: Exact names that change what code a process loads (with the prefixes below).
LOADER_NAMES: frozenset[str] = frozenset(
    {
        "PATH",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONUSERBASE",
        "PYTHONSAFEPATH",
        "PYTHONPLATLIBDIR",
        "PYTHONEXECUTABLE",
        "PYTHONINSPECT",
        "PYTHONBREAKPOINT",
        "PYTHONWARNINGS",
        "BASH_ENV",
        "ENV",
        "IFS",
        "PERL5LIB",
        "PERL5OPT",
        "RUBYOPT",
        "NODE_OPTIONS",
        "JAVA_TOOL_OPTIONS",
    }
)
_LOADER_PREFIXES = ("LD_", "DYLD_")
#: Words inside a name that say it names code or a library to load.
_LOADER_WORDS = ("PLUGIN", "INJECTION", "PRELOAD", "HOOK", "LIB", "MODULE", "EXTENSION", "SHIM")
#: Words that say a name lets loaded files run code, or turns a safety check off.
_TRUST_WORDS = ("TRUST_REMOTE_CODE", "WEIGHTS_ONLY", "ALLOW_PICKLE", "UNSAFE", "INSECURE")
#: Words that say a name points the run at a service.
_SERVICE_WORDS = ("ENDPOINT", "ADDRESS", "ADDR", "URL", "URI", "HOST", "PORT", "SERVER", "PROXY")
#: Words that say a name is a place to read from or write to.
_LOCATION_WORDS = ("HOME", "CACHE", "DIR", "PATH", "FILE", "ROOT", "TMP", "TEMP")
#: Words that say a name carries a configuration (which may name code of its own).
_CONFIG_WORDS = ("JSON", "CONFIG", "CONF", "RUNTIME_ENV", "ARGS", "OPTIONS", "OPTS")


def _has_word(name: str, words: tuple[str, ...]) -> bool:
    """A ``_``-separated part of ``name`` starts with one of ``words`` (``INJECTION64``
    with ``INJECTION``), or a word of several parts appears in it whole."""
    parts = name.split("_")
    joined = f"_{name}_"
    return any(
        f"_{word}_" in joined if "_" in word else any(p.startswith(word) for p in parts)
        for word in words
    )


@dataclass(frozen=True)
class Reason:
    """Why a recorded variable is not applied: a test and the words shown."""

    test: Callable[[str], bool]
    why: str


#: The first reason whose test holds is shown; the last holds for every name.
REASONS: tuple[Reason, ...] = (
    Reason(
        lambda n: n in LOADER_NAMES or n.startswith(_LOADER_PREFIXES),
        "it changes what code loads",
    ),
    Reason(lambda n: _has_word(n, _LOADER_WORDS), "it names code or a library to load"),
    Reason(lambda n: _has_word(n, _TRUST_WORDS), "it changes what loaded files may execute"),
    Reason(is_per_allocation_env, "it is a per-allocation value (job, node, address, port)"),
    Reason(lambda n: _has_word(n, _SERVICE_WORDS), "it points the run at a service"),
    Reason(lambda n: _has_word(n, _LOCATION_WORDS), "it names a location to read from"),
    Reason(lambda n: _has_word(n, _CONFIG_WORDS), "it carries a configuration"),
    Reason(
        lambda n: True,
        "it is not on the allow-list of settings that shape results and load nothing",
    ),
)


def is_applied(name: str) -> bool:
    """Whether ``--confirm`` applies the recorded variable ``name``."""
    return name in APPLIED


def not_applied_reason(name: str) -> str | None:
    """Why ``name`` is not applied, or None when it is."""
    if is_applied(name):
        return None
    return next(reason.why for reason in REASONS if reason.test(name))
