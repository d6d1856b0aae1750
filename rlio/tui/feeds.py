"""What ``rlio top`` reads of a run, on background threads, with no Textual import.

A ``RunFeed`` shows a run's first screen from the end of its files and then only reads what
changes:

- the last lines of ``metrics.jsonl`` (``rlio._codec.lines.backward_lines``: the cost of the
  tail, whatever the file's length), then every line appended since, through the reader's
  follower (``rlio.reader.follow.follow_jsonl``, started before the tail is read: a line read by
  both is the same step's value, kept once);
- the rest of the history: a local file is scanned once in the background for its series
  (every ``stride``-th line, so about ``CAP`` points per key) and the exact best of the chosen
  metrics; on an object store only the tail is read (no whole-file download);
- the status (``rlio.status``), and, once the run view opens it (``open_detail``), the
  checkpoints (followed), the iterations (a listing), the latest iteration's groups and the
  validator's findings (``rlio.validate.watch.Watcher``), looked at every ``slow`` seconds.

Memory stays flat as the run grows: each series keeps at most ``CAP`` points (halving its
resolution when full), and checkpoints and findings are capped. Nothing is ever written.
"""

from __future__ import annotations

import contextlib
import math
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlio import layout
from rlio.findings import Finding
from rlio.reader.follow import follow_jsonl
from rlio.reader.run import IterationInfo, Run
from rlio.reader.source import iter_records
from rlio.status import RunStatus, records_from_end, run_status
from rlio.storage.base import Storage
from rlio.storage.run_root import open_run_storage
from rlio.tui.group_stats import IterationRows, iteration_rows

__all__ = ["CAP", "MetricsFeed", "RunFeed", "Series", "best_of", "lower_is_better", "step_of"]

#: Points kept per series at most.
CAP = 2048
#: Lines read from the end of ``metrics.jsonl`` for the first screen.
TAIL_LINES = 2000
#: Checkpoints and findings kept (the latest).
MAX_CHECKPOINTS = 1000
MAX_FINDINGS = 500
_X_KEYS = ("step", "progress/batch", "training_client/step")
_LOWER = ("loss", "kl", "error", "perplexity", "time", "cost", "stale")


def step_of(record: Mapping[str, Any]) -> int | None:
    """A metrics line's x: ``step``, else ``progress/batch``, else ``training_client/step``."""
    for key in _X_KEYS:
        v = record.get(key)
        if type(v) is int:
            return v
    return None


def lower_is_better(key: str) -> bool:
    """Whether a metric's best value is its smallest (losses, KL, errors, time, cost)."""
    low = key.lower()
    return any(word in low for word in _LOWER)


def best_of(key: str, a: float | None, b: float) -> float:
    """The better of ``a`` (None: none yet) and ``b`` for metric ``key``; NaN never wins."""
    if a is None or math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return min(a, b) if lower_is_better(key) else max(a, b)


class Series:
    """(x, y) points in x order, at most ``cap``; a repeated x keeps its last y; when full,
    every other point is dropped (the resolution halves, the shape stays)."""

    __slots__ = ("cap", "xs", "ys")

    def __init__(self, cap: int = CAP) -> None:
        self.cap = cap
        self.xs: list[int] = []
        self.ys: list[float] = []

    def add(self, x: int, y: float) -> None:
        """Add one point (out of order: inserted in place)."""
        xs = self.xs
        if not xs or x > xs[-1]:
            xs.append(x)
            self.ys.append(y)
        else:
            i = bisect_left(xs, x)
            if i < len(xs) and xs[i] == x:
                self.ys[i] = y
                return
            xs.insert(i, x)
            self.ys.insert(i, y)
        if len(xs) > self.cap:
            last = (xs[-1], self.ys[-1])
            del xs[1::2], self.ys[1::2]
            if xs[-1] != last[0]:  # the latest point always stays
                xs.append(last[0])
                self.ys.append(last[1])

    def points(self) -> list[tuple[float, float]]:
        """A copy of the points."""
        return list(zip(self.xs, self.ys, strict=True))


def _number(v: Any) -> float | None:
    return float(v) if type(v) in (int, float) else None


