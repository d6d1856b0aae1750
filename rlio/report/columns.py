"""The report's metrics columns, built as ``metrics.jsonl`` streams: bounded memory at any length.

``MetricsScan`` takes each parsed record (from the validator's pass over the file, or from the
report's own reader), keeps a block of them and reads the block key by key with C-level passes
(``map(dict.get, ...)``), so no Python code runs per key and line in the common case.
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Any, Final

from rlio.rules import TRAINING_KEYS, X_AXIS_KEYS

EVAL_REWARD_SUFFIX: Final = "/env/all/reward/total"
_MAX_EVAL_CHARTS: Final = 8
#: The async-eval aliases of cookbook 0.6.1, ``eval/by_<axis>/<metric>``: each is plotted against
#: the snapshot coordinate its line carries (the step, cumulative cost or elapsed time the
#: evaluated weights were taken at), named on the chart by the label.
EVAL_AXES: Final = {
    "eval/by_step/": ("eval/snapshot/training_step", "training step"),
    "eval/by_cost/": ("eval/snapshot/cumulative_cost_usd", "cumulative cost (USD)"),
    "eval/by_time/": ("eval/snapshot/elapsed_seconds", "elapsed seconds"),
}
#: Buckets a column keeps once folding starts (twice as many before neighbours merge).
_BUCKETS: Final = 600
_FIRST_WIDTH: Final = 4  # points per bucket at the first fold
#: Points kept exact at a column's end: a resume that goes back fewer points is cut back exactly.
_TAIL: Final = 4096
_BLOCK: Final = 2048  # records read key by key at once
_NUMBERS: Final = frozenset({float, int})  # bool is not a metric value


class Missing:
    """The type of the value of a key a record lacks."""


MISSING: Final = Missing()


def _progress(rec: dict[str, Any]) -> bool:
    """Whether a record is a training line's (it has a progress key)."""
    return not rec.keys().isdisjoint(TRAINING_KEYS)


def eval_axis(key: str) -> tuple[str, str] | None:
    """The (snapshot key, label) an ``eval/by_<axis>/...`` key is plotted against, else None."""
    if key.startswith("eval/by_"):
        for prefix, axis in EVAL_AXES.items():
            if key.startswith(prefix):
                return axis
    return None


def _values(block: list[dict[str, Any]], key: str) -> list[Any]:
    """The values at ``key`` of a block of records, ``MISSING`` where a record lacks it."""
    return list(map(dict.get, block, repeat(key), repeat(MISSING)))


def _increasing(xs: Sequence[float]) -> bool:
    """Whether ``xs`` strictly increases."""
    return len(set(xs)) == len(xs) and list(xs) == sorted(xs)


def _finite_sum(vals: list[Any]) -> bool:
    """Whether numbers ``vals`` are all finite and within a double (their sum is finite)."""
    try:
        return math.isfinite(sum(vals))
    except OverflowError:  # ints beyond a double
        return False


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


#: One bucket of folded points: first x, last x, then its lowest and its highest point.
Bucket = tuple[float, float, float, float, float, float]


def _join(a: Bucket, b: Bucket) -> Bucket:
    """Two neighbouring buckets as one: the lower low and the higher high (the first on ties)."""
    lo = a if a[3] <= b[3] else b
    hi = a if a[5] >= b[5] else b
    return a[0], b[1], lo[2], lo[3], hi[4], hi[5]


