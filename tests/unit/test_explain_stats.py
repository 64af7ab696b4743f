"""The statistics of ``expdna explain`` on small hand-checked cases, and its outcome options."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy import special, stats

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


def _fields_of_36_runs() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
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
    return outcome, binary, fields


def test_shared_permutations_agree_with_scipys_permutation_test() -> None:
    # 36 runs, too many splits to enumerate: both are Monte Carlo over 9,999 resamples
    outcome, binary, fields = _fields_of_36_runs()
    for kind, values in (("numeric", outcome), ("binary", binary)):
        found = association.associations(kind, values, fields, threshold=None)
        for codes, test in zip(fields, found, strict=True):
            samples = [values[codes == k] for k in range(int(codes.max()) + 1)]
            if test.method == "Fisher exact":
                continue
            assert test.method == "permutation (9999 resamples)", test.method
            theirs = _scipy_p(samples, kind == "numeric")
            error = 4 * np.sqrt(2 * theirs * (1 - theirs) / association.RESAMPLES)
            assert abs(test.p - theirs) <= error + 1e-3, (kind, test.p, theirs)


def test_the_sequential_test_stops_only_above_the_threshold_and_agrees_with_scipy() -> None:
    # Besag-Clifford: a field stops at its `stop`-th resample at least as extreme, the
    # l-th, with p = stop / l > threshold; the others are the full test's, unchanged
    outcome, binary, fields = _fields_of_36_runs()
    stop = association.stop_after(association.RESAMPLES, 0.05)
    assert stop == 500 and stop / association.RESAMPLES > 0.05
    stopped = 0
    for kind, values in (("numeric", outcome), ("binary", binary)):
        full = association.associations(kind, values, fields, threshold=None)
        found = association.associations(kind, values, fields, threshold=0.05)
        for codes, test, whole in zip(fields, found, full, strict=True):
            if not test.method.startswith("permutation (stopped"):
                assert (test.p, test.method) == (whole.p, whole.method)
                continue
            stopped += 1
            drawn = int(test.method.split()[3])
            assert test.p == stop / drawn > 0.05 and drawn < association.RESAMPLES
            assert whole.p > 0.05  # the full test does not find it either
            samples = [values[codes == k] for k in range(int(codes.max()) + 1)]
            theirs = _scipy_p(samples, kind == "numeric")
            # the sequential estimate's variance is about p^2 (1 - p) / stop
            spread = theirs**2 * (1 - theirs) / stop + theirs * (1 - theirs) / 9999
            assert abs(test.p - theirs) <= 4 * np.sqrt(spread) + 1e-3, (kind, test.p, theirs)
        assert [t.effect for t in found] == [t.effect for t in full]
    assert stopped >= 3


def test_sequential_p_values_are_valid_under_the_null() -> None:
    # 400 fields unrelated to the outcome: P(p <= a) <= a, within the binomial spread
    rng = np.random.default_rng(11)
    outcome = rng.normal(0, 1, 300)
    fields = [rng.integers(0, 3, 300) for _ in range(400)]
    found = association.associations("numeric", outcome, fields)
    ps = np.array([t.p for t in found])
    assert sum(t.method.startswith("permutation (stopped") for t in found) > 300
    for a in (0.05, 0.2, 0.5, 0.8):
        share = float((ps <= a).mean())
        assert share <= a + 4 * np.sqrt(a * (1 - a) / len(ps)), (a, share)
        assert share >= a - 4 * np.sqrt(a * (1 - a) / len(ps)) - 0.01, (a, share)


def test_stopping_leaves_every_finding_and_its_adjusted_p_as_the_full_test_has_them() -> None:
    rng = np.random.default_rng(2)
    outcome = rng.normal(0, 1, 2000)
    fields = [rng.integers(0, 3, 2000) for _ in range(60)]
    for shift, field in zip((0.15, 0.12, 0.1, 0.08, 0.3), fields, strict=False):
        outcome[field == 1] += shift  # planted effects, some weak
    full = association.associations("numeric", outcome, fields, threshold=None)
    found = association.associations("numeric", outcome, fields)
    q_full = association.adjusted([t.p for t in full])
    q_found = association.adjusted([t.p for t in found])
    below = [i for i, q in enumerate(q_full) if q < 0.05]
    assert 2 <= len(below) < 5
    assert below == [i for i, q in enumerate(q_found) if q < 0.05]
    assert [q_found[i] for i in below] == [q_full[i] for i in below]


def test_many_runs_share_fewer_resamples_and_an_extreme_field_takes_the_asymptotic_tail() -> None:
    rng = np.random.default_rng(1)
    outcome = rng.normal(0, 1, 4000)
    null = rng.integers(0, 3, 4000)
    planted = rng.integers(0, 2, 4000)
    outcome[planted == 1] += 1.0
    found = association.associations("numeric", outcome, [null, planted])
    count = association.resamples(4000)
    assert count == 500
    assert found[0].method.startswith("permutation (stopped at ") and found[0].p > 0.05
    assert found[1].method == f"permutation ({count} resamples), asymptotic tail"
    assert found[1].p < 1e-100 and found[1].p <= 1 / (count + 1)
    values: list[float | None] = [float(v) for v in outcome]
    fields = {"hardware.hostname": [str(v) for v in null], "a.b": [str(v) for v in planted]}
    report = explain(4000, Outcome("numeric", "loss", metric="loss"), values, fields)
    assert report.findings[0].fields == ("a.b",)
    said = " ".join(limits(report))
    assert "1 finding is beyond every permutation resample" in said
    assert "1 field was resampled only until the p-value was sure to be above 0.05" in said


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
    assert split.values == [0.0] * 8 + [1.0, 1.0, None]
    assert split.notes == ("the highest 20% of loss: 2 of 10 runs, at or above 8",)
    below = asked(None, "acc<0.5", None, None)
    assert below.metric == "acc" and below.split([0.4, 0.6]).values == [1.0, 0.0]


def test_worst_says_how_many_runs_ties_made_bad() -> None:
    split = asked("loss", None, "10%", None).split([1.0] * 6 + [2.0] * 4)
    assert split.values == [0.0] * 6 + [1.0] * 4
    assert split.notes == (
        "the highest 10% of loss: 4 of 10 runs, at or above 2",
        "runs tied at the cut: 10% of 10 is 1, not 4",
    )


def test_a_nan_metric_is_bad_in_a_split_and_left_out_of_a_ranking() -> None:
    nan, inf = float("nan"), float("inf")
    values: list[float | None] = [1.0, nan, inf, -inf, None]
    by_threshold = asked(None, "loss>2", None, None).split(values)
    assert by_threshold.values == [0.0, 1.0, 1.0, 0.0, None]
    assert "1 run has loss NaN: counted as bad" in by_threshold.notes
    assert "2 runs have an infinite loss: compared as a number beyond every finite one" in (
        by_threshold.notes
    )
    # NaN above +inf: the highest 25% of four runs is the NaN one
    assert asked("loss", None, "25%", None).split(values).values == [0.0, 1.0, 0.0, 0.0, None]
    ranked = asked("loss", None, None, None).split(values)
    assert ranked.values[:1] == [1.0] and ranked.values[1] != ranked.values[1]  # NaN kept
    assert ranked.notes[-1] == "1 run has loss NaN: left out (--bad or --worst count them as bad)"
    report = explain(5, Outcome("numeric", "loss", metric="loss"), ranked.values, {}, ranked.notes)
    assert report.judged == 3 and report.missing == 1
    said = limits(report)
    assert ranked.notes[-1] in said and "1 of 5 runs have no loss: left out" in said


def test_medians_of_huge_values_do_not_overflow() -> None:
    big = 1e308
    values: list[float | None] = [big] * 4 + [-big] * 4
    fields = {"hardware.nccl": ["a"] * 4 + ["b"] * 4}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow in numpy warns
        report = explain(8, Outcome("numeric", "loss", metric="loss"), values, fields)
    [finding] = report.findings
    assert [v.centre for v in finding.values] == [big, -big]
    assert finding.difference == float("inf")  # past the double range: JSON says null
    assert finding.to_dict()["difference"] is None
    assert json.loads(json.dumps(report.to_dict(), allow_nan=False))["runs"] == 8


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


def test_the_chi_square_tail_is_scipys() -> None:
    # the closed form of Q(df/2, x/2) against scipy.special.chdtrc: both are within
    # 1e-12 of a 40-digit reference up to 1,000 degrees of freedom, so within 2e-12 of
    # each other; far in the tail, both underflow alike
    rng = np.random.default_rng(8)
    cases = [(df, x) for df in (1, 2, 3, 4, 7, 40, 41, 299) for x in (1e-9, 0.3, 1.0, df, 9.0 * df)]
    cases += [(int(rng.integers(1, 1000)), float(rng.uniform(0, 3000))) for _ in range(2000)]
    for df, x in cases:
        theirs = float(special.chdtrc(df, x))
        assert association.chi2_tail(df, x) == pytest.approx(theirs, rel=2e-12, abs=1e-300)
    assert association.chi2_tail(3, 0.0) == 1.0 and association.chi2_tail(2, 2000.0) == 0.0
    assert association.chi2_tail(5000, 100.0) == pytest.approx(1.0, rel=1e-13)


def test_few_runs_beyond_every_resample_keep_the_permutation_bound() -> None:
    # 45 runs in three separated groups: no resample is as extreme, and at this size the
    # asymptotic tail is not trusted, so p is the bound 1 / (1 + resamples)
    outcome = np.concatenate([np.arange(15.0), np.arange(15.0) + 100, np.arange(15.0) + 200])
    [found] = association.associations("numeric", outcome, [np.repeat(np.arange(3), 15)])
    assert found.method == "permutation (9999 resamples)"
    assert found.p == pytest.approx(1 / 10_000) and found.effect == 1.0 and found.extreme == 2
