"""Each field's association with the outcome, for every field at once (``expdna[explain]``).

A field splits the judged runs into groups by its value (a run of a value too rare to test
is left out: code -1). A numeric outcome: the difference in medians, and Cliff's delta (a
rank-based effect size, -1 to 1) of the most extreme group against the rest; tested on the
outcome's ranks. A bad/good outcome: the bad rate per group and the rate difference of the
worst group against the rest; tested on the 0/1 outcome.

The p-value, by the first rule that applies:

- two groups of a bad/good outcome: Fisher's exact test (the exact permutation test of a
  2 x 2 table);
- at most :data:`RESAMPLES` distinct ways to split the runs: the exact permutation test,
  ``scipy.stats.permutation_test`` enumerating every split, of the Kruskal-Wallis
  statistic (numeric) or the chi-square statistic (bad/good);
- else a Monte Carlo permutation test whose permutations are **shared by every field**:
  one matrix of permuted scores (ranks, or 0/1) times one 0/1 matrix of every field's
  groups gives every field's group sums under every permutation in one product. The
  statistic is the between-group sum of squares of the scores of the field's tested runs
  (for a field that tests every run, the Kruskal-Wallis H and the chi-square statistic up
  to a constant factor); p = (1 + resamples at least as extreme) / (1 + resamples), as
  SciPy's ``permutation_test`` computes it. ``tests/unit/test_explain_stats.py`` holds
  these p-values to SciPy's on small cases.

SciPy's ``permutation_test`` draws its permutations per field; at 10,000 runs and 300
fields that is 300 matrices of permuted scores where one does. The resamples shrink as the
runs grow (:func:`resamples`), so the matrix stays near :data:`CELLS` numbers: 9,999 up to
200 runs, 199 at 10,000. Where no resample is as extreme as the data, the permutation
p-value can only say p <= 1 / (1 + resamples); from :data:`TAIL_FROM` runs on, where the
resamples are fewest and the approximation good, the statistic's asymptotic distribution
(as ``scipy.stats.kruskal`` and ``chi2_contingency`` compute it) gives the tail, never
above that bound. The method names which rule answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb, lgamma, log

import numpy as np
from numpy.typing import NDArray
from scipy import special

#: Most resamples of a permutation test (and the most distinct splits enumerated exactly).
RESAMPLES = 9999
#: Fewest resamples of the shared Monte Carlo test.
MIN_RESAMPLES = 199
#: Permuted scores held at once (resamples x runs), which sets the resamples per run.
CELLS = 2_000_000
#: Resamples per block of the shared test (a block is one matrix product).
_BLOCK = 256
#: Fewest runs for the asymptotic tail: with fewer, the chi-square approximation of a
#: statistic over small groups is not to be trusted, and there are resamples enough.
TAIL_FROM = 1000
#: The permutation tests' seed, so one store gives one answer.
SEED = 20261201

Floats = NDArray[np.float64]
Codes = NDArray[np.int64]


@dataclass(frozen=True)
class Association:
    """The test of one field. ``extreme``: the group farthest from the rest (numeric: its
    median from the pooled median) or with the highest bad rate; ``effect``: its Cliff's
    delta (numeric) or rate difference (bad/good) against the other runs; ``method``: how
    ``p`` was got."""

    p: float
    effect: float
    extreme: int
    method: str


def resamples(runs: int) -> int:
    """Resamples of the shared Monte Carlo test for this many runs."""
    return max(MIN_RESAMPLES, min(RESAMPLES, CELLS // max(runs, 1)))


def splits(sizes: Sequence[int], most: int = RESAMPLES) -> int:
    """The number of distinct ways to split the runs into groups of these sizes, or
    ``most + 1`` where there are more (counting them all is a number of thousands of digits
    at thousands of runs)."""
    if lgamma(sum(sizes) + 1) - sum(lgamma(s + 1) for s in sizes) > log(most) + 1:
        return most + 1
    total, count = 0, 1
    for size in sizes:
        total += size
        count *= comb(total, size)
    return min(count, most + 1)


def rankdata(values: Floats) -> Floats:
    """Ranks 1..n, ties given their average rank (``scipy.stats.rankdata``'s default),
    without importing ``scipy.stats`` (a second of a command's start)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(values)]
    average = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(average, ends - starts)
    return ranks


def fisher_exact(table: Sequence[Sequence[int]]) -> float:
    """The two-sided p-value of Fisher's exact test of a 2 x 2 table (as
    ``scipy.stats.fisher_exact``): the hypergeometric probability of every table with the
    same margins no more likely than this one."""
    (a, b), (c, d) = table
    row, column, total = a + b, a + c, a + b + c + d
    low, high = max(0, column - (total - row)), min(row, column)
    support = np.arange(low, high + 1, dtype=np.float64)
    log_p = (
        special.gammaln(row + 1)
        + special.gammaln(total - row + 1)
        + special.gammaln(column + 1)
        + special.gammaln(total - column + 1)
        - special.gammaln(total + 1)
        - special.gammaln(support + 1)
        - special.gammaln(row - support + 1)
        - special.gammaln(column - support + 1)
        - special.gammaln(total - row - column + support + 1)
    )
    observed = log_p[a - low]
    # scipy's relative tolerance for tables as likely as the observed one
    p = float(np.exp(log_p[log_p <= observed + np.log1p(1e-7)]).sum())
    return min(p, 1.0)


def _kruskal_h(*samples: Floats, axis: int = -1) -> Floats:
    """The Kruskal-Wallis H of samples of ranks (no tie correction: a constant factor under
    permutation, so the p-value is the same); vectorised over ``axis``."""
    n = sum(s.shape[axis] for s in samples)
    total = sum((s.sum(axis=axis) ** 2) / s.shape[axis] for s in samples)
    h: Floats = 12.0 / (n * (n + 1)) * total - 3.0 * (n + 1)
    return h


def _chi2(*samples: Floats, axis: int = -1) -> Floats:
    """The chi-square statistic of bad counts per group (of 0/1 samples), vectorised; a
    constant factor of the 2 x k table's, for a fixed total."""
    n = sum(s.shape[axis] for s in samples)
    bad = sum(s.sum(axis=axis) for s in samples)
    rate = bad / n
    stat: Floats = sum(
        (s.sum(axis=axis) - s.shape[axis] * rate) ** 2 / s.shape[axis] for s in samples
    )
    return stat


def _exact(samples: Sequence[Floats], numeric: bool) -> float:
    """The exact permutation p-value (every distinct split enumerated)."""
    from scipy import stats

    if numeric:
        ranks = stats.rankdata(np.concatenate(samples))
        samples = np.split(ranks, np.cumsum([len(s) for s in samples])[:-1])
    result = stats.permutation_test(
        samples,
        _kruskal_h if numeric else _chi2,
        permutation_type="independent",
        vectorized=True,
        n_resamples=RESAMPLES,
        alternative="greater",
        rng=np.random.default_rng(SEED),
    )
    return float(result.pvalue)


def _asymptotic(samples: Sequence[Floats], numeric: bool) -> float:
    """The p-value from the statistic's asymptotic distribution (chi-square, k - 1 degrees
    of freedom): Kruskal-Wallis with its tie correction (``scipy.stats.kruskal``), or the
    chi-square test of the 2 x k table (``scipy.stats.chi2_contingency``, k > 2)."""
    pooled = np.concatenate(samples)
    sizes = np.array([len(s) for s in samples], dtype=np.float64)
    runs = len(pooled)
    if numeric:
        ranks = rankdata(pooled)
        sums = np.add.reduceat(ranks, np.cumsum([0, *sizes[:-1]]).astype(np.int64))
        h = 12.0 / (runs * (runs + 1)) * float((sums**2 / sizes).sum()) - 3.0 * (runs + 1)
        ties = np.unique(pooled, return_counts=True)[1].astype(np.float64)
        h /= 1.0 - float((ties**3 - ties).sum()) / (runs**3 - runs)
        return float(special.chdtrc(len(samples) - 1, h))
    bad = np.array([float(s.sum()) for s in samples])
    rate = bad.sum() / runs
    expected_bad, expected_good = sizes * rate, sizes * (1 - rate)
    chi2 = float(
        ((bad - expected_bad) ** 2 / expected_bad).sum()
        + ((sizes - bad - expected_good) ** 2 / expected_good).sum()
    )
    return float(special.chdtrc(len(samples) - 1, chi2))


def _between(sums: Floats, sizes: Floats, starts: Codes, weight: Floats) -> Floats:
    """Each field's between-group sum of squares from its groups' score sums (last axis:
    every field's groups, field after field from ``starts``): sum(S^2 / n) plus
    ``weight`` times the square of the field's sum of S."""
    squares = np.add.reduceat(sums**2 / sizes, starts, axis=-1)
    total = np.add.reduceat(sums, starts, axis=-1)
    found: Floats = squares + weight * total**2
    return found


def shared_permutation(
    scores: Floats, splits: Sequence[Codes], count: int, seed: int = SEED
) -> tuple[Floats, Codes]:
    """The Monte Carlo permutation p-value of each split of the runs (codes per run: the
    group, -1 for a run left out) on ``scores``, from ``count`` permutations shared by
    every split; and per split how many resamples were at least as extreme."""
    runs = len(scores)
    centred = np.asarray(scores, dtype=np.float64) - float(np.mean(scores))
    # A split that tests every run needs no column for its last group: the centred scores
    # sum to 0, so that group's sum is minus the others' and its square/n is the weight's
    # term; a split that leaves runs out has every group and subtracts its mean's share.
    widths: list[int] = []
    weights: list[float] = []
    for codes in splits:
        groups = int(codes.max()) + 1
        tested = codes >= 0
        if tested.all():
            widths.append(groups - 1)
            weights.append(1.0 / int((codes == groups - 1).sum()))
        else:
            widths.append(groups)
            weights.append(-1.0 / int(tested.sum()))
    starts = np.cumsum([0, *widths[:-1]]).astype(np.int64)
    columns = np.zeros((runs, sum(widths)), dtype=np.float64)
    for start, width, codes in zip(starts.tolist(), widths, splits, strict=True):
        inside = np.flatnonzero((codes >= 0) & (codes < width))
        columns[inside, start + codes[inside]] = 1.0
    sizes = columns.sum(axis=0)
    weight = np.array(weights)
    observed = _between(centred @ columns, sizes, starts, weight)
    # summation order differs between the product and the observed sums
    floor = observed - 1e-9 * np.maximum(np.abs(observed), 1.0)
    rng = np.random.default_rng(seed)
    extreme = np.zeros(len(splits), dtype=np.int64)
    for begin in range(0, count, _BLOCK):
        block = min(_BLOCK, count - begin)
        permuted = np.empty((block, runs), dtype=np.float64)
        for row in range(block):
            permuted[row] = centred[rng.permutation(runs)]
        extreme += (_between(permuted @ columns, sizes, starts, weight) >= floor).sum(axis=0)
    ps: Floats = ((1.0 + extreme) / (1.0 + count)).astype(np.float64)
    return ps, extreme


def cliffs_delta(inside: Floats, outside: Floats) -> float:
    """P(inside > outside) - P(inside < outside): the Mann-Whitney U of ``inside``, from the
    pooled ranks, scaled to -1 .. 1."""
    ranks = rankdata(np.concatenate([inside, outside]))
    n1, n2 = len(inside), len(outside)
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    return 2.0 * u / (n1 * n2) - 1.0


def _extreme(centres: Sequence[float], middle: float) -> int:
    """The group whose centre is farthest from ``middle``; of two groups, the higher (each
    is as far from the other)."""
    if len(centres) == 2:
        return 0 if centres[0] > centres[1] else 1
    return max(range(len(centres)), key=lambda i: (abs(centres[i] - middle), centres[i]))


@dataclass(frozen=True)
class _Field:
    samples: list[Floats]
    extreme: int
    effect: float


def _described(outcome: Floats, ranks: Floats, codes: Codes, numeric: bool) -> _Field:
    samples = [outcome[codes == k] for k in range(int(codes.max()) + 1)]

    def rest_of(i: int) -> Floats:
        return np.concatenate([s for j, s in enumerate(samples) if j != i])

    if numeric:
        medians = [float(np.median(s)) for s in samples]
        extreme = _extreme(medians, float(np.median(outcome[codes >= 0])))
        if (codes >= 0).all():  # the pooled ranks are every run's: no ranking per field
            inside, outside = len(samples[extreme]), len(outcome) - len(samples[extreme])
            u = float(ranks[codes == extreme].sum()) - inside * (inside + 1) / 2
            return _Field(samples, extreme, 2.0 * u / (inside * outside) - 1.0)
        return _Field(samples, extreme, cliffs_delta(samples[extreme], rest_of(extreme)))
    rates = [float(s.mean()) for s in samples]
    extreme = max(range(len(rates)), key=lambda i: (rates[i], -i))  # the worst value
    return _Field(samples, extreme, rates[extreme] - float(rest_of(extreme).mean()))


def associations(kind: str, outcome: Floats, fields: Sequence[Codes]) -> list[Association]:
    """The association of each field (codes per judged run: its group 0..k-1, -1 for a run
    left out; at least two groups) with ``outcome`` ("numeric", or "binary" 1 bad / 0 good)."""
    numeric = kind == "numeric"
    ranks = rankdata(outcome) if numeric else outcome
    described = [_described(outcome, ranks, codes, numeric) for codes in fields]
    found: list[Association | None] = [None] * len(fields)
    shared: list[int] = []
    for i, field in enumerate(described):
        sizes = [len(s) for s in field.samples]
        tested = np.concatenate(field.samples)
        if np.ptp(tested) == 0:
            found[i] = Association(1.0, 0.0, field.extreme, "no variation")
        elif not numeric and len(sizes) == 2:
            bad = [int(s.sum()) for s in field.samples]
            table = [[bad[0], sizes[0] - bad[0]], [bad[1], sizes[1] - bad[1]]]
            p = fisher_exact(table)
            found[i] = Association(p, field.effect, field.extreme, "Fisher exact")
        elif splits(sizes) <= RESAMPLES:
            p = _exact(field.samples, numeric)
            found[i] = Association(p, field.effect, field.extreme, "exact permutation")
        else:
            shared.append(i)
    if shared:
        count = resamples(len(outcome))
        ps, extreme = shared_permutation(ranks, [fields[i] for i in shared], count)
        for i, p, beyond in zip(shared, ps.tolist(), extreme.tolist(), strict=True):
            field = described[i]
            method = f"permutation ({count} resamples)"
            if beyond == 0 and len(outcome) >= TAIL_FROM:
                p = min(p, _asymptotic(field.samples, numeric))
                method += ", asymptotic tail"
            found[i] = Association(p, field.effect, field.extreme, method)
    return [a for a in found if a is not None]


def _codes(groups: Sequence[Floats]) -> tuple[Floats, Codes]:
    outcome = np.concatenate(groups).astype(np.float64)
    codes = np.repeat(np.arange(len(groups), dtype=np.int64), [len(g) for g in groups])
    return outcome, codes


def numeric(groups: Sequence[Floats]) -> Association:
    """A numeric outcome split into ``groups`` (two or more, each non-empty)."""
    outcome, codes = _codes(groups)
    return associations("numeric", outcome, [codes])[0]


def binary(groups: Sequence[Floats]) -> Association:
    """A bad (1) / good (0) outcome split into ``groups``."""
    outcome, codes = _codes(groups)
    return associations("binary", outcome, [codes])[0]


def adjusted(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (as ``scipy.stats.false_discovery_control``):
    p * m / rank, made monotone from the largest down, at most 1."""
    if not ps:
        return []
    given = np.asarray(ps, dtype=np.float64)
    order = np.argsort(given)
    scaled = given[order] * len(given) / np.arange(1, len(given) + 1)
    monotone = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    qs = np.empty(len(given), dtype=np.float64)
    qs[order] = monotone
    return [float(q) for q in qs]