@dataclass
class MetricsFeed:
    """What is known of ``metrics.jsonl``: a series per numeric key, each key's last value (at
    the highest step) and the best of the ``chosen`` keys over every line read."""

    chosen: tuple[str, ...] = ()
    series: dict[str, Series] = field(default_factory=dict)
    last: dict[str, tuple[int, float]] = field(default_factory=dict)
    best: dict[str, float] = field(default_factory=dict)
    last_step: int | None = None
    batch: int | None = None
    lines: int = 0

    def add(self, record: Mapping[str, Any], *, plot: bool = True) -> None:
        """Take one metrics line (``plot``: into the series and last values too; else only
        the chosen keys' best, the cheap pass over a long history)."""
        self.lines += 1
        x = step_of(record)
        if x is None:
            return
        if not plot:
            for key in self.chosen:
                y = _number(record.get(key))
                if y is not None:
                    self.best[key] = best_of(key, self.best.get(key), y)
            return
        if self.last_step is None or x >= self.last_step:
            self.last_step = x
            b = record.get("progress/batch")
            if type(b) is int:
                self.batch = b
        for key, raw in record.items():
            y = _number(raw)
            if y is None or key == "step":
                continue
            prev = self.last.get(key)
            if prev is None or x >= prev[0]:
                self.last[key] = (x, y)
            if key in self.chosen:
                self.best[key] = best_of(key, self.best.get(key), y)
            s = self.series.get(key)
            if s is None:
                s = self.series[key] = Series()
            s.add(x, y)

    def value(self, key: str) -> float | None:
        """The last value of ``key``, or None."""
        hit = self.last.get(key)
        return None if hit is None else hit[1]


