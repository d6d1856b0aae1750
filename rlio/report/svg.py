"""Inline SVG drawing for the run report: min/max downsampling, line charts, a checkpoint timeline.

Pure functions from numbers to view models (geometry already formatted) that the template
``chart.svg.j2`` (macros in ``_charts.html.j2``) draws, escaping every piece of text; the output
needs no script and no external resource, so it renders under the report's strict CSP,
in print, and in either colour scheme (colours come from the page's CSS classes).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from rlio._codec.numtext import number_text
from rlio.templating import render

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


@dataclass(frozen=True, slots=True)
class Axes:
    """Grid lines and labels, positions already formatted: ``ys`` as (y, label y, label),
    ``xs`` as (x, label); ``x_grid``: vertical grid lines too."""

    ys: list[tuple[str, str, str]]
    xs: list[tuple[str, str]]
    x_grid: bool
    bottom: int
    label_y: int


@dataclass(frozen=True, slots=True)
class Frame:
    """An SVG's box: its size and the plot area (left, top, width, height)."""

    width: int
    height: int
    left: int = _L
    top: int = _T
    right: int = _W - _R

    @property
    def pw(self) -> int:
        return self.width - _L - _R

    @property
    def ph(self) -> int:
        return self.height - _T - _B

    @property
    def cx(self) -> str:
        return f"{_L + (self.width - _L - _R) / 2:.0f}"

    @property
    def cy(self) -> str:
        return f"{_T + (self.height - _T - _B) / 2:.0f}"


def _axes(px: Callable[[float], float], py: Callable[[float], float], height: int,
          y_ticks: Sequence[float], x_ticks: Sequence[float], x_grid: bool) -> Axes:
    """Horizontal grid lines with their labels, then the x labels (with vertical grid lines)."""
    return Axes([(f"{py(t):.1f}", f"{py(t) + 4:.1f}", tick(t)) for t in y_ticks],
                [(f"{px(t):.1f}", tick(t)) for t in x_ticks], x_grid, height - _B,
                height - _B + 18)


@dataclass(frozen=True, slots=True)
class LineChart:
    """A line chart as drawn: ``coords`` the polyline's points, few points also ``markers``
    (x, y, tooltip), ``restarts`` (x, tooltip) the resume guides; ``empty`` a message."""

    id: str
    title: str
    frame: Frame
    points: int
    total: int
    coords: str = ""
    axes: Axes | None = None
    restarts: list[tuple[str, str]] = field(default_factory=list)
    markers: list[tuple[str, str, str]] = field(default_factory=list)
    empty: str | None = None
    kind: str = "line"


def line_view(series: Series, *, x_label: str, chart_id: str) -> LineChart:
    """The line chart of ``series`` (downsampled to ``MAX_POINTS``); few points also get a
    marker with a tooltip each."""
    title = f"{series.key} against {x_label}"
    xs, ys = downsample_minmax(series.xs, series.ys)
    frame = Frame(_W, _H)
    pw, ph = frame.pw, frame.ph
    if not xs:
        return LineChart(chart_id, title, frame, 0, 0, empty=f"no finite values of {series.key}")
    x0, x1 = _scale(min(xs), max(xs)) if len(xs) == 1 else (min(xs), max(xs))
    y0, y1 = _scale(min(ys), max(ys))

    def px(x: float) -> float:
        return _L + _ratio(x, x0, x1) * pw

    def py(y: float) -> float:
        return _T + (1 - _ratio(y, y0, y1)) * ph

    axes = _axes(px, py, _H, [t for t in nice_ticks(y0, y1, 5) if y0 <= t <= y1],
                 [t for t in nice_ticks(x0, x1, 6)
                  if x0 <= t <= x1 and (t == int(t) or x1 - x0 < 10)], x_grid=True)
    restarts = [(f"{px(r):.1f}", f"metrics restart at {x_label} {fmt(r)} (a resume)")
                for r in series.restarts[:20] if x0 <= r <= x1]
    coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
    markers = [(f"{px(x):.1f}", f"{py(y):.1f}", f"{x_label} {fmt(x)}: {fmt(y)}")
               for x, y in zip(xs, ys, strict=True)] if len(xs) <= MARKER_LIMIT else []
    return LineChart(chart_id, title, frame, len(xs), series.total, coords, axes, restarts,
                     markers)


