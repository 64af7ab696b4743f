"""The statistics of ``expdna explain`` on small hand-checked cases, and its outcome options."""

from __future__ import annotations

import numpy as np
import pytest

from expdna.errors import InvalidInputError
from expdna.explain import association
from expdna.explain.outcome import asked
from expdna.explain.report import Outcome, explain


def test_small_groups_are_tested_exactly() -> None:
    # 3 vs 3 runs, perfectly separated: 2 of the C(6,3) = 20 splits are as extreme
    found = association.numeric([np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])])
    assert found.method == "exact permutation"
    assert found.p == pytest.approx(0.1)
    assert found.extreme == 1 and found.effect == 1.0


def test_two_values_of_a_split_use_fishers_exact_test() -> None:
    found = association.binary([np.ones(5), np.zeros(5)])
    assert found.method == "Fisher exact" and found.p == pytest.approx(2 / 252)
    assert found.extreme == 0 and found.effect == 1.0


def test_many_runs_use_the_asymptotic_distribution() -> None:
    rng = np.random.default_rng(1)
    found = association.numeric([rng.normal(0, 1, 300), rng.normal(0, 1, 300)])
    assert found.method.startswith("asymptotic") and found.p > 0.01


def test_fields_that_split_alike_are_one_finding_and_rare_values_are_left_out() -> None:
    fields = {
        "hardware.hostname": ["a"] * 5 + ["b"] * 5 + ["c"],
        "hardware.driver_version": ["1"] * 5 + ["2"] * 5 + ["3"],
        "config.resolved_args.output_dir": [f"/o{i}" for i in range(11)],
        "hardware.vbios": ["x"] * 10 + ["y"],
    }
    values: list[float | None] = [1.0] * 5 + [2.0] * 5 + [1.5]
    report = explain(11, Outcome("numeric", "loss", metric="loss"), values, fields)
    [finding] = report.findings
    assert finding.fields == ("hardware.driver_version", "hardware.hostname")
    assert [v.value for v in finding.values] == ["1", "2"] and finding.left_out == 1
    assert [v.aliases for v in finding.values] == [("a",), ("b",)]
    assert report.per_run == ["config.resolved_args.output_dir"]
    assert report.too_few == ["hardware.vbios"]


def test_worst_marks_the_highest_share_bad() -> None:
    split = asked("loss", None, "20%", None).split([float(v) for v in range(10)] + [None])
    assert split == [0.0] * 8 + [1.0, 1.0, None]
    below = asked(None, "acc<0.5", None, None)
    assert below.metric == "acc" and below.split([0.4, 0.6]) == [1.0, 0.0]


@pytest.mark.parametrize(
    ("metric", "bad", "worst", "status"),
    [(None, None, None, None), ("m", "m>1", None, "failed"), ("m", None, "0%", None)],
)
def test_an_outcome_that_says_nothing_or_two_things_is_refused(
    metric: str | None, bad: str | None, worst: str | None, status: str | None
) -> None:
    with pytest.raises(InvalidInputError):
        asked(metric, bad, worst, status)
