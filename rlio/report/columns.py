"""The report's metrics columns, built as ``metrics.jsonl`` streams: bounded memory at any length.

``MetricsReader`` takes each parsed record (from the validator's own pass over the file, or from
the report's reader when it runs without validation), keeps a block of them and reads the block
column by column with C-level passes (``map(dict.get, ...)``, ``set(map(type, ...))``), so no
Python call is made per key and line in the common case. Each ``Column`` downsamples while it
streams: the recent points stay exact (a resume that logs earlier steps again cuts them back,
the latest value of a step wins) and older ones fold into equal-count buckets that keep their
minimum and maximum, so a chart's spikes and range survive however long the run is.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any, Final

from rlio.rules import TRAINING_KEYS

EVAL_REWARD_SUFFIX: Final = "/env/all/reward/total"
_MAX_EVAL_CHARTS: Final = 8
_X_KEYS: Final = ("step", "progress/batch", "training_client/step")
#: Buckets a column keeps at least once folding starts (twice as many before a merge); each
#: keeps two points, so a chart has at least ``2 * _BUCKETS`` to draw its ``MAX_POINTS`` from.
_BUCKETS: Final = 600
#: Points per bucket at the first fold (below 3 a bucket's two extremes are all its points).
_FIRST_WIDTH: Final = 4
#: Points kept exact at a column's end: a resume that goes back fewer points is cut back exactly.
_TAIL: Final = 4096
#: Records read column by column at once.
_BLOCK: Final = 2048
_NUMBERS: Final = frozenset({float, int})  # bool is not a metric value


class Missing:
    """The type of the value of a key a record lacks."""


MISSING: Final = Missing()


def _progress(rec: dict[str, Any]) -> bool:
    """Whether a record is a training line's (it has a progress key)."""
    return not rec.keys().isdisjoint(TRAINING_KEYS)