def line_chart(series: Series, *, x_label: str, chart_id: str) -> str:
    """``line_view`` as an inline ``<svg>``: the polyline carries ``data-points`` (drawn) and
    ``data-total`` (in the run)."""
    return render("chart.svg.j2", c=line_view(series, x_label=x_label, chart_id=chart_id))


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


@dataclass(frozen=True, slots=True)
class DrawnBox:
    """One box's geometry (formatted) and its tooltip."""

    iteration: int
    tip: str
    x: str
    hi: str
    lo: str
    left: str
    right: str
    top: str
    width: str
    height: str
    mid: str


@dataclass(frozen=True, slots=True)
class BoxChart:
    """A box per iteration as drawn."""

    id: str
    label: str
    frame: Frame
    boxes: list[DrawnBox]
    axes: Axes | None = None
    empty: str | None = None
    kind: str = "boxes"


def box_view(boxes: Sequence[Box], *, label: str, chart_id: str) -> BoxChart:
    """One box per iteration (at most ``MAX_BOXES``, evenly sampled, the first and last kept);
    each has a tooltip."""
    step = (len(boxes) - 1) / (MAX_BOXES - 1)
    drawn = list(boxes) if len(boxes) <= MAX_BOXES else [boxes[round(i * step)]
                                                          for i in range(MAX_BOXES)]
    frame = Frame(_W, _BOX_H)
    pw, ph = frame.pw, frame.ph
    if not drawn:
        return BoxChart(chart_id, label, frame, [], empty="no finite rewards")
    y0, y1 = min(b.lo for b in drawn), max(b.hi for b in drawn)
    if y1 <= y0:
        y0, y1 = y0 - 1, y1 + 1
    x0, x1 = drawn[0].iteration, drawn[-1].iteration
    width = max(2.0, min(24.0, pw / (len(drawn) + 1) * 0.7))

    def px(x: float) -> float:
        return _L + width / 2 + (x - x0) / max(1, x1 - x0) * (pw - width)

    def py(y: float) -> float:
        return _T + (1 - (y - y0) / (y1 - y0)) * ph

    axes = _axes(px, py, _BOX_H, [t for t in nice_ticks(y0, y1, 4) if y0 <= t <= y1],
                 [t for t in nice_ticks(x0, x1, 6) if x0 <= t <= x1 and t == int(t)],
                 x_grid=False)
    out = []
    for b in drawn:
        x, top, bottom, mid = px(b.iteration), py(b.q3), py(b.q1), py(b.median)
        tip = (f"iteration {b.iteration}: min {fmt(b.lo)}, q1 {fmt(b.q1)}, median "
               f"{fmt(b.median)}, q3 {fmt(b.q3)}, max {fmt(b.hi)} ({b.n} trajectories)")
        out.append(DrawnBox(b.iteration, tip, f"{x:.1f}", f"{py(b.hi):.1f}", f"{py(b.lo):.1f}",
                            f"{x - width / 2:.1f}", f"{x + width / 2:.1f}", f"{top:.1f}",
                            f"{width:.1f}", f"{max(1.0, bottom - top):.1f}", f"{mid:.1f}"))
    return BoxChart(chart_id, label, frame, out, axes)


def box_chart(boxes: Sequence[Box], *, label: str, chart_id: str) -> str:
    """``box_view`` as an inline ``<svg>``; each ``<g class="box">`` has a tooltip."""
    return render("chart.svg.j2", c=box_view(boxes, label=label, chart_id=chart_id))


@dataclass(frozen=True, slots=True)
class Mark:
    """One checkpoint on the timeline: its x (batch), kind and a tooltip."""

    x: float
    kind: str  # "periodic", "rolling", "final" or "resume"
    label: str


@dataclass(frozen=True, slots=True)
class DrawnMark:
    """One checkpoint mark as drawn (``tx``/``anchor``: the resume label's place)."""

    kind: str
    x: str
    tip: str
    at: str
    tx: str
    anchor: str


@dataclass(frozen=True, slots=True)
class Timeline:
    """The checkpoint strip as drawn."""

    left: int
    right: int
    ticks: list[tuple[str, str]]
    marks: list[DrawnMark]
    kind: str = "timeline"


_KINDS: Final = ("rolling", "periodic", "final", "resume")


