"""The statistics of the per-prompt comparison: McNemar's exact test, the signed-rank test
(exact with ties, and its normal approximation) and the seeded bootstrap intervals."""

from __future__ import annotations

import itertools
import math

import pytest

from rlio.report.paired_stats import (
    EXACT_MAX,
    bootstrap_mean,
    bootstrap_mean_diff,
    mcnemar_exact,
    wilcoxon_signed_rank,
)


def test_mcnemar_exact_known_values() -> None:
    """p is twice the smaller binomial tail: 0/6 discordant gives 2/64; balanced gives 1."""
    assert mcnemar_exact(0, 6).p_value == pytest.approx(2 / 64)
    assert mcnemar_exact(3, 3).p_value == 1.0
    assert mcnemar_exact(1, 9).p_value == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar_exact(0, 0).p_value == 1.0
    assert mcnemar_exact(2, 5).statistic == 5 and mcnemar_exact(2, 5).n == 7


def _brute_force(diffs: list[float]) -> float:
    """Two-sided p of the signed-rank sum by listing every sign assignment."""
    test = wilcoxon_signed_rank(diffs)
    mags = sorted(abs(d) for d in diffs if d)
    ranks = {m: (sum(i + 1 for i, x in enumerate(mags) if x == m) / mags.count(m)) for m in mags}
    rs = [ranks[abs(d)] for d in diffs if d]
    sums = [sum(r for r, s in zip(rs, signs, strict=True) if s)
            for signs in itertools.product((0, 1), repeat=len(rs))]
    low = sum(s <= test.statistic + 1e-9 for s in sums)
    high = sum(s >= test.statistic - 1e-9 for s in sums)
    return min(1.0, 2 * min(low, high) / len(sums))


@pytest.mark.parametrize("diffs", [
    [0.5, 0.25, 0.75, 1.0, 0.1],
    [0.5, -0.5, 0.5, 0.25, 0.0, -0.25, 0.5],  # ties and a zero
    [1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 0.5, -0.5],
])
def test_wilcoxon_exact_matches_enumeration(diffs: list[float]) -> None:
    """The exact p (ties included) equals counting all 2**n sign assignments."""
    test = wilcoxon_signed_rank(diffs)
    assert test.name == "wilcoxon-exact"
    assert test.p_value == pytest.approx(_brute_force(diffs))
    assert test.detail["zeros"] == sum(d == 0 for d in diffs)


def test_wilcoxon_all_positive_and_no_change() -> None:
    """Five positive changes: p = 2/32; nothing changed: p = 1."""
    assert wilcoxon_signed_rank([0.1, 0.2, 0.3, 0.4, 0.5]).p_value == pytest.approx(2 / 32)
    assert wilcoxon_signed_rank([0.0, 0.0, 0.0]).p_value == 1.0


def test_wilcoxon_normal_approximation_is_close_to_exact() -> None:
    """Above EXACT_MAX differences the normal approximation is used, and is near the exact p."""
    diffs = [((-1) ** (i % 3 == 0)) * (1 + i % 7) / 10 for i in range(EXACT_MAX + 1)]
    approx = wilcoxon_signed_rank(diffs)
    exact = wilcoxon_signed_rank(diffs[:EXACT_MAX])
    assert approx.name == "wilcoxon-normal" and exact.name == "wilcoxon-exact"
    assert 0 < approx.p_value < 1 and abs(approx.p_value - exact.p_value) < 0.05


def test_bootstrap_is_seeded_and_covers_the_difference() -> None:
    """One seed, one interval; it holds the observed difference; a constant sample is a point."""
    a, b = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    first = bootstrap_mean_diff(a, b, seed="s", resamples=500)
    assert first == bootstrap_mean_diff(a, b, seed="s", resamples=500)
    graded = [0.13, 0.52, 0.91, 0.07, 0.66]
    assert bootstrap_mean_diff(graded, a, seed="s") != bootstrap_mean_diff(graded, a, seed="t")
    assert first[0] <= 0.5 <= first[1] and first[0] < first[1]
    assert bootstrap_mean_diff([1.0, 1.0], [0.0], seed=0) == (-1.0, -1.0)
    lo, hi = bootstrap_mean([0.1, 0.2, 0.3, 0.4], seed=1)
    assert 0.1 <= lo <= 0.25 <= hi <= 0.4 and not math.isnan(lo)