class RecordsView:
    """A block of records read key by key: a key's column is fetched when asked for."""

    def __init__(self, recs: list[dict[str, Any]]) -> None:
        self.recs = recs
        self.n = len(recs)

    def get(self, key: str) -> list[Any]:
        """The values at ``key``, ``MISSING`` where a record lacks it."""
        return list(map(dict.get, self.recs, repeat(key), repeat(MISSING)))

    def progress_at(self, i: int) -> bool:
        """Whether record ``i`` is a training line's."""
        return _progress(self.recs[i])

    def progress(self) -> list[bool]:
        """Whether each record is a training line's."""
        return list(map(_progress, self.recs))


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
    """One metric's points in x order, downsampled as they stream (a few thousand kept).

    Points arrive in x order except where a resume logs earlier steps again: then every kept
    point at or past the new x is dropped first (the latest value of a step wins). The last
    ``_TAIL`` points stay exact; older ones fold into buckets of ``width`` points each, kept as
    their lowest and highest point; when there are twice ``_BUCKETS`` buckets, neighbours merge
    and ``width`` doubles. Folding and merging are C-level passes over whole runs of buckets.
    """

    def __init__(self) -> None:
        self.total = 0  # points the run holds for this metric (before downsampling)
        self.skipped = 0  # null, NaN or infinite values
        self.width = _FIRST_WIDTH
        self._first: tuple[float, float] | None = None
        # per bucket: its first and last x, and its lowest and highest point
        self._b0: list[float] = []
        self._b1: list[float] = []
        self._lx: list[float] = []
        self._ly: list[float] = []
        self._hx: list[float] = []
        self._hy: list[float] = []
        self._px: list[float] = []  # the exact tail (the parsed numbers themselves)
        self._py: list[float] = []

    @property
    def last_x(self) -> float:
        """The largest x kept (-inf when empty)."""
        if self._px:
            return self._px[-1]
        return self._b1[-1] if self._b1 else -math.inf

    def extend(self, xs: list[float], ys: list[float], increasing: bool) -> None:
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
        if len(self._px) >= 2 * _TAIL + self.width:
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
        """Drop every point at or past ``x`` (a bucket it splits keeps its points before ``x``)."""
        px = self._px
        if px and px[0] < x:
            at = bisect_left(px, x)
            self.total -= len(px) - at
            del px[at:], self._py[at:]
            return
        self.total -= len(px)
        del px[:], self._py[:]
        keep = bisect_left(self._b0, x)
        self.total -= self.width * (len(self._b0) - keep)
        for arr in (self._b0, self._b1, self._lx, self._ly, self._hx, self._hy):
            del arr[keep:]
        if self._b1 and self._b1[-1] >= x:  # split: how many of its points go is not known
            self.total -= self.width // 2
            kept = [p for p in ((self._lx[-1], self._ly[-1]), (self._hx[-1], self._hy[-1]))
                    if p[0] < x]
            if kept:
                (self._lx[-1], self._ly[-1]) = min(kept, key=lambda p: p[1])
                (self._hx[-1], self._hy[-1]) = max(kept, key=lambda p: p[1])
                self._b1[-1] = max(p[0] for p in kept)
            else:
                for arr in (self._b0, self._b1, self._lx, self._ly, self._hx, self._hy):
                    arr.pop()
        if self._first is not None and self._first[0] >= x:
            self._first = None
        self.total = max(self.total, len(self._b0))

    def _fold(self) -> None:
        """Fold the oldest exact points into buckets of ``width``, leaving ``_TAIL`` exact.

        Each run of buckets of one width (up to the next merge) is folded with C-level passes:
        the points grouped ``width`` at a time (``zip``), then ``min``/``max`` and ``index`` per
        group by ``map``, so no Python code runs per bucket.
        """
        px, py = self._px, self._py
        start = 0
        while len(px) - start >= _TAIL + self.width:
            w = self.width
            k = min((len(px) - start - _TAIL) // w, 2 * _BUCKETS - len(self._b0))
            end = start + k * w
            self._b0 += px[start:end:w]
            self._b1 += px[start + w - 1:end:w]
            groups = list(zip(*[iter(py[start:end])] * w, strict=True))
            lows = list(map(min, groups))
            highs = list(map(max, groups))
            at = range(start, end, w)
            self._lx += map(px.__getitem__, map(operator.add, at, map(tuple.index, groups, lows)))
            self._hx += map(px.__getitem__,
                            map(operator.add, at, map(tuple.index, groups, highs)))
            self._ly += lows
            self._hy += highs
            start = end
            if len(self._b0) >= 2 * _BUCKETS:
                self._merge()
        del px[:start], py[:start]

    def _merge(self) -> None:
        """Merge neighbouring buckets: each pair keeps its lowest and its highest point."""
        m = len(self._b0) // 2 * 2
        odd = len(self._b0) > m
        rest = [(a[m:] if odd else []) for a in (self._b0, self._b1, self._lx, self._ly,
                                                  self._hx, self._hy)]
        ly0, ly1, hy0, hy1 = self._ly[0:m:2], self._ly[1:m:2], self._hy[0:m:2], self._hy[1:m:2]
        lo_first = list(map(operator.le, ly0, ly1))
        hi_first = list(map(operator.ge, hy0, hy1))
        self._lx = [a if p else b for a, b, p in zip(self._lx[0:m:2], self._lx[1:m:2], lo_first,
                                                     strict=True)]
        self._hx = [a if p else b for a, b, p in zip(self._hx[0:m:2], self._hx[1:m:2], hi_first,
                                                     strict=True)]
        self._ly = list(map(min, ly0, ly1))
        self._hy = list(map(max, hy0, hy1))
        self._b0 = self._b0[0:m:2]
        self._b1 = self._b1[1:m:2]
        for arr, tail in zip((self._b0, self._b1, self._lx, self._ly, self._hx, self._hy), rest,
                             strict=True):
            arr.extend(tail)
        self.width *= 2

    def points(self) -> tuple[list[float], list[float]]:
        """The kept points in x order: the first point, each bucket's extremes, the exact tail."""
        xs: list[float] = []
        ys: list[float] = []
        if self._first is not None and self._b0 and min(self._lx[0], self._hx[0]) > self._first[0]:
            xs.append(self._first[0])
            ys.append(self._first[1])
        for lx, ly, hx, hy in zip(self._lx, self._ly, self._hx, self._hy, strict=True):
            if lx < hx:
                xs += (lx, hx)
                ys += (ly, hy)
            elif hx < lx:
                xs += (hx, lx)
                ys += (hy, ly)
            else:
                xs.append(lx)
                ys.append(ly)
        xs.extend(self._px)
        ys.extend(self._py)
        return [float(x) for x in xs], [float(y) for y in ys]


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
    Call it with each record (the validator's record-hook signature), then ``close()``.
    ``stand_in`` maps a wanted key to the key it only stands in for: it is read until that key
    shows up, then its column is dropped (a chart of it would not be drawn).
    """

    def __init__(self, wanted: Sequence[str], scan: MetricsScan | None = None,
                 stand_in: Mapping[str, str] | None = None) -> None:
        self.scan = scan if scan is not None else MetricsScan()
        self._want = dict.fromkeys(wanted)
        self._stand_in = dict(stand_in or {})
        self._evals = 0
        self._block: list[dict[str, Any]] = []
        self._x_kind = len(_X_KEYS)
        self._last_train_x: float | None = None
        self._seen_progress = False

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

    def close(self) -> MetricsScan:
        """Read the last block; the scan."""
        self._read_block()
        m = self.scan
        m.x_label = (*_X_KEYS, "line")[self._x_kind]
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

    def _xs(self, block: RecordsView) -> list[Any]:
        """Each record's x (ints, or floats for records without an x key)."""
        steps = block.get("step")
        if set(map(type, steps)) == {int}:
            self._x_kind = 0
            return steps
        out: list[Any] = []
        base = self.scan.records
        for i, vs in enumerate(zip(*map(block.get, _X_KEYS), strict=True)):
            for kind, v in enumerate(vs):
                if type(v) is int:
                    out.append(v)
                    self._x_kind = min(self._x_kind, kind)
                    break
            else:
                out.append(float(base + i))
        return out

    def _read_block(self) -> None:
        if not self._block:
            return
        self._read(RecordsView(self._block))
        self._block = []

    def _read(self, block: RecordsView) -> None:
        """Fold one block of records into the columns."""
        m = self.scan
        xs = self._xs(block)
        self._training(block, xs)
        top = float(max(xs))
        m.last_x = top if m.last_x is None else max(m.last_x, top)
        m.records += block.n
        increasing = _increasing(xs)
        keys = m.keys
        for k in self._want:
            if k not in keys:
                continue
            if k in self._stand_in and self._stand_in[k] in keys:
                m.columns.pop(k, None)
                continue
            vals = block.get(k)
            types = set(map(type, vals))
            kx, inc = xs, increasing
            if Missing in types:  # lines without the key (eval lines, say)
                mask = list(map(operator.is_not, vals, repeat(MISSING)))
                vals = list(compress(vals, mask))
                if not vals:
                    continue
                kx = list(compress(xs, mask))
                inc = increasing or _increasing(kx)
                types.discard(Missing)
            col = m.columns.get(k)
            if col is None:
                col = m.columns[k] = Column()
            if types <= _NUMBERS and _finite_sum(vals):
                col.extend(kx, vals, inc)
                continue
            for x, v in zip(kx, vals, strict=True):  # nulls, strings, NaN: point by point
                t = type(v)
                if (t is float or t is int) and _finite_sum([v]):
                    col.add(x, v)
                else:
                    col.skipped += 1

    def _training(self, block: RecordsView, xa: list[Any]) -> None:
        """Note where training lines' x drops back (a resume), as the validator reads lines.

        Training lines carry a progress key (eval lines repeat a step; they don't resume); in a
        file that has shown none (yet), every line counts as a training line.
        """
        prev = self._last_train_x
        if (prev is None or xa[0] >= prev) and list(xa) == sorted(xa):  # nothing can drop back
            for i in range(block.n - 1, -1, -1):
                if block.progress_at(i):
                    self._last_train_x, self._seen_progress = xa[i], True
                    return
            if not self._seen_progress:
                self._last_train_x = xa[-1]
            return
        for progress, x in zip(block.progress(), xa, strict=True):
            self._seen_progress = self._seen_progress or progress
            if progress or not self._seen_progress:
                if self._last_train_x is not None and x < self._last_train_x:
                    self.scan.restarts.append(x)
                self._last_train_x = x


class ObservedChecks(MetricsReader):
    """A metrics file's record checks in the validator, with each record also read for charts.

    One call per record does both, so ``metrics.jsonl`` is parsed once for the validation and
    the charts. ``finish`` (the validator's, after the whole file) hands the scan to ``done``.
    """

    def __init__(self, checks: Any, wanted: Sequence[str],
                 done: Callable[[MetricsScan], None],
                 stand_in: Mapping[str, str] | None = None) -> None:
        super().__init__(wanted, MetricsScan(present=True), stand_in)
        self.checks = checks
        self.done = done

    def __call__(self, rec: Any, line: int = 0, ok: bool = True) -> None:
        """Judge the record, then keep it for the charts."""
        self.checks(rec, line, ok)
        super().__call__(rec, line, ok)

    def finish(self) -> Any:
        """The checks' facts, once the scan went to ``done``."""
        facts = self.checks.finish()
        self.done(self.close())
        return facts


def _finite_sum(vals: list[Any]) -> bool:
    """Whether numbers ``vals`` are all finite and within a double (their sum is finite)."""
    try:
        return math.isfinite(sum(vals))
    except OverflowError:  # ints beyond a double
        return False
