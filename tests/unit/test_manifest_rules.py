"""The manifest's own rules: run-id syntax, lineage relations and edges, time parsing."""

from __future__ import annotations

import typing

import pytest

from expdna.errors import InvalidInputError
from expdna.manifest.lineage import RELATIONS, edge_problem
from expdna.manifest.model import Lineage
from expdna.manifest.runid import RUN_ID, new_run_id
from expdna.manifest.times import parse_time


def test_relations_are_the_models_literal() -> None:
    hints = typing.get_type_hints(Lineage)
    assert typing.get_args(hints["relation"]) == RELATIONS
    assert RELATIONS == ("resumed_from", "rerun_of", "derived_from")


def test_run_ids_expdna_makes_are_valid() -> None:
    from datetime import datetime, timezone

    made = new_run_id(datetime(2026, 8, 5, 14, 30, 25, tzinfo=timezone.utc), "9fc8093abc")
    assert RUN_ID.fullmatch(made) is not None
    assert RUN_ID.fullmatch(new_run_id(datetime.now(timezone.utc), None)) is not None


@pytest.mark.parametrize("text", ["../x", "a b", "-flag", "x;rm", "", "a" * 129, "a/b"])
def test_run_id_syntax_refuses_paths_spaces_and_shell(text: str) -> None:
    assert RUN_ID.fullmatch(text) is None


def test_edge_problem_names_what_is_wrong() -> None:
    assert edge_problem("rerun_of", "20260805_143025_nogit_k3f9", "other") is None
    assert "not one of resumed_from" in str(edge_problem("copied_from", "p", "r"))
    assert "is not a run id" in str(edge_problem("rerun_of", "../p", "r"))
    assert "is not a run id" in str(edge_problem("rerun_of", 7, "r"))
    assert "itself" in str(edge_problem("rerun_of", "r", "r"))


def test_parse_time_is_utc() -> None:
    assert parse_time("2026-08-05T14:30:25Z", "t").isoformat() == "2026-08-05T14:30:25"
    assert parse_time("2026-08-05T16:30:25+02:00", "t").isoformat() == "2026-08-05T14:30:25"
    assert parse_time("2026-08-05", "t").isoformat() == "2026-08-05T00:00:00"


def test_parse_time_refuses_what_is_not_iso() -> None:
    with pytest.raises(InvalidInputError, match="--since: 'yesterday'"):
        parse_time("yesterday", "--since")
