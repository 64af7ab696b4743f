"""The collector runner: parallel, deadlines, failures as warnings, registry."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from expdna.collectors import (
    CollectContext,
    Collector,
    NotAvailable,
    Partial,
    Registry,
    default_registry,
    run_collectors,
)


def _ok(ctx: CollectContext) -> dict[str, Any]:
    return {"value": 1}


def _boom(ctx: CollectContext) -> dict[str, Any]:
    raise RuntimeError("exploded")


def _absent(ctx: CollectContext) -> dict[str, Any]:
    raise NotAvailable("no GPU here")


def _partial(ctx: CollectContext) -> dict[str, Any]:
    raise Partial({"half": True}, "second half missing")


def test_statuses_and_warnings() -> None:
    collectors = [
        Collector("ok", "a", _ok),
        Collector("boom", "b", _boom),
        Collector("absent", "c", _absent),
        Collector("partial", "d", _partial),
    ]
    out = run_collectors(CollectContext(), collectors, deadline_s=2)
    assert out["ok"].status == "ok" and out["ok"].section == {"value": 1}
    assert out["boom"].status == "failed" and out["boom"].warnings == ["RuntimeError: exploded"]
    assert out["absent"].status == "skipped" and out["absent"].warnings == ["no GPU here"]
    assert out["partial"].status == "partial" and out["partial"].section == {"half": True}
    assert out["partial"].warnings == ["second half missing"]


def test_a_hanging_collector_is_abandoned_not_awaited() -> None:
    release = threading.Event()

    def hang(ctx: CollectContext) -> dict[str, Any]:
        release.wait(30)
        return {"late": True}

    started = time.perf_counter()
    out = run_collectors(
        CollectContext(), [Collector("hang", "x", hang), Collector("ok", "y", _ok)], deadline_s=0.3
    )
    elapsed = time.perf_counter() - started
    release.set()
    assert out["hang"].status == "timeout" and out["hang"].section == {}
    assert out["ok"].status == "ok"
    assert elapsed < 2.0


def test_collectors_run_concurrently() -> None:
    barrier = threading.Barrier(3, timeout=2)

    def meet(ctx: CollectContext) -> dict[str, Any]:
        barrier.wait()  # only passes if all three run at once
        return {}

    out = run_collectors(CollectContext(), [Collector(f"c{i}", "s", meet) for i in range(3)])
    assert {o.status for o in out.values()} == {"ok"}


def test_registry_refuses_duplicates_and_unknown_names() -> None:
    registry = Registry()
    registry.register("x", "s")(_ok)
    with pytest.raises(ValueError, match="registered twice"):
        registry.add(Collector("x", "s", _ok))
    with pytest.raises(KeyError, match="nope"):
        registry.select(["nope"])


def test_default_registry_names() -> None:
    names = set(default_registry(plugins=False).collectors)
    assert {"command", "git", "config", "environment", "system", "data"} <= names
