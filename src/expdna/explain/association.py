"""One field's association with the outcome, through SciPy (``expdna[explain]``).

The runs are split by the field's value (groups). A numeric outcome: the difference in
medians between the groups and Cliff's delta (a rank-based effect size, -1 to 1) of the
most extreme group against the rest; the p-value of the Kruskal-Wallis statistic (two
groups: the Mann-Whitney test), by permutation. A bad/good outcome: the bad rate per group
and the rate difference of the most extreme group against the rest; two groups: Fisher's
exact test (the exact permutation test of a 2x2 table); more: the chi-square statistic by
permutation.

``scipy.stats.permutation_test`` enumerates every distinct split where there are at most
:data:`RESAMPLES` of them (exact), else draws that many. Past :data:`PERMUTE_UP_TO` runs the
statistic's asymptotic distribution is used instead (``scipy.stats.kruskal`` and
``chi2_contingency``): at thousands of runs the two agree to the precision that matters
after correction, and a permutation test per field would cost seconds each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

#: Resamples of a permutation test (and the most distinct splits enumerated exactly).
RESAMPLES = 9999
#: Most runs a field is tested on by permutation; beyond, the asymptotic distribution.
PERMUTE_UP_TO = 200
#: The permutation tests' seed, so one store gives one answer.
SEED = 20261201

Floats = NDArray[np.float64]


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


def _permuted(samples: Sequence[Floats], statistic: object) -> tuple[float, str]:
    result = stats.permutation_test(
        samples,
        statistic,
        permutation_type="independent",
        vectorized=True,
        n_resamples=RESAMPLES,
        alternative="greater",
        rng=np.random.default_rng(SEED),
    )
    splits = _splits([len(s) for s in samples])
    method = "exact permutation" if splits <= RESAMPLES else f"permutation ({RESAMPLES} resamples)"
    return float(result.pvalue), method


def _splits(sizes: Sequence[int]) -> int:
    """The number of distinct ways to split the runs into groups of these sizes."""
    from math import comb

    total, count = 0, 1
    for size in sizes:
        total += size
        count *= comb(total, size)
    return count


def cliffs_delta(inside: Floats, outside: Floats) -> float:
    """P(inside > outside) - P(inside < outside): the Mann-Whitney U of ``inside``, from the
    pooled ranks, scaled to -1 .. 1."""
    ranks = stats.rankdata(np.concatenate([inside, outside]))
    n1, n2 = len(inside), len(outside)
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    return 2.0 * u / (n1 * n2) - 1.0


def _extreme(centres: Sequence[float], middle: float) -> int:
    """The group whose centre is farthest from ``middle``; of two groups, the higher (each
    is as far from the other)."""
    if len(centres) == 2:
        return 0 if centres[0] > centres[1] else 1
    return max(range(len(centres)), key=lambda i: (abs(centres[i] - middle), centres[i]))


def numeric(groups: Sequence[Floats]) -> Association:
    """A numeric outcome split into ``groups`` (two or more, each non-empty)."""
    medians = [float(np.median(g)) for g in groups]
    everything = np.concatenate(groups)
    extreme = _extreme(medians, float(np.median(everything)))
    rest = np.concatenate([g for i, g in enumerate(groups) if i != extreme])
    effect = cliffs_delta(groups[extreme], rest)
    if np.ptp(everything) == 0:
        return Association(1.0, 0.0, extreme, "no variation")
    if len(everything) <= PERMUTE_UP_TO:
        ranks = stats.rankdata(everything)
        cuts = np.cumsum([len(g) for g in groups])[:-1]
        p, method = _permuted(np.split(ranks, cuts), _kruskal_h)
    else:
        p, method = float(stats.kruskal(*groups).pvalue), "asymptotic (Kruskal-Wallis)"
    return Association(p, effect, extreme, method)


def binary(groups: Sequence[Floats]) -> Association:
    """A bad (1) / good (0) outcome split into ``groups``."""
    rates = [float(g.mean()) for g in groups]
    extreme = max(range(len(rates)), key=lambda i: (rates[i], -i))  # the worst value
    rest = np.concatenate([g for i, g in enumerate(groups) if i != extreme])
    effect = rates[extreme] - float(rest.mean())
    bad = [int(g.sum()) for g in groups]
    sizes = [len(g) for g in groups]
    if sum(bad) in (0, sum(sizes)):
        return Association(1.0, 0.0, extreme, "no variation")
    if len(groups) == 2:
        table = [[bad[0], sizes[0] - bad[0]], [bad[1], sizes[1] - bad[1]]]
        return Association(float(stats.fisher_exact(table).pvalue), effect, extreme, "Fisher exact")
    if sum(sizes) <= PERMUTE_UP_TO:
        p, method = _permuted(groups, _chi2)
    else:
        table = [[b, n - b] for b, n in zip(bad, sizes, strict=True)]
        p, method = float(stats.chi2_contingency(table).pvalue), "asymptotic (chi-square)"
    return Association(p, effect, extreme, method)


def adjusted(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (``scipy.stats.false_discovery_control``)."""
    if not ps:
        return []
    return [float(q) for q in stats.false_discovery_control(np.asarray(ps), method="bh")]
