"""Inline SVG drawing for the run report: min/max downsampling, line charts, a checkpoint timeline.

Pure functions from numbers to markup. Every piece of text that reaches the SVG is escaped here;
the output needs no script and no external resource, so it renders under the report's strict CSP,
in print, and in either colour scheme (colours come from the page's CSS classes).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from rlio._codec.numtext import number_text

#: Most points one chart draws; longer series are downsampled to at most this many.
MAX_POINTS = 1000
#: Series with at most this many points also get a marker (with a tooltip) per point.
MARKER_LIMIT = 120

#: At most this many iterations are drawn per box chart (evenly sampled, first and last kept).
MAX_BOXES = 300

_W, _H, _BOX_H = 720, 240, 220
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
        lo, hi = 1 + (n - 2) * b // buckets, 1 + (n - 2) * (b + 1) // buckets
        if lo < hi:
            seg = ys[lo:hi]
            keep += sorted({lo + seg.index(min(seg)), lo + seg.index(max(seg))})
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
    """A number as every text output writes it (``number_text``)."""
    return number_text(value)


def tick(value: float) -> str:
    """An axis label: like ``fmt`` but compact for large values (``250000`` -> ``250k``)."""
    if abs(value) >= 1e4:
        for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= size:
                return f"{value / size:.4g}{suffix}"
    return fmt(value)


@dataclass(frozen=True, slots=True)
class Series:
    """One chart's points in x order (the latest value of an x wins), how many points the run
    holds (before downsampling), and where the metrics step dropped back (drawn as guides)."""

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


def _axes(px: Callable[[float], float], py: Callable[[float], float], height: int,
          y_ticks: Sequence[float], x_ticks: Sequence[float], x_grid: bool) -> str:
    """Horizontal grid lines with their labels, then the x labels (with vertical grid lines)."""
    bottom = height - _B
    out = [f'<line class="grid" x1="{_L}" x2="{_W - _R}" y1="{py(t):.1f}" y2="{py(t):.1f}"/>'
           f'<text class="tick" x="{_L - 6}" y="{py(t) + 4:.1f}" text-anchor="end">'
           f"{escape(tick(t))}</text>" for t in y_ticks]
    for t in x_ticks:
        if x_grid:
            out.append(f'<line class="grid" x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{_T}" '
                       f'y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{px(t):.1f}" y="{bottom + 18}" '
                   f'text-anchor="middle">{escape(tick(t))}</text>')
    return "".join(out)


def _empty(height: int, text: str) -> str:
    return (f'<text class="empty" x="{_L + (_W - _L - _R) / 2:.0f}" '
            f'y="{_T + (height - _T - _B) / 2:.0f}" text-anchor="middle">{text}</text>')


def line_chart(series: Series, *, x_label: str, chart_id: str) -> str:
    """An inline ``<svg>`` line chart of ``series`` (downsampled to ``MAX_POINTS``); the polyline
    carries ``data-points`` (drawn) and ``data-total`` (in the run); few points also get a marker
    with a tooltip each."""
    key, cid, xl = escape(series.key), escape(chart_id), escape(x_label)
    xs, ys = downsample_minmax(series.xs, series.ys)
    pw, ph = _W - _L - _R, _H - _T - _B
    parts = [f'<svg class="chart" id="{cid}" viewBox="0 0 {_W} {_H}" role="img" '
             f'aria-labelledby="{cid}-t" preserveAspectRatio="xMidYMid meet">'
             f'<title id="{cid}-t">{key} against {xl}</title>'
             f'<rect class="plot" x="{_L}" y="{_T}" width="{pw}" height="{ph}"/>']
    if not xs:
        return "".join([*parts, _empty(_H, f"no finite values of {key}"),
                        '<polyline class="line" data-points="0" data-total="0" points=""/></svg>'])
    x0, x1 = _scale(min(xs), max(xs)) if len(xs) == 1 else (min(xs), max(xs))
    y0, y1 = _scale(min(ys), max(ys))

    def px(x: float) -> float:
        return _L + _ratio(x, x0, x1) * pw

    def py(y: float) -> float:
        return _T + (1 - _ratio(y, y0, y1)) * ph

    parts.append(_axes(px, py, _H, [t for t in nice_ticks(y0, y1, 5) if y0 <= t <= y1],
                       [t for t in nice_ticks(x0, x1, 6)
                        if x0 <= t <= x1 and (t == int(t) or x1 - x0 < 10)], x_grid=True))
    parts += (f'<line class="restart" x1="{px(r):.1f}" x2="{px(r):.1f}" y1="{_T}" '
              f'y2="{_T + ph}"><title>metrics restart at {xl} {escape(fmt(r))} (a resume)'
              "</title></line>" for r in series.restarts[:20] if x0 <= r <= x1)
    coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
    parts.append(f'<polyline class="line" data-points="{len(xs)}" data-total="{series.total}" '
                 f'points="{coords}"/>')
    if len(xs) <= MARKER_LIMIT:
        parts += (f'<circle class="pt" cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.6"><title>{xl} '
                  f"{escape(fmt(x))}: {escape(fmt(y))}</title></circle>"
                  for x, y in zip(xs, ys, strict=True))
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Box:
    """Five numbers of one iteration's rewards, and how many there are."""

    iteration: int
    lo: float
    q1: float
    median: float
    q3: float
    hi: float
    n: int


