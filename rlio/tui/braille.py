"""Plots drawn as text: line charts in braille dots (2×4 per cell), bars in block characters.

Pure functions over numbers, no Textual: a chart of ``width`` × ``height`` cells is a list of
``height`` strings of ``width`` characters, whatever the number of points (each dot column takes
the range of the points that fall in it, so a spike is never averaged away).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["bars", "line_chart"]

_BASE = 0x2800
#: The dot bit of (column 0..1, row 0..3) within a braille cell.
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
_BLOCKS = " ▁▂▃▄▅▆▇█"


def _columns(points: Sequence[tuple[float, float]], n: int,
             x_range: tuple[float, float]) -> list[tuple[float, float] | None]:
    """The (min, max) of the finite y's falling in each of ``n`` dot columns."""
    x0, x1 = x_range
    cols: list[tuple[float, float] | None] = [None] * n
    span = x1 - x0
    for x, y in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        c = 0 if span <= 0 else min(n - 1, max(0, int((x - x0) / span * (n - 1) + 0.5)))
        cur = cols[c]
        cols[c] = (y, y) if cur is None else (min(cur[0], y), max(cur[1], y))
    return cols


def _fill(grid: list[list[int]], c: int, top: int, bottom: int) -> None:
    """Set the dots of column ``c`` from row ``top`` down to row ``bottom``."""
    for r in range(top, bottom + 1):
        grid[r // 4][c // 2] |= _DOTS[c % 2][r % 4]


def line_chart(points: Sequence[tuple[float, float]], width: int, height: int, *,
               y_range: tuple[float, float] | None = None,
               x_range: tuple[float, float] | None = None) -> list[str]:
    """``points`` (x, y) as a braille line chart of ``width`` × ``height`` cells; x runs over
    ``x_range`` (default: the points'), y over ``y_range`` (default: the points', bottom up).
    Non-finite points are left out; no points draw an empty chart."""
    width, height = max(1, width), max(1, height)
    xs = [p[0] for p in points if math.isfinite(p[0]) and math.isfinite(p[1])]
    ys = [p[1] for p in points if math.isfinite(p[0]) and math.isfinite(p[1])]
    grid = [[0] * width for _ in range(height)]
    if xs:
        cols = _columns(points, 2 * width, x_range or (min(xs), max(xs)))
        lo, hi = y_range or (min(ys), max(ys))
        rows = 4 * height

        def row_of(y: float) -> int:
            if hi <= lo:
                return rows // 2
            return min(rows - 1, max(0, int((hi - y) / (hi - lo) * (rows - 1) + 0.5)))

        prev: tuple[int, int, int] | None = None  # (column, top row, bottom row)
        for c, mm in enumerate(cols):
            if mm is None:
                continue
            top, bottom = row_of(mm[1]), row_of(mm[0])
            if prev is not None:  # join to the previous point: the line is unbroken
                pc, ptop, pbottom = prev
                for k in range(pc + 1, c + 1):
                    a = ptop + (top - ptop) * (k - pc) / (c - pc)
                    b = pbottom + (bottom - pbottom) * (k - pc) / (c - pc)
                    a0 = ptop + (top - ptop) * (k - 1 - pc) / (c - pc)
                    b0 = pbottom + (bottom - pbottom) * (k - 1 - pc) / (c - pc)
                    _fill(grid, k, round(min(a, a0, b, b0)), round(max(a, a0, b, b0)))
            else:
                _fill(grid, c, top, bottom)
            prev = (c, top, bottom)
    return ["".join(chr(_BASE + b) if b else " " for b in row) for row in grid]


def bars(counts: Sequence[int], height: int) -> list[str]:
    """``counts`` as vertical bars, one character per count, ``height`` rows, bottom up; a
    non-zero count shows at least one eighth."""
    height = max(1, height)
    top = max(counts, default=0)
    lines = []
    for row in range(height - 1, -1, -1):
        chars = []
        for n in counts:
            eighths = 0 if top == 0 else max(1 if n else 0, round(n / top * 8 * height))
            chars.append(_BLOCKS[max(0, min(8, eighths - 8 * row))])
        lines.append("".join(chars))
    return lines
