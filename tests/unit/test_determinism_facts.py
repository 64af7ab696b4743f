"""Determinism facts: read at start(), read again at finish(), a change is said."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import expdna
from expdna.collectors.system import cpu_flags


def test_a_switch_turned_on_after_start_is_named_at_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EXPDNA_STORE", raising=False)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        collectors = ["environment", "framework"]
        run = expdna.start({"lr": 0.1}, output_dir=tmp_path, collectors=collectors)
        assert run is not None and run.manifest is not None
        loaded = run.manifest.environment.framework["torch"]["loaded"]
        facts = loaded["determinism"]
        assert facts["matmul_allow_tf32"] is False
        assert facts["float32_matmul_precision"] == torch.get_float32_matmul_precision()
        assert facts["num_threads"] == torch.get_num_threads()
        torch.backends.cuda.matmul.allow_tf32 = True  # as nanoGPT does after its config
        run.finish()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    changed = run.manifest.collection.determinism_changed
    assert "matmul_allow_tf32: False -> True" in changed  # torch also moves the precision
    assert any("matmul_allow_tf32: False -> True" in w for w in run.warnings)
    assert run.manifest.environment.hash_randomization is not None


def test_numeric_cpu_flags_from_cpuinfo() -> None:
    cpu = {"flags": "fpu sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile ht"}
    assert cpu_flags(cpu) == ["amx_tile", "avx", "avx2", "avx512_bf16", "avx512f", "fma", "sse4_2"]
    assert cpu_flags({"Features": "fp asimd sve"}) == ["asimd", "sve"]
    assert cpu_flags({}) is None
