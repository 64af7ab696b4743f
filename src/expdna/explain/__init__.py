"""``expdna explain``: which recorded facts go with a metric, or with failing, across the
runs of one setup. The statistics are numpy (:mod:`expdna.explain.association` and
:mod:`expdna.explain.report`); SciPy (``pip install 'expdna[explain]'``) only for the exact
test of a small fleet. Nothing here is imported by ``import expdna``.
"""

from __future__ import annotations

import os
import sys

#: The variable OpenBLAS (numpy's BLAS) reads its thread count from when it loads.
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def load_numpy() -> None:
    """Load numpy with a one-thread BLAS, unless the user set the count or it is loaded.

    The shared permutation test multiplies blocks of 100 resamples, and fewer columns after
    each: a few products of tens of milliseconds, after which OpenBLAS's threads spin.
    On 2 cores with other work, that spinning cost the command 0.35-0.4 s of CPU and about
    1 s of wall time for a fleet of 10,000 runs (benchmarks/explain_bench.py), where the
    products take 50-60 ms on one thread, so a second could save at most half of that.
    The variable is put back once numpy is in: nothing else sees it."""
    if "numpy" in sys.modules or _BLAS_THREADS in os.environ:
        return
    os.environ[_BLAS_THREADS] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ[_BLAS_THREADS]