def timeline_view(marks: Sequence[Mark], *, x_max: float, max_marks: int = 250) -> Timeline:
    """Checkpoints along the batch axis: periodic ones as circles, rolling ones as ticks on a
    second row, the final one a diamond, the resume point a labelled line; at most
    ``max_marks`` of each kind (evenly sampled)."""
    width, left, right = 1200, _L, _R
    span = max(x_max, max((m.x for m in marks), default=0.0), 1.0)
    pw = width - left - right

    def px(x: float) -> float:
        return left + _ratio(max(0.0, x), 0.0, span) * pw

    ticks = [(f"{px(t):.1f}", tick(t)) for t in nice_ticks(0.0, span, 8) if t == int(t)]
    out = []
    for kind in _KINDS:
        group = [m for m in marks if m.kind == kind]
        if len(group) > max_marks:
            step = len(group) / max_marks
            group = [group[int(i * step)] for i in range(max_marks - 1)] + [group[-1]]
        for m in group:
            x = px(m.x)
            end = x > left + pw * 0.8
            out.append(DrawnMark(kind, f"{x:.1f}", m.label, fmt(m.x),
                                 f"{x - 5 if end else x + 5:.1f}", "end" if end else "start"))
    return Timeline(left, left + pw, ticks, out)


def timeline(marks: Sequence[Mark], *, x_max: float, max_marks: int = 250) -> str:
    """``timeline_view`` as an inline ``<svg>``; each mark has ``data-kind``."""
    return render("chart.svg.j2", c=timeline_view(marks, x_max=x_max, max_marks=max_marks))


#: Series colours of an overlay chart cycle through this many CSS classes (``s0``..), each
#: later cycle dashed, so a legend entry and its line share a class.
PALETTE = 10


def series_class(index: int) -> str:
    """The CSS classes of the ``index``-th series: a colour, and a dash after each cycle."""
    dash = (index // PALETTE) % 3
    return f"s{index % PALETTE}" + (f" d{dash}" if dash else "")


@dataclass(frozen=True, slots=True)
class OverlayLine:
    """One run's line on an overlay chart."""

    index: int
    cls: str
    key: str
    points: int
    total: int
    coords: str


@dataclass(frozen=True, slots=True)
class Overlay:
    """Several series on shared axes, as drawn."""

    id: str
    title: str
    frame: Frame
    series: int
    lines: list[OverlayLine]
    axes: Axes | None = None
    empty: str | None = None
    kind: str = "overlay"


def overlay_view(series: Sequence[tuple[int, Series]], *, x_label: str, chart_id: str,
                 label: str, max_points: int = MAX_POINTS) -> Overlay:
    """Several series on shared axes, one line each (classes from ``series_class`` of its
    index), each downsampled to ``max_points`` keeping its extremes."""
    drawn = [(i, *downsample_minmax(s.xs, s.ys, max(4, max_points)), s) for i, s in series]
    frame = Frame(_W, _H)
    pw, ph = frame.pw, frame.ph
    title = f"{label} against {x_label}"
    n = sum(1 for d in drawn if d[1])
    all_x = [x for _, xs, _, _ in drawn for x in xs]
    all_y = [y for _, _, ys, _ in drawn for y in ys]
    if not all_x:
        return Overlay(chart_id, title, frame, n, [], empty="no run has finite values here")
    x0, x1 = (min(all_x), max(all_x)) if max(all_x) > min(all_x) else _scale(all_x[0], all_x[0])
    y0, y1 = _scale(min(all_y), max(all_y))

    def px(x: float) -> float:
        return _L + _ratio(x, x0, x1) * pw

    def py(y: float) -> float:
        return _T + (1 - _ratio(y, y0, y1)) * ph

    axes = _axes(px, py, _H, [t for t in nice_ticks(y0, y1, 5) if y0 <= t <= y1],
                 [t for t in nice_ticks(x0, x1, 6)
                  if x0 <= t <= x1 and (t == int(t) or x1 - x0 < 10)], x_grid=True)
    lines = [OverlayLine(i, series_class(i), s.key, len(xs), s.total,
                         " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True)))
             for i, xs, ys, s in drawn if xs]
    return Overlay(chart_id, title, frame, n, lines, axes)


def overlay_chart(series: Sequence[tuple[int, Series]], *, x_label: str, chart_id: str,
                  label: str, max_points: int = MAX_POINTS) -> str:
    """``overlay_view`` as an inline ``<svg>``: a polyline carries ``data-series`` (the index),
    ``data-points`` and ``data-total``."""
    return render("chart.svg.j2", c=overlay_view(series, x_label=x_label, chart_id=chart_id,
                                                 label=label, max_points=max_points))
