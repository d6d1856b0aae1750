"""Inline SVG drawing for the run report: min/max downsampling, line charts, a checkpoint timeline.

Pure functions from numbers to markup. Every piece of text that reaches the SVG is escaped here;
the output needs no script and no external resource, so it renders under the report's strict CSP,
in print, and in either colour scheme (colours come from the page's CSS classes).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

#: Most points one chart draws; longer series are downsampled to at most this many.
MAX_POINTS = 1000
#: Series with at most this many points also get a marker (with a tooltip) per point.
MARKER_LIMIT = 120

_W, _H = 720, 240
_L, _R, _T, _B = 60, 16, 14, 30


def downsample_minmax(
    xs: Sequence[float], ys: Sequence[float], max_points: int = MAX_POINTS
) -> tuple[list[float], list[float]]:
    """Reduce a series to at most ``max_points`` points, keeping every bucket's extremes.

    The series is cut into equal-count buckets; each bucket contributes its minimum and its maximum
    (in their original order), and the first and last points are always kept, so spikes and the
    overall range survive however long the run is.

    Raises:
        ValueError: ``max_points`` is below 4 or ``xs`` and ``ys`` differ in length.
    """
    n = len(xs)
    if len(ys) != n:
        raise ValueError(f"xs has {n} values but ys has {len(ys)}; expected equal lengths")
    if max_points < 4:
        raise ValueError(f"max_points must be >= 4, got {max_points}")
    if n <= max_points:
        return list(xs), list(ys)
    buckets = (max_points - 2) // 2
    keep: list[int] = [0]
    for b in range(buckets):
        lo = 1 + (n - 2) * b // buckets
        hi = 1 + (n - 2) * (b + 1) // buckets
        if lo >= hi:
            continue
        i_min = i_max = lo
        y_min = y_max = ys[lo]
        for i in range(lo + 1, hi):
            y = ys[i]
            if y < y_min:
                y_min, i_min = y, i
            elif y > y_max:
                y_max, i_max = y, i
        keep.extend(sorted({i_min, i_max}))
    keep.append(n - 1)
    return [xs[i] for i in keep], [ys[i] for i in keep]


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[lo, hi]`` (steps of 1, 2, 2.5 or 5 x 10^k).

    Ranges too wide or too narrow for round steps (near the float limits) get their two ends.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = hi / max(1, count) - lo / max(1, count)  # halves first: no overflow at +-1e308
    mag = 10.0 ** math.floor(math.log10(raw)) if raw > 0 and math.isfinite(raw) else 0.0
    if not 0 < mag < math.inf:
        return [lo, hi]
    step = next((m * mag for m in (1, 2, 2.5, 5) if m * mag >= raw), 10 * mag)
    q = lo / step
    if not math.isfinite(step) or not abs(q) < 1e15:
        return [lo, hi]
    first = math.ceil(q - 1e-9) * step
    ticks: list[float] = []
    t = first
    while t <= hi + step * 1e-9 and len(ticks) < 50:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t = first + step * len(ticks)
    return ticks


def fmt(value: float) -> str:
    """A short human form of a number: integers as integers, others with 4 significant digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def tick(value: float) -> str:
    """An axis label: like ``fmt`` but compact for large values (``250000`` -> ``250k``)."""
    if abs(value) >= 1e4:
        for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= size:
                return f"{value / size:.4g}{suffix}"
    return fmt(value)


@dataclass(frozen=True, slots=True)
class Series:
    """One chart's data after reading the run.

    Attributes:
        key: the metric name.
        xs, ys: the points in x order (already deduplicated: the last value logged for an x wins).
        total: how many points the run holds for this metric (before downsampling).
        restarts: x values where the metrics step dropped back (a resume), drawn as guides.
    """

    key: str
    xs: list[float]
    ys: list[float]
    total: int
    restarts: tuple[float, ...] = ()


def _scale(lo: float, hi: float) -> tuple[float, float]:
    """The drawn range: ``[lo, hi]`` padded by 5% (or around a constant), within float limits."""
    pad = (hi / 2 - lo / 2) * 0.1 if hi > lo else (abs(lo) * 0.1 or 1.0)
    return max(-sys.float_info.max, lo - pad), min(sys.float_info.max, hi + pad)


def _ratio(v: float, lo: float, hi: float) -> float:
    """Where ``v`` lies in ``[lo, hi]`` as 0..1, computed on halves so no step overflows."""
    span = hi / 2 - lo / 2
    return (v / 2 - lo / 2) / span if span > 0 else 0.5


