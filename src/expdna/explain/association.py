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
200 runs, 200 at 10,000. Where no resample is as extreme as the data, the permutation
p-value can only say p <= 1 / (1 + resamples); from :data:`TAIL_FROM` runs on, where the
resamples are fewest and the approximation good, the statistic's asymptotic distribution
(as ``scipy.stats.kruskal`` and ``chi2_contingency`` compute it, :func:`chi2_tail`) gives
the tail, never above that bound.

A field is resampled only until it is decided (Besag and Clifford's sequential Monte Carlo
test): once ``h`` resamples have been at least as extreme as the data, at the l-th, its
p-value is h / l, where h (:func:`stop_after`) is the fewest that puts h / l above the
threshold of a finding however late they come. Most fields of a fleet go with nothing and
stop after a few dozen resamples, and their columns leave the product. A field that can
be a finding never stops and gets the full test's p-value, bit for bit; as the
Benjamini-Hochberg adjustment of a p-value below the threshold only involves p-values
below it, the findings and their adjusted p-values are the full test's. The method names
which rule answered.

Nothing here imports SciPy but the exact test: the chi-square tail and the log-factorials
of Fisher's test are the standard library's (``math.erfc``, ``math.lgamma``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import comb, erfc, exp, lgamma, log, sqrt

import numpy as np
from numpy.typing import NDArray

#: Most resamples of a permutation test (and the most distinct splits enumerated exactly).
RESAMPLES = 9999
#: Fewest resamples of the shared Monte Carlo test.
MIN_RESAMPLES = 199
#: Permuted scores held at once (resamples x runs), which sets the resamples per run.
CELLS = 2_000_000
#: Resamples per block of the shared test (a block is one matrix product).
_BLOCK = 256
#: Resamples per block of the sequential test: after each, the splits that stopped leave.
#: Fewer, larger blocks where numpy's BLAS runs threads: each product makes them meet, and
#: on a busy machine a meeting waits for the slowest (blocks of 32 took twice as long).
_STEP = 100
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
    #: per group: the median (numeric) or the bad rate (bad/good)
    centres: tuple[float, ...] = ()
    #: per group, its bad runs (bad/good only)
    bad: tuple[int, ...] = ()
    #: the centre of the tested runs outside the extreme group
    rest: float = float("nan")


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


@lru_cache(maxsize=8)
def _log_factorials(n: int) -> Floats:
    """log(k!) for k = 0..n (``math.lgamma``, to the last bit as libm gives it); once per
    fleet size, as every field's table has the same total but for runs left out."""
    table = np.array([lgamma(k + 1.0) for k in range(n + 1)], dtype=np.float64)
    table.setflags(write=False)
    return table


def fisher_exact(table: Sequence[Sequence[int]]) -> float:
    """The two-sided p-value of Fisher's exact test of a 2 x 2 table (as
    ``scipy.stats.fisher_exact``): the hypergeometric probability of every table with the
    same margins no more likely than this one."""
    (a, b), (c, d) = table
    row, column, total = a + b, a + c, a + b + c + d
    low, high = max(0, column - (total - row)), min(row, column)
    support = np.arange(low, high + 1, dtype=np.int64)
    lf = _log_factorials(total)
    log_p = (
        lf[row]
        + lf[total - row]
        + lf[column]
        + lf[total - column]
        - lf[total]
        - lf[support]
        - lf[row - support]
        - lf[column - support]
        - lf[total - row - column + support]
    )
    observed = log_p[a - low]
    # scipy's relative tolerance for tables as likely as the observed one
    p = float(np.exp(log_p[log_p <= observed + np.log1p(1e-7)]).sum())
    return min(p, 1.0)


def chi2_tail(df: int, x: float) -> float:
    """P(X >= x) for X chi-square with ``df`` (a whole number) degrees of freedom, as
    ``scipy.special.chdtrc``, in closed form: the regularised upper incomplete gamma
    Q(df/2, x/2) of a whole or half-whole order is a finite sum,

        Q(m, y)       = e^-y (1 + y + ... + y^(m-1) / (m-1)!)
        Q(m + 1/2, y) = erfc(sqrt y) + e^-y (y^(1/2) / G(3/2) + ... + y^(m-1/2) / G(m+1/2))

    (the Poisson and the half-order recurrences). The terms are positive, so they are
    summed without cancellation; each is the largest term times a product of ratios, and
    the largest is ``exp`` of its logarithm, as Cephes (SciPy's) takes its prefactor, so
    a term far below the double range is 0 rather than an overflow."""
    if df < 1:
        raise ValueError(f"degrees of freedom {df}: expected at least 1")
    if not x > 0:
        return 1.0
    y = x / 2.0
    half = df % 2 == 1
    first = 1 if half else 0  # the sum's first k
    last = (df - 1) // 2 if half else df // 2 - 1
    shift = 0.5 if half else 0.0  # term k is y^(k - shift) e^-y / G(k - shift + 1)
    base = erfc(sqrt(y)) if half else 0.0
    if last < first:
        return base
    # the terms grow while y / (k - shift) > 1: the largest is at k - shift near y
    top = min(max(first, int(y + shift)), last)
    log_top = (top - shift) * log(y) - y - lgamma(top - shift + 1.0)
    total, term = 1.0, 1.0
    for k in range(top, first, -1):  # down: term(k-1) = term(k) (k - shift) / y
        term *= (k - shift) / y
        total += term
        if term < total * 1e-17:
            break
    term = 1.0
    for k in range(top + 1, last + 1):  # up: term(k) = term(k-1) y / (k - shift)
        term *= y / (k - shift)
        total += term
        if term < total * 1e-17:
            break
    return min(base + exp(log_top) * total, 1.0)


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
        return chi2_tail(len(samples) - 1, h)
    bad = np.array([float(s.sum()) for s in samples])
    rate = bad.sum() / runs
    expected_bad, expected_good = sizes * rate, sizes * (1 - rate)
    chi2 = float(
        ((bad - expected_bad) ** 2 / expected_bad).sum()
        + ((sizes - bad - expected_good) ** 2 / expected_good).sum()
    )
    return chi2_tail(len(samples) - 1, chi2)


def _between(sums: Floats, sizes: Floats, starts: Codes, weight: Floats) -> Floats:
    """Each field's between-group sum of squares from its groups' score sums (last axis:
    every field's groups, field after field from ``starts``): sum(S^2 / n) plus
    ``weight`` times the square of the field's sum of S."""
    squares = np.add.reduceat(sums**2 / sizes, starts, axis=-1)
    total = np.add.reduceat(sums, starts, axis=-1)
    found: Floats = squares + weight * total**2
    return found


def stop_after(count: int, threshold: float) -> int:
    """Resamples at least as extreme after which a field's sequential test stops: the
    fewest whose p-value, ``stop / resamples drawn``, is above ``threshold`` however
    late they come, so a field that stops is never below it."""
    return int(threshold * count) + 1


def shared_permutation(
    scores: Floats,
    splits: Sequence[Codes],
    count: int,
    seed: int = SEED,
    stop: int | None = None,
) -> tuple[Floats, Codes, Codes]:
    """The Monte Carlo permutation p-value of each split of the runs (codes per run: the
    group, -1 for a run left out) on ``scores``, from ``count`` permutations shared by
    every split; per split how many resamples were at least as extreme, and how many were
    drawn for it.

    ``stop``: Besag and Clifford's sequential test (Biometrika 78, 1991). A split stops
    at the resample that makes ``stop`` at least as extreme, the l-th, with p = stop / l;
    one that never gets there takes every resample, p = (1 + extreme) / (1 + count), as
    without stopping. Both are valid p-values (P(p <= a) <= a under the null). The
    permutations are drawn in one order whichever splits remain, so a split's answer
    does not depend on the others', and one that does not stop gets the same answer as
    from the full test."""
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
    # One row per group column (0/1 over the runs), written a row at a time: contiguous.
    rows = np.zeros((sum(widths), runs), dtype=np.float64)
    at = 0
    for columns, codes in zip(widths, splits, strict=True):
        rows[at : at + columns] = codes[np.newaxis, :] == np.arange(columns)[:, np.newaxis]
        at += columns
    sizes = rows.sum(axis=1)
    width = np.array(widths, dtype=np.int64)
    weight = np.array(weights)
    starts = np.cumsum(width) - width
    observed = _between(centred @ rows.T, sizes, starts, weight)
    # summation order differs between the product and the observed sums
    floor = observed - 1e-9 * np.maximum(np.abs(observed), 1.0)
    rng = np.random.default_rng(seed)
    extreme = np.zeros(len(splits), dtype=np.int64)
    drawn = np.full(len(splits), count, dtype=np.int64)
    ps: Floats = np.zeros(len(splits), dtype=np.float64)
    active = np.arange(len(splits))  # the splits still being resampled
    block_size = _BLOCK if stop is None else _STEP
    for begin in range(0, count, block_size):
        block = min(block_size, count - begin)
        permuted = np.empty((block, runs), dtype=np.float64)
        for row in range(block):
            permuted[row] = centred[rng.permutation(runs)]
        beyond = _between(permuted @ rows.T, sizes, starts, weight) >= floor[active]
        if stop is None:
            extreme += beyond.sum(axis=0)
            continue
        running = extreme[active][np.newaxis, :] + np.cumsum(beyond, axis=0)
        extreme[active] = running[-1]
        stopped = running[-1] >= stop
        if not stopped.any():
            continue
        done = active[stopped]
        drawn[done] = begin + 1 + np.argmax(running[:, stopped] >= stop, axis=0)
        extreme[done] = stop
        ps[done] = stop / drawn[done]
        if stopped.all():
            break
        # the stopped splits' columns leave the product
        kept = np.repeat(~stopped, width[active])
        rows, sizes = rows[kept], sizes[kept]
        active, weight = active[~stopped], weight[~stopped]
        starts = np.cumsum(width[active]) - width[active]
    full = drawn == count
    if stop is not None:
        full &= extreme < stop
    ps[full] = (1.0 + extreme[full]) / (1.0 + count)
    return ps, extreme, drawn


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


def _midpoint(low: Floats, high: Floats) -> Floats:
    """(low + high) / 2 elementwise, as ``np.median`` takes it, without overflowing: halving
    is exact for a double (short of the subnormals), so low / 2 + high / 2 is the same
    number wherever low + high is finite, and 1e308 where both are 1e308. Equal values are
    their own midpoint (two infinities of one sign); -inf and +inf have none (NaN)."""
    with np.errstate(invalid="ignore"):
        found: Floats = np.where(low == high, low, low / 2 + high / 2)
    return found


def _middle(ordered: Floats) -> float:
    """The median of sorted values (as ``np.median``: the mean of the two middle ones)."""
    n = len(ordered)
    return float(
        _midpoint(ordered[(n - 1) // 2 : (n - 1) // 2 + 1], ordered[n // 2 : n // 2 + 1])[0]
    )


@dataclass(frozen=True)
class _Field:
    """One field described: per group its size, its centre (median or bad rate) and bad
    runs (bad/good); the extreme group, its effect, and the centre of the other runs."""

    codes: Codes
    sizes: list[int]
    centres: tuple[float, ...]
    bad: tuple[int, ...]
    extreme: int
    effect: float
    rest: float
    varies: bool

    def samples(self, outcome: Floats) -> list[Floats]:
        """The outcome of each group's runs."""
        return [outcome[self.codes == k] for k in range(len(self.sizes))]


@dataclass(frozen=True)
class _Sorted:
    """The outcome once sorted, shared by every field: a field's groups are read off it."""

    outcome: Floats
    ranks: Floats
    order: Codes
    ordered: Floats


def _narrow(codes: Codes, groups: int) -> NDArray[np.signedinteger]:
    """The codes in the narrowest integer type: a stable sort of 8 or 16 bits is a radix
    sort, linear in the runs."""
    if groups < 2**7:
        return codes.astype(np.int8)
    if groups < 2**15:
        return codes.astype(np.int16)
    return codes


def _described(fleet: _Sorted, codes: Codes, numeric: bool) -> _Field:
    outcome, ordered = fleet.outcome, fleet.ordered
    groups = int(codes.max()) + 1
    coded = codes[fleet.order]  # each run's group, the runs in the outcome's order
    tested = coded >= 0
    every = bool(tested.all())
    sizes = np.bincount(coded[tested], minlength=groups)
    kept = ordered if every else ordered[tested]
    varies = bool(kept[0] != kept[-1])
    if numeric:
        # grouped by a stable sort, each group's outcome stays in order: its middle
        by = np.argsort(_narrow(coded, groups), kind="stable")
        starts = len(coded) - int(sizes.sum()) + np.cumsum(sizes) - sizes  # left out first
        values = ordered[by]
        medians = _midpoint(values[starts + (sizes - 1) // 2], values[starts + sizes // 2])
        centres = tuple(medians.tolist())
        extreme = _extreme(centres, _middle(kept))
        rest = _middle(ordered[tested & (coded != extreme)])
        inside, outside = int(sizes[extreme]), int(sizes.sum() - sizes[extreme])
        if every:  # the pooled ranks are every run's: no ranking per field
            u = float(fleet.ranks[codes == extreme].sum()) - inside * (inside + 1) / 2
            effect = 2.0 * u / (inside * outside) - 1.0
        else:
            effect = cliffs_delta(
                outcome[codes == extreme], outcome[(codes >= 0) & (codes != extreme)]
            )
        return _Field(codes, sizes.tolist(), centres, (), extreme, effect, rest, varies)
    # 0/1 outcomes: the sums are whole numbers, exact in any order
    bad = np.bincount(coded[tested], weights=ordered[tested], minlength=groups)
    rates = (bad / sizes).tolist()
    extreme = max(range(len(rates)), key=lambda i: (rates[i], -i))  # the worst value
    rest = float(bad.sum() - bad[extreme]) / float(sizes.sum() - sizes[extreme])
    bad_runs = tuple(int(b) for b in bad.tolist())
    return _Field(
        codes, sizes.tolist(), tuple(rates), bad_runs, extreme, rates[extreme] - rest, rest, varies
    )


def _answer(field: _Field, p: float, method: str) -> Association:
    effect = field.effect if field.varies else 0.0
    return Association(p, effect, field.extreme, method, field.centres, field.bad, field.rest)


def associations(
    kind: str, outcome: Floats, fields: Sequence[Codes], threshold: float | None = 0.05
) -> list[Association]:
    """The association of each field (codes per judged run: its group 0..k-1, -1 for a run
    left out; at least two groups) with ``outcome`` ("numeric", or "binary" 1 bad / 0 good).

    ``threshold``: the p-value below which a field can be a finding (the report's, before
    the correction). A field of the shared Monte Carlo test stops being resampled once its
    p-value is sure to be above it (:func:`shared_permutation`'s ``stop``); None resamples
    every field to the end."""
    numeric = kind == "numeric"
    ranks = rankdata(outcome) if numeric else outcome
    order = np.argsort(outcome, kind="stable")
    fleet = _Sorted(outcome, ranks, order, outcome[order])
    described = [_described(fleet, codes, numeric) for codes in fields]
    found: list[Association | None] = [None] * len(fields)
    shared: list[int] = []
    for i, field in enumerate(described):
        sizes = field.sizes
        if not field.varies:
            found[i] = _answer(field, 1.0, "no variation")
        elif not numeric and len(sizes) == 2:
            bad = field.bad
            table = [[bad[0], sizes[0] - bad[0]], [bad[1], sizes[1] - bad[1]]]
            found[i] = _answer(field, fisher_exact(table), "Fisher exact")
        elif splits(sizes) <= RESAMPLES:
            p = _exact(field.samples(outcome), numeric)
            found[i] = _answer(field, p, "exact permutation")
        else:
            shared.append(i)
    if shared:
        count = resamples(len(outcome))
        stop = None if threshold is None else stop_after(count, threshold)
        ps, extreme, drawn = shared_permutation(
            ranks, [fields[i] for i in shared], count, stop=stop
        )
        for i, p, beyond, took in zip(
            shared, ps.tolist(), extreme.tolist(), drawn.tolist(), strict=True
        ):
            field = described[i]
            method = f"permutation ({count} resamples)"
            if stop is not None and beyond >= stop:
                method = f"permutation (stopped at {took} of {count} resamples)"
            elif beyond == 0 and len(outcome) >= TAIL_FROM:
                p = min(p, _asymptotic(field.samples(outcome), numeric))
                method += ", asymptotic tail"
            found[i] = _answer(field, p, method)
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