class Column:
    """One metric's points in x order, downsampled as they stream (a few thousand kept).

    A point at or before the last kept x (a resume logging steps again) first drops every kept
    point at or past it: the latest value of a step wins. The last ``_TAIL`` points stay exact;
    older ones fold into buckets of ``width`` points, each kept as its lowest and highest point;
    at ``2 * _BUCKETS`` buckets, neighbours merge and ``width`` doubles.
    """

    def __init__(self) -> None:
        self.total = 0  # points the run holds for this metric (before downsampling)
        self.skipped = 0  # null, NaN or infinite values
        self.width = _FIRST_WIDTH
        self._first: tuple[float, float] | None = None
        self._buckets: list[Bucket] = []
        self._xs: list[float] = []  # the exact tail
        self._ys: list[float] = []

    @property
    def last_x(self) -> float:
        """The largest x kept (-inf when empty)."""
        if self._xs:
            return self._xs[-1]
        return self._buckets[-1][1] if self._buckets else -math.inf

    def extend(self, xs: list[float], ys: list[float], increasing: bool) -> None:
        """Append points (``increasing``: ``xs`` is known to strictly increase)."""
        if not xs:
            return
        if increasing and xs[0] > self.last_x:
            if self._first is None:
                self._first = (xs[0], ys[0])
            self._xs.extend(xs)
            self._ys.extend(ys)
            self.total += len(xs)
        else:
            for x, y in zip(xs, ys, strict=True):
                self.add(x, y)
        if len(self._xs) >= 2 * _TAIL + self.width:
            self._fold()

    def add(self, x: float, y: float) -> None:
        """Append one point, first cutting back the points at or past ``x``."""
        if x <= self.last_x:
            self._cut(x)
        if self._first is None:
            self._first = (x, y)
        self._xs.append(x)
        self._ys.append(y)
        self.total += 1

    def _cut(self, x: float) -> None:
        """Drop every point at or past ``x`` (a bucket it splits keeps its extremes before x)."""
        xs, b = self._xs, self._buckets
        if xs and xs[0] < x:
            at = bisect_left(xs, x)
            self.total -= len(xs) - at
            del xs[at:], self._ys[at:]
            return
        self.total -= len(xs)
        del xs[:], self._ys[:]
        keep = bisect_left(b, x, key=operator.itemgetter(0))
        self.total -= self.width * (len(b) - keep)
        del b[keep:]
        if b and b[-1][1] >= x:  # split: how many of its points go is not known
            self.total -= self.width // 2
            x0, _, lx, ly, hx, hy = b.pop()
            if lx >= x:
                lx, ly = hx, hy
            if hx >= x:
                hx, hy = lx, ly
            if lx < x:
                b.append((x0, max(lx, hx), lx, ly, hx, hy))
        if self._first is not None and self._first[0] >= x:
            self._first = None
        self.total = max(self.total, len(b))

    def _fold(self) -> None:
        """Fold the oldest exact points into buckets of ``width``, leaving ``_TAIL`` exact."""
        xs, ys = self._xs, self._ys
        start = 0
        while len(xs) - start >= _TAIL + self.width:
            end = start + self.width
            seg = ys[start:end]
            lo, hi = min(seg), max(seg)
            self._buckets.append((xs[start], xs[end - 1], xs[start + seg.index(lo)], lo,
                                  xs[start + seg.index(hi)], hi))
            start = end
            if len(self._buckets) >= 2 * _BUCKETS:
                b = self._buckets
                self._buckets = [_join(b[i], b[i + 1]) for i in range(0, len(b) - 1, 2)]
                self._buckets += b[len(b) // 2 * 2:]
                self.width *= 2
        del xs[:start], ys[:start]

    def points(self) -> tuple[list[float], list[float]]:
        """The kept points in x order: the first point, each bucket's extremes, the exact tail."""
        pts: list[tuple[float, float]] = []
        b = self._buckets
        if self._first is not None and b and min(b[0][2], b[0][4]) > self._first[0]:
            pts.append(self._first)
        for _, _, lx, ly, hx, hy in b:
            pts += sorted({(lx, ly), (hx, hy)})
        pts += zip(self._xs, self._ys, strict=True)
        return [float(x) for x, _ in pts], [float(y) for _, y in pts]


class MetricsScan:
    """The metrics columns, built from the records of ``metrics.jsonl`` handed to it in file order
    (call it with each record, then ``close()``).

    x is ``step``, else ``progress/batch``, else ``training_client/step``, else the record's
    index; an async-eval alias (``eval/by_cost/...``, ``EVAL_AXES``) is plotted against its
    line's snapshot coordinate instead (``axes`` names it). Evaluator reward keys
    (``<name>/env/all/reward/total``, and their aliases) are charted as they appear.
    ``stand_in`` maps a wanted key to the key it only stands in for: it is read until that key
    shows up, then its column is dropped. ``usual``: keys it ranks (not None) are read too as
    they first appear, at most ``max_usual`` of each rank.
    """

    def __init__(self, wanted: Sequence[str], stand_in: Mapping[str, str] | None = None, *,
                 present: bool = True, usual: Callable[[str], int | None] | None = None,
                 max_usual: int = 0) -> None:
        self.present = present  # whether the run has the file
        self.stats = FileStats()
        self.columns: dict[str, Column] = {}
        self.keys: dict[str, None] = {}  # every key seen, in first-seen order
        self.records = 0
        self.last_x: float | None = None
        self.restarts: list[float] = []  # where training lines' x dropped back
        self.axes: dict[str, str] = {}  # a column's x label when it is not the run's x axis
        self._want = dict.fromkeys(wanted)
        self._stand_in = dict(stand_in or {})
        self._evals = self._aliases = 0
        self._usual, self._max_usual = usual, max_usual
        self._n_usual: dict[int, int] = {}  # usual keys read, per rank
        self._block: list[dict[str, Any]] = []
        self._x_kind = len(X_AXIS_KEYS)
        self._last_train_x: float | None = None
        self._seen_progress = False

    @property
    def x_label(self) -> str:
        """The key the x axis comes from (``line``: the record's index)."""
        return (*X_AXIS_KEYS, "line")[self._x_kind]

    def __call__(self, rec: Any) -> None:
        """Take one record (a non-object counts as a bad line)."""
        if type(rec) is not dict:
            self.stats.bad += 1
            return
        if not self.keys.keys() >= rec.keys():
            self._new_keys(rec)
        self._block.append(rec)
        if len(self._block) >= _BLOCK:
            self._read(self._block)
            self._block = []

    def close(self) -> MetricsScan:
        """Read the last block; the scan."""
        if self._block:
            self._read(self._block)
            self._block = []
        return self

    def _new_keys(self, rec: dict[str, Any]) -> None:
        keys, want = self.keys, self._want
        for k in rec:
            if k not in keys:
                keys[k] = None
                rank = None if self._usual is None or k in want else self._usual(k)
                if rank is not None and self._n_usual.get(rank, 0) < self._max_usual:
                    want[k] = None  # a usual key: charted from its first line
                    self._n_usual[rank] = self._n_usual.get(rank, 0) + 1
                    continue
                if not k.endswith(EVAL_REWARD_SUFFIX) or k in want:
                    continue
                if eval_axis(k) is None and self._evals < _MAX_EVAL_CHARTS:
                    want[k] = None
                    self._evals += 1
                elif eval_axis(k) is not None and self._aliases < _MAX_EVAL_CHARTS:
                    want[k] = None  # an alias: charted against its axis, not as an evaluator
                    self._aliases += 1

    def _xs(self, block: list[dict[str, Any]]) -> list[Any]:
        """Each record's x (ints, or floats for records without an x key)."""
        steps = _values(block, "step")
        if set(map(type, steps)) == {int}:
            self._x_kind = 0
            return steps
        out: list[Any] = []
        base = self.records
        for i, vs in enumerate(zip(*(_values(block, k) for k in X_AXIS_KEYS), strict=True)):
            kind = next((kind for kind, v in enumerate(vs) if type(v) is int), None)
            if kind is None:
                out.append(float(base + i))
            else:
                out.append(vs[kind])
                self._x_kind = min(self._x_kind, kind)
        return out

    def _read(self, block: list[dict[str, Any]]) -> None:
        """Fold one block of records into the columns."""
        xs = self._xs(block)
        self._training(block, xs)
        top = float(max(xs))
        self.last_x = top if self.last_x is None else max(self.last_x, top)
        self.records += len(block)
        increasing = _increasing(xs)
        for k in self._want:
            if k not in self.keys:
                continue
            if self._stand_in.get(k) in self.keys:
                self.columns.pop(k, None)
                continue
            axis = eval_axis(k)
            if axis is not None:
                self._read_alias(block, k, axis)
                continue
            vals = _values(block, k)
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
            col = self.columns.setdefault(k, Column())
            if types <= _NUMBERS and _finite_sum(vals):
                col.extend(kx, vals, inc)
                continue
            for x, v in zip(kx, vals, strict=True):  # nulls, strings, NaN: point by point
                if type(v) in _NUMBERS and _finite_sum([v]):
                    col.add(x, v)
                else:
                    col.skipped += 1

    def _read_alias(self, block: list[dict[str, Any]], key: str, axis: tuple[str, str]) -> None:
        """Fold the points of an async-eval alias: x its line's snapshot coordinate."""
        self.axes[key] = axis[1]
        col = self.columns.setdefault(key, Column())
        for x, v in zip(_values(block, axis[0]), _values(block, key), strict=True):
            if v is MISSING:
                continue
            if (type(v) in _NUMBERS and type(x) in _NUMBERS and _finite_sum([v])
                    and _finite_sum([x])):
                col.add(x, v)
            else:
                col.skipped += 1

    def _training(self, block: list[dict[str, Any]], xs: list[Any]) -> None:
        """Note where training lines' x drops back (a resume), as the validator reads lines.

        Training lines carry a progress key (eval lines repeat a step; they don't resume); in a
        file that has shown none (yet), every line counts as a training line.
        """
        prev = self._last_train_x
        if (prev is None or xs[0] >= prev) and xs == sorted(xs):  # nothing can drop back
            last = next((i for i in range(len(block) - 1, -1, -1) if _progress(block[i])), None)
            if last is not None:
                self._last_train_x, self._seen_progress = xs[last], True
            elif not self._seen_progress:
                self._last_train_x = xs[-1]
            return
        for progress, x in zip(map(_progress, block), xs, strict=True):
            self._seen_progress = self._seen_progress or progress
            if progress or not self._seen_progress:
                if self._last_train_x is not None and x < self._last_train_x:
                    self.restarts.append(x)
                self._last_train_x = x
