"""Collectors: one module per source, and the runner that calls them in parallel."""

from __future__ import annotations

from expdna.collectors.command import collect_command
from expdna.collectors.config import collect_config
from expdna.collectors.config_files import collect_config_files
from expdna.collectors.context import CollectContext, NotAvailable, Partial, Unknown
from expdna.collectors.data import collect_data
from expdna.collectors.environment import collect_environment
from expdna.collectors.framework import collect_framework
from expdna.collectors.git import collect_git
from expdna.collectors.gpu import collect_gpu
from expdna.collectors.runner import (
    DEFAULT_DEADLINE_S,
    Collector,
    Outcome,
    Registry,
    run_collectors,
)
from expdna.collectors.runtime import collect_runtime
from expdna.collectors.system import collect_system
from expdna.collectors.training import collect_training

__all__ = [
    "DEFAULT_DEADLINE_S",
    "CollectContext",
    "Collector",
    "NotAvailable",
    "Outcome",
    "Partial",
    "Registry",
    "Unknown",
    "default_registry",
    "run_collectors",
]


def default_registry(*, plugins: bool = True) -> Registry:
    """The built-in collectors, plus third-party ones from entry points when ``plugins``."""
    registry = Registry()
    registry.add(Collector("command", "command", collect_command))
    registry.add(Collector("git", "code", collect_git))
    registry.add(Collector("config", "config", collect_config))
    registry.add(Collector("config_files", "config", collect_config_files))
    registry.add(Collector("environment", "environment", collect_environment))
    registry.add(Collector("training", "training", collect_training))
    registry.add(Collector("runtime", "runtime", collect_runtime))
    registry.add(Collector("system", "hardware", collect_system))
    registry.add(Collector("gpu", "hardware", collect_gpu))
    registry.add(Collector("framework", "environment", collect_framework))
    registry.add(Collector("data", "data", collect_data))
    if plugins:
        registry.load_entry_points()
    return registry
