"""A call abandoned at its deadline while inside torch's native code must not abort the
process at exit: CPython ends such a daemon thread with ``pthread_exit`` as the interpreter
finalises, and a C++ frame turns that into SIGABRT ("terminate called without an active
exception"), seen in CI on a torchrun rank after training had succeeded. Real torch on the
CPU, in a real process that exits on its own."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys, time
import torch
from expdna.collectors.context import CollectContext
from expdna.collectors.runner import Collector, run_collectors
from expdna.integrations.recording import guarded

def native(ctx=None):  # about a second inside torch, the GIL released
    a = torch.randn(600, 600)
    ends = time.monotonic() + 1.0
    while time.monotonic() < ends:
        a @ a
    return {}

if sys.argv[1] == "guarded":
    result, warning = guarded("a slow store", native, 0.1)
    assert result is None and "abandoned" in warning, warning
elif sys.argv[1] == "ending":  # abandoned by the hook's own exit handler, as it ends a run
    from expdna.integrations import exits

    class Run:
        def end(self, error=None, *, signal_name=None):
            guarded("telling the store", native, 0.1)

    exits.watch(Run())
else:
    slow = Collector(name="slow", section="environment", fn=native)
    outcome = run_collectors(CollectContext(), [slow], deadline_s=0.1)["slow"]
    assert outcome.status == "timeout", outcome
print("training done", flush=True)
"""


@pytest.mark.parametrize("through", ["guarded", "collectors", "ending"])
def test_an_abandoned_native_call_leaves_the_exit_alone(through: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, through],
        capture_output=True,
        text=True,
        timeout=120,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout == "training done\n"
    assert "terminate called" not in done.stderr
    assert done.returncode == 0, done.stderr
