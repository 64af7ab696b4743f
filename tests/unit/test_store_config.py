"""One resolution of the store's place for the facade, the CLI and the training hook."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from expdna.store.config import StoreConfig

ENV = {"EXPDNA_STORE": "/env/store", "EXPDNA_INDEX_URL": "postgresql+psycopg://u@h/db"}


def test_a_value_given_wins_over_the_environment() -> None:
    config = StoreConfig.resolve("/given", "sqlite:///given.sqlite", environ=ENV)
    assert config == StoreConfig(Path("/given"), "sqlite:///given.sqlite")
    assert config.root == Path("/given") and config.named


def test_the_environment_fills_what_is_not_given() -> None:
    config = StoreConfig.resolve(None, None, environ=ENV)
    assert config == StoreConfig(Path("/env/store"), "postgresql+psycopg://u@h/db")


def test_empty_variables_and_nothing_given_mean_the_defaults() -> None:
    config = StoreConfig.resolve(environ={"EXPDNA_STORE": "", "EXPDNA_INDEX_URL": ""})
    assert config == StoreConfig(None, None) and not config.named
    assert config.root == Path(platformdirs.user_data_dir("expdna"))
