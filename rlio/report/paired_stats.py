"""The statistics of a per-prompt comparison, in pure Python (no numpy, no scipy).

- ``bootstrap_mean_diff``: a percentile bootstrap interval of ``mean(b) - mean(a)`` for two
  independent samples (one prompt's rewards before and after), each resampled with replacement.
- ``bootstrap_mean``: a percentile bootstrap interval of a mean (the per-prompt changes,
  resampling prompts: the paired bootstrap over the whole set).
- ``mcnemar_exact``: McNemar's test for paired 0/1 outcomes, exact: under no change the
  discordant pairs split as Binomial(b + c, 1/2); the two-sided p-value is twice the smaller
  tail (at most 1), computed with exact integers.
- ``wilcoxon_signed_rank``: the signed-rank test of paired differences. Zero differences are
  dropped (Wilcoxon's method) and tied magnitudes get their average rank. With at most
  ``EXACT_MAX`` non-zero differences the p-value is exact: the null distribution of the sum of
  positive ranks is counted over all 2**n sign assignments (a dynamic program over doubled ranks,
  so ties stay exact); above that, the normal approximation with the tie correction of the
  variance and a continuity correction of 0.5.

Every random draw comes from ``random.Random(seed)``: the same seed gives the same intervals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

__all__ = ["EXACT_MAX", "PairedTest", "bootstrap_mean", "bootstrap_mean_diff", "mcnemar_exact",
           "wilcoxon_signed_rank"]

#: The signed-rank test is exact up to this many non-zero differences.
EXACT_MAX: Final = 60
_ZERO: Final = 1e-12


@dataclass(frozen=True)
class PairedTest:
    """A paired test's outcome.

    Attributes:
        name: ``mcnemar-exact``, ``wilcoxon-exact`` or ``wilcoxon-normal``.
        statistic: McNemar: ``c``, the pairs that went 0 -> 1; Wilcoxon: the sum of the ranks
            of the positive differences.
        p_value: two-sided.
        n: McNemar: the discordant pairs; Wilcoxon: the non-zero differences.
        detail: McNemar: ``{"b": 1 -> 0, "c": 0 -> 1}``; Wilcoxon: ``{"zeros": dropped,
            "positive": n, "negative": n}``.
    """

    name: str
    statistic: float
    p_value: float
    n: int
    detail: dict[str, int]


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by linear interpolation between order statistics."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _means(rng: random.Random, values: Sequence[float], resamples: int) -> list[float]:
    """``resamples`` means of ``values`` resampled with replacement."""
    n = len(values)
    if min(values) == max(values):
        return [float(values[0])] * resamples
    draws = rng.choices(values, k=n * resamples)
    return [math.fsum(draws[j * n:(j + 1) * n]) / n for j in range(resamples)]


def bootstrap_mean_diff(a: Sequence[float], b: Sequence[float], *, seed: int | str,
                        resamples: int = 1000, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval of ``mean(b) - mean(a)`` (both non-empty)."""
    rng = random.Random(seed)
    diffs = sorted(mb - ma for ma, mb in zip(_means(rng, a, resamples),
                                             _means(rng, b, resamples), strict=True))
    tail = (1 - confidence) / 2
    return _percentile(diffs, tail), _percentile(diffs, 1 - tail)


def bootstrap_mean(values: Sequence[float], *, seed: int | str, resamples: int = 1000,
                   confidence: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval of ``mean(values)`` (non-empty)."""
    means = sorted(_means(random.Random(seed), values, resamples))
    tail = (1 - confidence) / 2
    return _percentile(means, tail), _percentile(means, 1 - tail)


def mcnemar_exact(b: int, c: int) -> PairedTest:
    """McNemar's exact test: ``b`` pairs went 1 -> 0, ``c`` went 0 -> 1."""
    n = b + c
    if n == 0:
        p = 1.0
    else:
        tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
        p = float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))
    return PairedTest("mcnemar-exact", float(c), p, n, {"b": b, "c": c})


def _ranks(magnitudes: Sequence[float]) -> list[float]:
    """Average ranks (1-based) of ``magnitudes``, ties sharing the mean of their ranks."""
    order = sorted(range(len(magnitudes)), key=magnitudes.__getitem__)
    ranks = [0.0] * len(magnitudes)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and magnitudes[order[j + 1]] == magnitudes[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j + 2) / 2
        i = j + 1
    return ranks


def _exact_p(doubled: Sequence[int], w2: int) -> float:
    """Two-sided exact p of a doubled positive-rank sum ``w2`` over all sign assignments."""
    total = sum(doubled)
    counts = [0] * (total + 1)
    counts[0] = 1
    for r in doubled:
        for s in range(total, r - 1, -1):
            counts[s] += counts[s - r]
    low = sum(counts[: w2 + 1])
    high = sum(counts[w2:])
    return float(min(Fraction(1), Fraction(2 * min(low, high), 2 ** len(doubled))))


def wilcoxon_signed_rank(diffs: Sequence[float]) -> PairedTest:
    """The signed-rank test of paired differences ``diffs`` (see the module docstring)."""
    nonzero = [d for d in diffs if abs(d) > _ZERO]
    detail = {"zeros": len(diffs) - len(nonzero),
              "positive": sum(d > 0 for d in nonzero), "negative": sum(d < 0 for d in nonzero)}
    n = len(nonzero)
    if n == 0:
        return PairedTest("wilcoxon-exact", 0.0, 1.0, 0, detail)
    ranks = _ranks([abs(d) for d in nonzero])
    w_plus = sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0)
    if n <= EXACT_MAX:
        doubled = [round(2 * r) for r in ranks]
        return PairedTest("wilcoxon-exact", w_plus, _exact_p(doubled, round(2 * w_plus)), n,
                          detail)
    ties: dict[float, int] = {}
    for r in ranks:
        ties[r] = ties.get(r, 0) + 1
    mean = n * (n + 1) / 4
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t ** 3 - t for t in ties.values()) / 48
    z = 0.0 if var <= 0 else max(0.0, abs(w_plus - mean) - 0.5) / math.sqrt(var)
    return PairedTest("wilcoxon-normal", w_plus, min(1.0, math.erfc(z / math.sqrt(2))), n,
                      detail)
