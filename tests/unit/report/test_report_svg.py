"""The report's SVG drawing: min/max downsampling, tick choice, charts and the checkpoint strip."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlio.report import svg as _svg


def test_downsample_keeps_a_short_series_unchanged() -> None:
    """A series within the budget is returned point for point."""
    xs, ys = [0.0, 1.0, 2.0], [3.0, -1.0, 2.0]
    assert _svg.downsample_minmax(xs, ys, 10) == (xs, ys)


@given(
    ys=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=3000),
    budget=st.integers(4, 400),
)
def test_downsample_bounds_count_and_keeps_extremes(ys: list[float], budget: int) -> None:
    """At most ``budget`` points, in order, with the first, last, global min and max kept."""
    xs = [float(i) for i in range(len(ys))]
    dx, dy = _svg.downsample_minmax(xs, ys, budget)
    assert len(dx) == len(dy) <= budget
    assert dx == sorted(set(dx))  # a subsequence in x order, no point twice
    assert dy == [ys[int(x)] for x in dx]
    assert (dx[0], dx[-1]) == (xs[0], xs[-1])
    assert min(dy) == min(ys) and max(dy) == max(ys)


def test_downsample_keeps_a_single_spike_in_a_million_points() -> None:
    """One outlier among a million flat points survives downsampling to 1,000."""
    ys = [0.0] * 1_000_000
    ys[654_321] = 42.0
    xs, dy = _svg.downsample_minmax(range(1_000_000), ys)  # type: ignore[arg-type]
    assert len(dy) <= _svg.MAX_POINTS and 42.0 in dy and 654_321 in xs


def test_downsample_rejects_bad_arguments() -> None:
    """Mismatched lengths and a budget below four points are refused with the values named."""
    with pytest.raises(ValueError, match="xs has 2 values but ys has 1"):
        _svg.downsample_minmax([0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match="max_points must be >= 4, got 3"):
        _svg.downsample_minmax([0.0], [0.0], 3)


@pytest.mark.parametrize(("lo", "hi"), [(0.0, 1.0), (-3.2, 17.9), (0.0011, 0.0042), (5.0, 5e6)])
def test_nice_ticks_cover_the_range_with_round_steps(lo: float, hi: float) -> None:
    """Ticks lie in the range, are evenly spaced, and there are a handful of them."""
    ticks = _svg.nice_ticks(lo, hi, 5)
    assert 3 <= len(ticks) <= 11
    assert all(lo - 1e-9 <= t <= hi + 1e-9 for t in ticks)
    steps = {round(b - a, 12) for a, b in itertools.pairwise(ticks)}
    assert len({round(s / max(steps), 6) for s in steps}) == 1


def test_fmt_is_short_and_exact_for_integers() -> None:
    """Integers print as integers, others with six significant digits, non-finite by their JSON
    token: the one form of every text output (number_text)."""
    assert [_svg.fmt(v) for v in (3.0, 0.1234567, 1e-7, math.nan, -math.inf)] == [
        "3", "0.123457", "1e-07", "NaN", "-Infinity"]


def _series(n: int, key: str = "env/all/reward/total") -> _svg.Series:
    return _svg.Series(key, [float(i) for i in range(n)], [math.sin(i) for i in range(n)], n)


def test_line_chart_declares_its_points_and_marks_few_points() -> None:
    """A short series is drawn with every point, counted on the polyline, one marker each."""
    svg = _svg.line_chart(_series(50), x_label="step", chart_id="c")
    assert 'data-points="50"' in svg and 'data-total="50"' in svg
    assert svg.count("<circle") == 50
    pairs = re.search(r'<polyline[^>]* points="([^"]*)"', svg)
    assert pairs is not None and len(pairs.group(1).split()) == 50


def test_line_chart_downsamples_long_series_without_markers() -> None:
    """A long series is drawn with at most MAX_POINTS points and no per-point markers."""
    svg = _svg.line_chart(_series(20_000), x_label="step", chart_id="c")
    drawn = int(re.search(r'data-points="(\d+)"', svg).group(1))  # type: ignore[union-attr]
    assert drawn <= _svg.MAX_POINTS and 'data-total="20000"' in svg
    assert "<circle" not in svg


def test_line_chart_of_no_values_says_so() -> None:
    """An empty series draws an empty plot with a message instead of failing."""
    svg = _svg.line_chart(_series(0), x_label="step", chart_id="c")
    assert 'data-points="0"' in svg and "no finite values of env/all/reward/total" in svg


def test_line_chart_escapes_the_metric_name() -> None:
    """A metric name is text in the SVG, never markup."""
    svg = _svg.line_chart(_series(3, key="<script>x</script>"), x_label="st<e>p", chart_id="c")
    assert "<script>" not in svg and "&lt;script&gt;x&lt;/script&gt;" in svg
    assert "st&lt;e&gt;p" in svg


def test_timeline_draws_each_kind_and_caps_markers() -> None:
    """Each checkpoint kind gets its own marker; a kind with many is sampled down to the cap."""
    marks = [_svg.Mark(float(i), "rolling", f"r{i}") for i in range(1000)]
    marks += [_svg.Mark(10.0, "periodic", "p"), _svg.Mark(1000.0, "final", "<b>f</b>"),
              _svg.Mark(990.0, "resume", "resume")]
    svg = _svg.timeline(marks, x_max=1000.0, max_marks=100)
    kinds = re.findall(r'data-kind="(\w+)"', svg)
    assert {k: kinds.count(k) for k in set(kinds)} == {
        "rolling": 100, "periodic": 1, "final": 1, "resume": 1}
    assert "&lt;b&gt;f&lt;/b&gt;" in svg and "resume at 990" in svg


def test_axis_labels_are_compact_for_large_values() -> None:
    """Axis labels shorten large values (250000 -> 250k) and keep small ones as ``fmt`` does."""
    assert [_svg.tick(v) for v in (250_000.0, 1_500_000.0, 2e9, 9999.0, 0.25)] == [
        "250k", "1.5M", "2G", "9999", "0.25"]


@pytest.mark.parametrize("values", [
    [-1.7e308, 1.7e308], [1e-320, 2e-320], [5e-324, 5e-324], [0.0, 1e-300, 1e300],
])
def test_extreme_values_draw_finite_coordinates(values: list[float]) -> None:
    """Values near the float limits still give finite coordinates (no NaN reaches the SVG)."""
    xs = [float(i) for i in range(len(values))]
    svg = _svg.line_chart(_svg.Series("k", xs, values, len(values)), x_label="step", chart_id="c")
    numbers = re.findall(r' (?:x|y|x1|x2|y1|y2|cx|cy)="([^"]*)"', svg)
    numbers += re.search(r'points="([^"]*)"', svg).group(1).replace(",", " ").split()  # type: ignore[union-attr]
    assert numbers and all(math.isfinite(float(n)) for n in numbers)
    assert "nan" not in svg.lower().replace("data-", "")