def tail_records(storage: Storage, rel: str, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` whole records from the end of ``rel``, in file order (a torn tail and
    bad lines skipped; read as ``rlio show``'s status reads them)."""
    return records_from_end(storage, rel, limit, chunk=256 << 10)[::-1]


class Stopped(Exception):
    """Raised inside a follower's sleep when the feed stops: ends the follower."""


class RunFeed:
    """One run read live (see the module docstring). Every public attribute is read by the UI
    under ``lock``; ``version`` grows whenever something shown changed."""

    def __init__(self, location: str, name: str, *, chosen: Iterable[str] = (),
                 poll: float = 1.0, slow: float = 3.0,
                 scans: threading.Semaphore | None = None) -> None:
        self.location = location
        #: Held while the history is scanned: feeds sharing it scan one run at a time.
        self.scans = scans or threading.Semaphore(1)
        self.name = name
        self.poll = poll
        self.slow = slow
        self.lock = threading.RLock()
        self.version = 0
        self.metrics = MetricsFeed(tuple(chosen))
        self.status: RunStatus | None = None
        self.error: str | None = None  # a reader thread ended on it
        self.look_error: str | None = None  # the last look failed (tried again)
        self.loaded = False  # the tail is in
        self.history = "pending"  # "pending", "reading", "done" or "tail only"
        self.checkpoints: deque[dict[str, Any]] = deque(maxlen=MAX_CHECKPOINTS)
        self.iterations: list[IterationInfo] = []
        self.latest: IterationRows | None = None  # the latest training iteration's groups
        self.findings: deque[Finding] = deque(maxlen=MAX_FINDINGS)
        self.findings_state = "not checked"
        self.detail = False
        self._stop = threading.Event()
        self._storage: Storage | None = None
        self._threads: list[threading.Thread] = []
        self._detail_started = False
        self._wake = threading.Event()

    # -- threads -------------------------------------------------------------------------

    def start(self) -> None:
        """Start reading: the follower, then the tail, then the history; the status loop."""
        self._spawn(self._metrics_loop)
        self._spawn(self._slow_loop)

    def open_detail(self) -> None:
        """Also read what the run view shows: checkpoints, iterations, groups, findings."""
        with self.lock:
            self.detail = True
        self._wake.set()

    def stop(self) -> None:
        """Stop every thread (each ends at its next look)."""
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float = 2.0) -> None:
        """Wait for the threads to end (after ``stop``)."""
        for t in self._threads:
            t.join(timeout)

    def _spawn(self, target: Callable[[], None]) -> None:
        t = threading.Thread(target=self._guard(target), daemon=True,
                             name=f"rlio-top {self.name} {target.__name__}")
        self._threads.append(t)
        t.start()

    def _guard(self, target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except Stopped:
                return
            except Exception as exc:  # a reader error is shown, never raised into the UI
                with self.lock:
                    self.error = f"{type(exc).__name__}: {exc}"
                    self.version += 1
        return run

    def _sleep(self, seconds: float) -> None:
        if self._stop.wait(seconds):
            raise Stopped

    def _changed(self) -> None:
        self.version += 1

    def _open(self) -> Storage:
        with self.lock:
            if self._storage is None:
                self._storage = open_run_storage(self.location)
            return self._storage

    # -- metrics -------------------------------------------------------------------------

    def _metrics_loop(self) -> None:
        storage = self._open()
        positioned = threading.Event()

        def sleep(seconds: float) -> None:
            positioned.set()
            self._sleep(seconds)

        lines = follow_jsonl(storage, layout.METRICS, poll=self.poll, from_start=False,
                             sleep=sleep)
        reader = threading.Thread(target=self._guard(lambda: self._read_history(positioned)),
                                  daemon=True, name=f"rlio-top {self.name} history")
        self._threads.append(reader)
        reader.start()
        for record in lines:
            with self.lock:
                self.metrics.add(record)
                self._changed()

    def _read_history(self, positioned: threading.Event) -> None:
        positioned.wait(5.0)  # the follower has its start: no line falls between
        storage = self._open()
        tail = tail_records(storage, layout.METRICS, TAIL_LINES)
        with self.lock:
            for record in tail:
                self.metrics.add(record)
            self.loaded = True
            self.history = "reading" if storage.is_local else "tail only"
            self._changed()
        if not storage.is_local:
            return
        entry = storage.stat(layout.METRICS)
        size = entry.size if entry is not None else 0
        if size and len(tail) >= TAIL_LINES:
            with self.scans:
                self._scan(storage, size)
        with self.lock:
            self.history = "done"
            self._changed()

    def _scan(self, storage: Storage, size: int) -> None:
        """Read the whole local file once: the chosen keys' best over every line, the series
        from every ``stride``-th line (about ``CAP`` of them), merged under the live ones."""
        sample = storage.read_range(layout.METRICS, max(0, size - (64 << 10)), size)
        per_line = len(sample) / max(1, sample.count(b"\n"))  # bytes per line, about
        stride = max(1, int(size / per_line / CAP))
        scanned = MetricsFeed(self.metrics.chosen)
        for n, record in enumerate(_stopping(iter_records(storage, layout.METRICS),
                                             self._stop)):
            scanned.add(record, plot=n % stride == 0)
        with self.lock:
            live = self.metrics
            for key, s in scanned.series.items():
                own = live.series.get(key)
                if own is not None:  # the live points (tail, follower) are finer: they win
                    for x, y in zip(own.xs, own.ys, strict=True):
                        s.add(x, y)
                live.series[key] = s
            for key, b in scanned.best.items():
                live.best[key] = best_of(key, live.best.get(key), b)
            for key, (x, y) in scanned.last.items():
                if key not in live.last:
                    live.last[key] = (x, y)
            self._changed()

    # -- checkpoints, status, iterations, findings ---------------------------------------

    def _checkpoints_loop(self) -> None:
        def sleep(seconds: float) -> None:
            self._sleep(seconds)

        for record in follow_jsonl(self._open(), layout.CHECKPOINTS, poll=self.poll,
                                   sleep=sleep):
            with self.lock:
                self.checkpoints.append(record)
                self._changed()

    def _slow_loop(self) -> None:
        """Every ``slow`` seconds (or when the run view opens): the status, and in the run view
        the iterations, the latest groups and the findings. A look that fails (the network, a
        file gone for now) is shown and tried again at the next one."""
        state: dict[str, Any] = {"watcher": None, "groups": None}
        while True:
            try:
                self._look(state)
            except OSError as exc:
                with self.lock:
                    self.look_error = f"{type(exc).__name__}: {exc}"
                    self._changed()
            self._wake.wait(self.slow)  # or sooner, when the run view opens
            self._wake.clear()
            if self._stop.is_set():
                raise Stopped

    def _look(self, state: dict[str, Any]) -> None:
        storage = self._open()
        status = run_status(storage)
        with self.lock:
            if status != self.status or self.look_error is not None:
                self.status = status
                self.look_error = None
                self._changed()
            detail = self.detail
        if not detail:
            return
        if not self._detail_started:
            self._detail_started = True
            self._spawn(self._checkpoints_loop)
        state["groups"] = self._look_iterations(storage, state["groups"])
        if self.loaded:  # the first screen before the validator's first pass
            if state["watcher"] is None:
                from rlio.validate.watch import Watcher

                state["watcher"] = Watcher(self.location)
            self._look_findings(state["watcher"])

    def _look_iterations(self, storage: Storage, seen: tuple[int, tuple[str, ...]] | None
                         ) -> tuple[int, tuple[str, ...]] | None:
        run = Run(storage, self.location)
        its = run.iterations()
        with self.lock:
            if [i.index for i in its] != [i.index for i in self.iterations]:
                self.iterations = its
                self._changed()
        latest = next((i for i in reversed(its) if any(
            layout.parse_path(f).kind == "rollout_summaries"
            and layout.parse_path(f).label is None for f in i.files)), None)
        if latest is None:
            return seen
        key = (latest.index, latest.files)
        if key == seen:
            return seen
        rows = iteration_rows(run.rollouts(latest.index), latest.index)
        with self.lock:
            self.latest = rows
            self._changed()
        return key

    def _look_findings(self, watcher: Any) -> None:
        with self.lock:
            if self.findings_state == "not checked":
                self.findings_state = "checking"
                self._changed()
        new = watcher.check()
        with self.lock:
            self.findings.extend(new)
            report = watcher.report
            self.findings_state = ("ok" if report is None or report.ok else "errors")
            self._changed()


def _stopping(records: Iterator[dict[str, Any]], stop: threading.Event
              ) -> Iterator[dict[str, Any]]:
    """``records`` until ``stop`` is set (looked at every 4096 records)."""
    for n, record in enumerate(records):
        if n % 4096 == 0 and stop.is_set():
            with contextlib.suppress(Exception):
                records.close()  # type: ignore[attr-defined]
            return
        yield record