def line_chart(series: Series, *, x_label: str, chart_id: str) -> str:
    """An inline ``<svg>`` line chart of ``series`` (downsampled to ``MAX_POINTS``).

    The polyline carries ``data-points`` (points drawn) and ``data-total`` (points in the run), so
    tests and readers can count without parsing coordinates. Few points also get ``<circle>``
    markers with a ``<title>`` tooltip each.
    """
    key = escape(series.key)
    xs, ys = downsample_minmax(series.xs, series.ys)
    parts = [
        f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-labelledby="{escape(chart_id)}-t" preserveAspectRatio="xMidYMid meet">',
        f'<title id="{escape(chart_id)}-t">{key} against {escape(x_label)}</title>',
    ]
    pw, ph = _W - _L - _R, _H - _T - _B
    parts.append(f'<rect class="plot" x="{_L}" y="{_T}" width="{pw}" height="{ph}"/>')
    if not xs:
        parts.append(
            f'<text class="empty" x="{_L + pw / 2:.0f}" y="{_T + ph / 2:.0f}" '
            f'text-anchor="middle">no finite values of {key}</text>'
        )
        parts.append('<polyline class="line" data-points="0" data-total="0" points=""/></svg>')
        return "".join(parts)
    x0, x1 = _scale(min(xs), max(xs)) if len(xs) == 1 else (min(xs), max(xs))
    y0, y1 = _scale(min(ys), max(ys))

    def px(x: float) -> float:
        return _L + _ratio(x, x0, x1) * pw

    def py(y: float) -> float:
        return _T + (1 - _ratio(y, y0, y1)) * ph

    for t in nice_ticks(y0, y1, 5):
        if y0 <= t <= y1:
            yy = py(t)
            parts.append(
                f'<line class="grid" x1="{_L}" x2="{_L + pw}" y1="{yy:.1f}" y2="{yy:.1f}"/>'
            )
            parts.append(
                f'<text class="tick" x="{_L - 6}" y="{yy + 4:.1f}" text-anchor="end">'
                f"{escape(tick(t))}</text>"
            )
    for t in nice_ticks(x0, x1, 6):
        if x0 <= t <= x1 and (t == int(t) or x1 - x0 < 10):
            xx = px(t)
            parts.append(f'<line class="grid" x1="{xx:.1f}" x2="{xx:.1f}" y1="{_T}" '
                         f'y2="{_T + ph}"/>')
            parts.append(
                f'<text class="tick" x="{xx:.1f}" y="{_T + ph + 18}" text-anchor="middle">'
                f"{escape(tick(t))}</text>"
            )
    for r in series.restarts[:20]:
        if x0 <= r <= x1:
            xx = px(r)
            parts.append(
                f'<line class="restart" x1="{xx:.1f}" x2="{xx:.1f}" y1="{_T}" y2="{_T + ph}">'
                f"<title>metrics restart at {escape(x_label)} {escape(fmt(r))} (a resume)</title>"
                "</line>"
            )
    coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
    parts.append(
        f'<polyline class="line" data-points="{len(xs)}" data-total="{series.total}" '
        f'points="{coords}"/>'
    )
    if len(xs) <= MARKER_LIMIT:
        for x, y in zip(xs, ys, strict=True):
            parts.append(
                f'<circle class="pt" cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.6">'
                f"<title>{escape(x_label)} {escape(fmt(x))}: {escape(fmt(y))}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Mark:
    """One checkpoint on the timeline: its x (batch), kind and a tooltip."""

    x: float
    kind: str  # "periodic", "rolling", "final" or "resume"
    label: str


_ROWS = {"periodic": 26.0, "rolling": 46.0, "final": 26.0}


def timeline(marks: Sequence[Mark], *, x_max: float, max_marks: int = 250) -> str:
    """An inline ``<svg>`` strip of checkpoints along the batch axis.

    Periodic checkpoints are circles, rolling ones ticks on a second row, the final one a diamond,
    and the resume point a labelled vertical line. Each kind keeps at most ``max_marks`` markers
    (evenly sampled); every marker carries ``data-kind``.
    """
    width, height, left, right = 1200, 92, _L, _R
    span = max(x_max, max((m.x for m in marks), default=0.0), 1.0)
    pw = width - left - right

    def px(x: float) -> float:
        return left + _ratio(max(0.0, x), 0.0, span) * pw

    parts = [
        f'<svg class="timeline" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="ckpt-t"><title id="ckpt-t">checkpoint timeline by batch</title>',
        f'<line class="axis" x1="{left}" x2="{left + pw}" y1="62" y2="62"/>',
    ]
    for t in nice_ticks(0.0, span, 8):
        if t == int(t):
            parts.append(f'<text class="tick" x="{px(t):.1f}" y="80" text-anchor="middle">'
                         f"{escape(tick(t))}</text>")
    parts.append(f'<text class="tick" x="{left - 8}" y="30" text-anchor="end">saved</text>')
    parts.append(f'<text class="tick" x="{left - 8}" y="50" text-anchor="end">rolling</text>')
    by_kind: dict[str, list[Mark]] = {}
    for m in marks:
        by_kind.setdefault(m.kind, []).append(m)
    for kind in ("rolling", "periodic", "final", "resume"):
        group = by_kind.get(kind, [])
        if len(group) > max_marks:
            step = len(group) / max_marks
            group = [group[int(i * step)] for i in range(max_marks - 1)] + [group[-1]]
        for m in group:
            x = px(m.x)
            tip = f"<title>{escape(m.label)}</title>"
            if kind == "periodic":
                parts.append(f'<circle class="ck-periodic" data-kind="periodic" cx="{x:.1f}" '
                             f'cy="{_ROWS[kind]:.0f}" r="4">{tip}</circle>')
            elif kind == "rolling":
                parts.append(f'<line class="ck-rolling" data-kind="rolling" x1="{x:.1f}" '
                             f'x2="{x:.1f}" y1="40" y2="52">{tip}</line>')
            elif kind == "final":
                parts.append(f'<path class="ck-final" data-kind="final" '
                             f'd="M{x:.1f} 18l7 8-7 8-7-8z">{tip}</path>')
            else:
                end = x > left + pw * 0.8
                tx = x - 5 if end else x + 5
                parts.append(
                    f'<g data-kind="resume"><line class="ck-resume" x1="{x:.1f}" x2="{x:.1f}" '
                    f'y1="4" y2="66"/><text class="ck-resume-label" x="{tx:.1f}" '
                    f'y="14" text-anchor="{"end" if end else "start"}">'
                    f"resume at {escape(fmt(m.x))}</text>{tip}</g>"
                )
    parts.append("</svg>")
    return "".join(parts)