def box_chart(boxes: Sequence[Box], *, label: str, chart_id: str) -> str:
    """An inline ``<svg>`` of one box per iteration (at most ``MAX_BOXES``, evenly sampled, the
    first and last kept); each ``<g class="box">`` has a tooltip."""
    step = (len(boxes) - 1) / (MAX_BOXES - 1)
    drawn = list(boxes) if len(boxes) <= MAX_BOXES else [boxes[round(i * step)]
                                                          for i in range(MAX_BOXES)]
    pw, ph = _W - _L - _R, _BOX_H - _T - _B
    parts = [f'<svg class="chart boxes" id="{escape(chart_id)}" viewBox="0 0 {_W} {_BOX_H}" '
             f'role="img" aria-label="{escape(label)}" data-boxes="{len(drawn)}">'
             f'<rect class="plot" x="{_L}" y="{_T}" width="{pw}" height="{ph}"/>']
    if not drawn:
        return "".join([*parts, _empty(_BOX_H, "no finite rewards"), "</svg>"])
    y0, y1 = min(b.lo for b in drawn), max(b.hi for b in drawn)
    if y1 <= y0:
        y0, y1 = y0 - 1, y1 + 1
    x0, x1 = drawn[0].iteration, drawn[-1].iteration
    width = max(2.0, min(24.0, pw / (len(drawn) + 1) * 0.7))

    def px(x: float) -> float:
        return _L + width / 2 + (x - x0) / max(1, x1 - x0) * (pw - width)

    def py(y: float) -> float:
        return _T + (1 - (y - y0) / (y1 - y0)) * ph

    parts.append(_axes(px, py, _BOX_H, [t for t in nice_ticks(y0, y1, 4) if y0 <= t <= y1],
                       [t for t in nice_ticks(x0, x1, 6) if x0 <= t <= x1 and t == int(t)],
                       x_grid=False))
    for b in drawn:
        x, top, bottom, mid = px(b.iteration), py(b.q3), py(b.q1), py(b.median)
        tip = (f"iteration {b.iteration}: min {fmt(b.lo)}, q1 {fmt(b.q1)}, median "
               f"{fmt(b.median)}, q3 {fmt(b.q3)}, max {fmt(b.hi)} ({b.n} trajectories)")
        parts.append(
            f'<g class="box" data-iteration="{b.iteration}"><title>{escape(tip)}</title>'
            f'<line class="whisker" x1="{x:.1f}" x2="{x:.1f}" y1="{py(b.hi):.1f}" '
            f'y2="{py(b.lo):.1f}"/><rect class="iqr" x="{x - width / 2:.1f}" y="{top:.1f}" '
            f'width="{width:.1f}" height="{max(1.0, bottom - top):.1f}"/>'
            f'<line class="median" x1="{x - width / 2:.1f}" x2="{x + width / 2:.1f}" '
            f'y1="{mid:.1f}" y2="{mid:.1f}"/></g>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Mark:
    """One checkpoint on the timeline: its x (batch), kind and a tooltip."""

    x: float
    kind: str  # "periodic", "rolling", "final" or "resume"
    label: str


_MARKS: Final = {
    "rolling": '<line class="ck-rolling" data-kind="rolling" x1="{x}" x2="{x}" y1="40" '
               'y2="52">{tip}</line>',
    "periodic": '<circle class="ck-periodic" data-kind="periodic" cx="{x}" cy="26" r="4">{tip}'
                "</circle>",
    "final": '<path class="ck-final" data-kind="final" d="M{x} 18l7 8-7 8-7-8z">{tip}</path>',
    "resume": '<g data-kind="resume"><line class="ck-resume" x1="{x}" x2="{x}" y1="4" y2="66"/>'
              '<text class="ck-resume-label" x="{tx}" y="14" text-anchor="{anchor}">resume at '
              "{at}</text>{tip}</g>",
}


def timeline(marks: Sequence[Mark], *, x_max: float, max_marks: int = 250) -> str:
    """An inline ``<svg>`` strip of checkpoints along the batch axis: periodic ones as circles,
    rolling ones as ticks on a second row, the final one a diamond, the resume point a labelled
    line; at most ``max_marks`` of each kind (evenly sampled), each with ``data-kind``."""
    width, left, right = 1200, _L, _R
    span = max(x_max, max((m.x for m in marks), default=0.0), 1.0)
    pw = width - left - right

    def px(x: float) -> float:
        return left + _ratio(max(0.0, x), 0.0, span) * pw

    parts = [f'<svg class="timeline" viewBox="0 0 {width} 92" role="img" '
             'aria-labelledby="ckpt-t"><title id="ckpt-t">checkpoint timeline by batch</title>'
             f'<line class="axis" x1="{left}" x2="{left + pw}" y1="62" y2="62"/>']
    parts += (f'<text class="tick" x="{px(t):.1f}" y="80" text-anchor="middle">'
              f"{escape(tick(t))}</text>" for t in nice_ticks(0.0, span, 8) if t == int(t))
    parts.append(f'<text class="tick" x="{left - 8}" y="30" text-anchor="end">saved</text>'
                 f'<text class="tick" x="{left - 8}" y="50" text-anchor="end">rolling</text>')
    for kind, template in _MARKS.items():
        group = [m for m in marks if m.kind == kind]
        if len(group) > max_marks:
            step = len(group) / max_marks
            group = [group[int(i * step)] for i in range(max_marks - 1)] + [group[-1]]
        for m in group:
            x = px(m.x)
            end = x > left + pw * 0.8
            parts.append(template.format(
                x=f"{x:.1f}", tip=f"<title>{escape(m.label)}</title>", at=escape(fmt(m.x)),
                tx=f"{x - 5 if end else x + 5:.1f}", anchor="end" if end else "start"))
    parts.append("</svg>")
    return "".join(parts)


#: Series colours of an overlay chart cycle through this many CSS classes (``s0``..), each
#: later cycle dashed, so a legend entry and its line share a class.
PALETTE = 10


def series_class(index: int) -> str:
    """The CSS classes of the ``index``-th series: a colour, and a dash after each cycle."""
    dash = (index // PALETTE) % 3
    return f"s{index % PALETTE}" + (f" d{dash}" if dash else "")


def overlay_chart(series: Sequence[tuple[int, Series]], *, x_label: str, chart_id: str,
                  label: str, max_points: int = MAX_POINTS) -> str:
    """An inline ``<svg>`` of several series on shared axes, one polyline each (classes from
    ``series_class`` of its index), each downsampled to ``max_points`` keeping its extremes;
    a polyline carries ``data-series`` (the index), ``data-points`` and ``data-total``."""
    cid = escape(chart_id)
    drawn = [(i, *downsample_minmax(s.xs, s.ys, max(4, max_points)), s) for i, s in series]
    pw, ph = _W - _L - _R, _H - _T - _B
    parts = [f'<svg class="chart overlay" id="{cid}" viewBox="0 0 {_W} {_H}" role="img" '
             f'aria-labelledby="{cid}-t" data-series="{sum(1 for d in drawn if d[1])}">'
             f'<title id="{cid}-t">{escape(label)} against {escape(x_label)}</title>'
             f'<rect class="plot" x="{_L}" y="{_T}" width="{pw}" height="{ph}"/>']
    all_x = [x for _, xs, _, _ in drawn for x in xs]
    all_y = [y for _, _, ys, _ in drawn for y in ys]
    if not all_x:
        return "".join([*parts, _empty(_H, "no run has finite values here"), "</svg>"])
    x0, x1 = (min(all_x), max(all_x)) if max(all_x) > min(all_x) else _scale(all_x[0], all_x[0])
    y0, y1 = _scale(min(all_y), max(all_y))

    def px(x: float) -> float:
        return _L + _ratio(x, x0, x1) * pw

    def py(y: float) -> float:
        return _T + (1 - _ratio(y, y0, y1)) * ph

    parts.append(_axes(px, py, _H, [t for t in nice_ticks(y0, y1, 5) if y0 <= t <= y1],
                       [t for t in nice_ticks(x0, x1, 6)
                        if x0 <= t <= x1 and (t == int(t) or x1 - x0 < 10)], x_grid=True))
    for i, xs, ys, s in drawn:
        if not xs:
            continue
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
        parts.append(f'<polyline class="line {series_class(i)}" data-series="{i}" '
                     f'data-points="{len(xs)}" data-total="{s.total}" points="{coords}">'
                     f"<title>{escape(s.key)}</title></polyline>")
    parts.append("</svg>")
    return "".join(parts)
