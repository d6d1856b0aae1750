"""The report's metrics columns, built as ``metrics.jsonl`` streams: bounded memory at any length.

``MetricsReader`` takes each parsed record (from the validator's own pass over the file, or from
the report's reader when it runs without validation), keeps a block of them and reads the block
column by column with C-level passes (``map(dict.get, ...)``, ``array``), so no Python call is
made per key and line in the common case. Each ``Column`` downsamples while it streams: the
recent points stay exact (a resume that logs earlier steps again cuts them back, the latest value
of a step wins) and older ones fold into equal-count buckets that keep their minimum and maximum,
so a chart's spikes and range survive however long the run is.
"""

from __future__ import annotations

import math
import operator
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any, Final

from rlio.rules import TRAINING_KEYS

EVAL_REWARD_SUFFIX: Final = "/env/all/reward/total"
_MAX_EVAL_CHARTS: Final = 8
_X_KEYS: Final = ("step", "progress/batch", "training_client/step")
#: Buckets a column keeps before merging pairs of them (each bucket keeps two points).
_BUCKETS: Final = 1000
#: Points kept exact at a column's end: a resume that goes back fewer points is cut back exactly.
_TAIL: Final = 4096
#: Records read column by column at once.
_BLOCK: Final = 2048
_MISSING: Final = object()
_NUMBERS: Final = frozenset({float, int})  # bool is not a metric value


@dataclass
class FileStats:
    """What reading one JSONL file skipped, to say so on the page."""

    lines: int = 0
    blank: int = 0
    bad: int = 0
    nonfinite_lines: int = 0
    torn: bool = False
    error: str | None = None

    def notes(self) -> list[str]:
        """One sentence per kind of problem met."""
        out = [] if self.error is None else [self.error]
        if self.torn:
            out.append("the last line is torn (no final newline): ignored")
        if self.bad:
            out.append(f"{self.bad:,} line(s) are not JSON objects: skipped")
        if self.blank:
            out.append(f"{self.blank:,} blank line(s)")
        if self.nonfinite_lines:
            out.append(f"{self.nonfinite_lines:,} line(s) hold NaN/Infinity tokens")
        return out


def _increasing(xs: Sequence[float]) -> bool:
    """Whether ``xs`` strictly increases (two C-level passes)."""
    return len(set(xs)) == len(xs) and list(xs) == sorted(xs)


