"""The statistics of ``expdna explain`` on small hand-checked cases, and its outcome options."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from expdna.errors import InvalidInputError
from expdna.explain import association
from expdna.explain.outcome import asked
from expdna.explain.report import Outcome, explain, limits


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


def _scipy_p(samples: list[np.ndarray], numeric: bool) -> float:
    """SciPy's own Monte Carlo permutation p-value of one field."""
    if numeric:
        ranks = stats.rankdata(np.concatenate(samples))
        samples = np.split(ranks, np.cumsum([len(s) for s in samples])[:-1])
    statistic = association._kruskal_h if numeric else association._chi2
    result = stats.permutation_test(
        samples,
        statistic,
        permutation_type="independent",
        vectorized=True,
        n_resamples=association.RESAMPLES,
        alternative="greater",
        rng=np.random.default_rng(7),
    )
    return float(result.pvalue)


def test_shared_permutations_agree_with_scipys_permutation_test() -> None:
    # 36 runs, too many splits to enumerate: both are Monte Carlo over 9,999 resamples
    rng = np.random.default_rng(3)
    outcome = rng.normal(0, 1, 36)
    binary = (rng.random(36) < 0.4).astype(float)
    fields = [
        np.repeat(np.arange(2), 18),
        np.tile(np.arange(3), 12),
        rng.permutation(np.repeat(np.arange(3), [10, 12, 14])),
        rng.permutation(np.repeat(np.arange(4), 9)),
    ]
    outcome[fields[0] == 1] += 0.6  # one field with a moderate effect
    binary[fields[3] == 2] = 1.0
    for kind, values in (("numeric", outcome), ("binary", binary)):
        found = association.associations(kind, values, fields)
        for codes, test in zip(fields, found, strict=True):
            samples = [values[codes == k] for k in range(int(codes.max()) + 1)]
            if test.method == "Fisher exact":
                continue
            assert test.method == "permutation (9999 resamples)", test.method
            theirs = _scipy_p(samples, kind == "numeric")
            error = 4 * np.sqrt(2 * theirs * (1 - theirs) / association.RESAMPLES)
            assert abs(test.p - theirs) <= error + 1e-3, (kind, test.p, theirs)


def test_many_runs_share_fewer_resamples_and_an_extreme_field_takes_the_asymptotic_tail() -> None:
    rng = np.random.default_rng(1)
    outcome = rng.normal(0, 1, 4000)
    null = rng.integers(0, 3, 4000)
    planted = rng.integers(0, 2, 4000)
    outcome[planted == 1] += 1.0
    found = association.associations("numeric", outcome, [null, planted])
    count = association.resamples(4000)
    assert count == 500
    assert found[0].method == f"permutation ({count} resamples)" and found[0].p > 0.01
    assert found[1].method == f"permutation ({count} resamples), asymptotic tail"
    assert found[1].p < 1e-100 and found[1].p <= 1 / (count + 1)
    values: list[float | None] = [float(v) for v in outcome]
    fields = {"hardware.hostname": [str(v) for v in null], "a.b": [str(v) for v in planted]}
    report = explain(4000, Outcome("numeric", "loss", metric="loss"), values, fields)
    assert report.findings[0].fields == ("a.b",)
    assert "1 findings are beyond every permutation resample" in " ".join(limits(report))


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


def test_the_numpy_pieces_equal_scipys() -> None:
    # rankdata, Fisher's exact test, the asymptotic tails and BH without importing
    # scipy.stats on the command's path; SciPy's own answers here
    rng = np.random.default_rng(5)
    for _ in range(20):
        values = rng.integers(0, 6, 40).astype(float)
        assert np.array_equal(association.rankdata(values), stats.rankdata(values))
        a, b, c, d = (int(x) for x in rng.integers(0, 30, 4))
        table = [[a, b], [c, d]]
        assert association.fisher_exact(table) == pytest.approx(
            stats.fisher_exact(table).pvalue, rel=1e-9, abs=1e-15
        )
        groups = [values[:12], values[12:25], values[25:]]
        numeric = association._asymptotic(groups, numeric=True)
        assert numeric == pytest.approx(stats.kruskal(*groups).pvalue, rel=1e-9)
        bad = [(g > 2).astype(float) for g in groups]
        counts = [[float(g.sum()), len(g) - float(g.sum())] for g in bad]
        assert association._asymptotic(bad, numeric=False) == pytest.approx(
            stats.chi2_contingency(counts).pvalue, rel=1e-9
        )
        ps = rng.random(30) ** 3
        assert association.adjusted(list(ps)) == pytest.approx(
            list(stats.false_discovery_control(ps, method="bh")), rel=1e-12
        )


def test_few_runs_beyond_every_resample_keep_the_permutation_bound() -> None:
    # 45 runs in three separated groups: no resample is as extreme, and at this size the
    # asymptotic tail is not trusted, so p is the bound 1 / (1 + resamples)
    outcome = np.concatenate([np.arange(15.0), np.arange(15.0) + 100, np.arange(15.0) + 200])
    [found] = association.associations("numeric", outcome, [np.repeat(np.arange(3), 15)])
    assert found.method == "permutation (9999 resamples)"
    assert found.p == pytest.approx(1 / 10_000) and found.effect == 1.0 and found.extreme == 2