class Column:
    """One metric's points in x order, downsampled as they stream (at most ~4,000 kept).

    Points arrive in x order except where a resume logs earlier steps again: then every kept
    point at or past the new x is dropped first (the latest value of a step wins). Buckets hold
    ``width`` original points each, as their extremes in x order; when there are twice
    ``_BUCKETS`` of them, neighbours merge and ``width`` doubles. Exact up to about 4,000 points.
    """

    def __init__(self) -> None:
        self.total = 0  # points the run holds for this metric (before downsampling)
        self.skipped = 0  # null, NaN or infinite values
        self.width = 1
        self._first: tuple[float, float] | None = None
        self._bx: list[tuple[float, float]] = []  # per bucket: the x of its extremes, in order
        self._by: list[tuple[float, float]] = []  # and their y
        self._px: array[float] = array("d")  # the exact tail
        self._py: array[float] = array("d")

    @property
    def last_x(self) -> float:
        """The largest x kept (-inf when empty)."""
        if self._px:
            return self._px[-1]
        return self._bx[-1][1] if self._bx else -math.inf

    def extend(self, xs: array[float], ys: array[float], increasing: bool) -> None:
        """Append points (``increasing``: ``xs`` is known to strictly increase)."""
        if not xs:
            return
        if increasing and xs[0] > self.last_x:
            if self._first is None:
                self._first = (xs[0], ys[0])
            self._px.extend(xs)
            self._py.extend(ys)
            self.total += len(xs)
        else:
            for x, y in zip(xs, ys, strict=True):
                self.add(x, y)
        if len(self._px) >= _TAIL + 2 * self.width:
            self._fold()

    def add(self, x: float, y: float) -> None:
        """Append one point, first cutting back the points at or past ``x``."""
        if x <= self.last_x:
            self._cut(x)
        if self._first is None:
            self._first = (x, y)
        self._px.append(x)
        self._py.append(y)
        self.total += 1

    def _cut(self, x: float) -> None:
        """Drop every point at or past ``x`` (a bucket it splits keeps its first extreme)."""
        px = self._px
        if px and px[0] < x:
            at = bisect_left(px, x)
            self.total -= len(px) - at
            del px[at:], self._py[at:]
            return
        self.total -= len(px)
        del px[:], self._py[:]
        while self._bx and self._bx[-1][0] >= x:
            self._bx.pop()
            self._by.pop()
            self.total -= self.width
        if self._bx and self._bx[-1][1] >= x:  # split: its count is not known; half is a guess
            (x1, _), (y1, _) = self._bx[-1], self._by[-1]
            self._bx[-1], self._by[-1] = (x1, x1), (y1, y1)
            self.total -= self.width // 2
        if self._first is not None and self._first[0] >= x:
            self._first = None
        self.total = max(self.total, len(self._bx))

    def _fold(self) -> None:
        """Fold the oldest exact points into buckets of ``width``, leaving ``_TAIL`` exact."""
        px, py, w = self._px, self._py, self.width
        start = 0
        while len(px) - start >= _TAIL + w:
            seg = py[start:start + w]
            lo, hi = min(seg), max(seg)
            i, j = sorted((seg.index(lo), seg.index(hi)))
            self._bx.append((px[start + i], px[start + j]))
            self._by.append((seg[i], seg[j]))
            start += w
            if len(self._bx) >= 2 * _BUCKETS:
                self._merge()
                w = self.width
        del px[:start], py[:start]

    def _merge(self) -> None:
        """Merge neighbouring buckets: each pair keeps its lowest and highest point."""
        bx, by = [], []
        for k in range(0, len(self._bx) - 1, 2):
            pts = [*zip(self._bx[k], self._by[k], strict=True),
                   *zip(self._bx[k + 1], self._by[k + 1], strict=True)]
            lo = min(pts, key=lambda p: p[1])
            hi = max(pts, key=lambda p: p[1])
            a, b = sorted((lo, hi))
            bx.append((a[0], b[0]))
            by.append((a[1], b[1]))
        if len(self._bx) % 2:
            bx.append(self._bx[-1])
            by.append(self._by[-1])
        self._bx, self._by = bx, by
        self.width *= 2

    def points(self) -> tuple[list[float], list[float]]:
        """The kept points in x order: the first point, each bucket's extremes, the exact tail."""
        xs: list[float] = []
        ys: list[float] = []
        if self._first is not None and self._bx and self._bx[0][0] > self._first[0]:
            xs.append(self._first[0])
            ys.append(self._first[1])
        for (x1, x2), (y1, y2) in zip(self._bx, self._by, strict=True):
            xs.append(x1)
            ys.append(y1)
            if x2 != x1:
                xs.append(x2)
                ys.append(y2)
        xs.extend(self._px)
        ys.extend(self._py)
        return xs, ys


@dataclass
class MetricsScan:
    """What one pass over ``metrics.jsonl`` found."""

    stats: FileStats = field(default_factory=FileStats)
    columns: dict[str, Column] = field(default_factory=dict)
    keys: dict[str, None] = field(default_factory=dict)  # every key seen, in first-seen order
    records: int = 0
    x_label: str = "line"
    last_x: float | None = None
    restarts: list[float] = field(default_factory=list)  # where training lines' x dropped back
    present: bool = False


class MetricsReader:
    """Builds a ``MetricsScan`` from the records of ``metrics.jsonl`` handed to it in file order.

    x is ``step``, else ``progress/batch``, else ``training_client/step``, else the record's
    index. Evaluator reward keys (``<name>/env/all/reward/total``) are charted as they appear.
    Call it with each record (the validator's record-hook signature), then ``finish()``.
    """

    def __init__(self, wanted: Sequence[str], scan: MetricsScan | None = None) -> None:
        self.scan = scan if scan is not None else MetricsScan()
        self._want = dict.fromkeys(wanted)
        self._evals = 0
        self._block: list[dict[str, Any]] = []
        self._x_kind = len(_X_KEYS)
        self._last_train_x: float | None = None
        self._seen_progress = False
        self.done = False

    def __call__(self, rec: Any, line: int = 0, ok: bool = True) -> None:
        """Take one record (a non-object counts as a bad line)."""
        if type(rec) is not dict:
            self.scan.stats.bad += 1
            return
        keys = self.scan.keys
        if not keys.keys() >= rec.keys():
            self._new_keys(rec)
        self._block.append(rec)
        if len(self._block) >= _BLOCK:
            self._read_block()

    def finish(self) -> MetricsScan:
        """Read the last block; the scan."""
        self._read_block()
        m = self.scan
        m.x_label = (*_X_KEYS, "line")[self._x_kind]
        self.done = True
        return m

    def _new_keys(self, rec: dict[str, Any]) -> None:
        keys, want = self.scan.keys, self._want
        for k in rec:
            if k not in keys:
                keys[k] = None
                if (k.endswith(EVAL_REWARD_SUFFIX) and k not in want
                        and self._evals < _MAX_EVAL_CHARTS):
                    want[k] = None
                    self._evals += 1

    def _xs(self, block: list[dict[str, Any]]) -> list[Any]:
        """Each record's x (ints, or floats for records without an x key)."""
        steps = list(map(dict.get, block, repeat("step")))
        if set(map(type, steps)) == {int}:
            self._x_kind = 0
            return steps
        out: list[Any] = []
        base = self.scan.records
        for i, rec in enumerate(block):
            for kind, name in enumerate(_X_KEYS):
                v = rec.get(name)
                if type(v) is int:
                    out.append(v)
                    self._x_kind = min(self._x_kind, kind)
                    break
            else:
                out.append(float(base + i))
        return out

    def _read_block(self) -> None:
        block = self._block
        if not block:
            return
        self._block = []
        m = self.scan
        xs = self._xs(block)
        try:
            xa = array("d", xs)
        except OverflowError:  # an int beyond a double: no chart point, but counted
            xa = array("d", (float(x) if abs(x) < 2**1023 else math.inf for x in xs))
        self._training(block, xa)
        top = max(xa)
        m.last_x = top if m.last_x is None else max(m.last_x, top)
        m.records += len(block)
        increasing = _increasing(xa)
        keys = m.keys
        for k in self._want:
            if k not in keys:
                continue
            vals = list(map(dict.get, block, repeat(k), repeat(_MISSING)))
            kx, inc = xa, increasing
            if _MISSING in vals:  # identity first: the sentinel equals nothing else
                mask = list(map(operator.is_not, vals, repeat(_MISSING)))
                vals = list(compress(vals, mask))
                if not vals:
                    continue
                kx = array("d", compress(xa, mask))
                inc = increasing or _increasing(kx)
            col = m.columns.get(k)
            if col is None:
                col = m.columns[k] = Column()
            ys = _finite(vals)
            if ys is not None:
                col.extend(kx, ys, inc)
                continue
            for x, v in zip(kx, vals, strict=True):  # nulls, strings, NaN: point by point
                t = type(v)
                if (t is float or t is int) and -math.inf < v < math.inf:
                    col.add(x, float(v))
                else:
                    col.skipped += 1

    def _training(self, block: list[dict[str, Any]], xa: array[float]) -> None:
        """Note where training lines' x drops back (a resume), as the validator reads lines.

        Training lines carry a progress key (eval lines repeat a step; they don't resume); in a
        file that has shown none (yet), every line counts as a training line.
        """
        prev = self._last_train_x
        if (prev is None or xa[0] >= prev) and list(xa) == sorted(xa):  # nothing can drop back
            for i in range(len(block) - 1, -1, -1):
                if not block[i].keys().isdisjoint(TRAINING_KEYS):
                    self._last_train_x, self._seen_progress = xa[i], True
                    return
            if not self._seen_progress:
                self._last_train_x = xa[-1]
            return
        for rec, x in zip(block, xa, strict=True):
            progress = not rec.keys().isdisjoint(TRAINING_KEYS)
            self._seen_progress = self._seen_progress or progress
            if progress or not self._seen_progress:
                if self._last_train_x is not None and x < self._last_train_x:
                    self.scan.restarts.append(x)
                self._last_train_x = x


def _finite(vals: list[Any]) -> array[float] | None:
    """``vals`` as doubles when every one is a finite int or float, else None."""
    if not set(map(type, vals)) <= _NUMBERS:
        return None
    try:
        ys = array("d", vals)
    except OverflowError:
        return None
    return ys if math.isfinite(sum(ys)) else None
