"""Timing spans (docs/format.md §8): ``timing_spans.jsonl`` lines, spans ``RunWriter.timer`` takes.

A line is ``{"step", "spans": [{"name", "duration", "wall_start", "wall_end", ...extra}]}``,
the shape the cookbook's ``read_timing`` reads. ``SpanTimer`` collects the spans measured since
the last ``log_metrics``; the writer flushes them with the next ``log_metrics(..., step=s)`` as
one timing line for step ``s`` and as ``time/<name>`` metrics (seconds, summed per name).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from rlio import layout as L

#: The documented key order of one span (docs/format.md §8); other keys follow in the caller's.
SPAN_KEYS: Final = ("name", "duration", "wall_start", "wall_end")


def timing_line(step: Any, spans: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``timing_spans.jsonl`` record of ``step``: each span's keys in documented order.

    Raises:
        TypeError: ``spans`` is not an iterable of mappings (a string or a mapping itself).
    """
    if isinstance(spans, (str, bytes, Mapping)):
        raise TypeError(f"spans must be a list of span mappings, got {spans!r}")
    out = []
    for i, span in enumerate(spans):
        if not isinstance(span, Mapping):
            raise TypeError(f"span {i} must be a mapping with name, duration, wall_start and "
                            f"wall_end, got {span!r}")
        ordered = {k: span[k] for k in SPAN_KEYS if k in span}
        ordered.update((k, v) for k, v in span.items() if k not in ordered)
        out.append(ordered)
    return {"step": step, "spans": out}


class SpanTimer:
    """The spans measured since the writer last flushed them (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: The pending spans; the list object never changes, so a hot path may hold it and test
        #: its truth for "spans wait for the next ``log_metrics``".
        self.spans: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def measure(self, name: str) -> Iterator[None]:
        """Measure the block as one span named ``name`` (also when it raises).

        Raises:
            TypeError: ``name`` is not a non-empty string.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"timer name must be a non-empty string, got {name!r}")
        wall_start, start = time.time(), time.perf_counter()
        try:
            yield
        finally:
            duration = time.perf_counter() - start
            span = {"name": name, "duration": duration, "wall_start": wall_start,
                    "wall_end": wall_start + duration}
            with self._lock:
                self.spans.append(span)

    def take(self) -> list[dict[str, Any]]:
        """The pending spans, in the order their blocks ended; none remain pending."""
        with self._lock:
            spans = self.spans[:]
            self.spans.clear()
        return spans

    def put_back(self, spans: list[dict[str, Any]]) -> None:
        """Return ``spans`` (taken, then not written) in front of any measured since."""
        with self._lock:
            self.spans[:0] = spans


def span_metrics(metrics: Mapping[str, Any], spans: list[dict[str, Any]]) -> dict[str, Any]:
    """``metrics`` plus ``time/<name>``: seconds summed per span name (a key given wins)."""
    totals: dict[str, float] = {}
    for span in spans:
        key = f"time/{span['name']}"
        totals[key] = totals.get(key, 0.0) + span["duration"]
    return {**metrics, **{k: v for k, v in totals.items() if k not in metrics}}


class TimingVerbs:
    """``RunWriter``'s timing verbs: ``log_timing_spans``, ``timer`` and the flush of measured
    spans with the next ``log_metrics`` (a mixin over the writer's own helpers)."""

    _timer: SpanTimer
    _counts: dict[str, int]
    _check: bool

    if TYPE_CHECKING:
        def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None: ...
        def _require_open(self) -> None: ...
        def _checked(self, schema: str, record: Any, what: str, index: int) -> Any: ...
        def _encode_line(self, record: Any, index: int) -> bytes: ...
        def _append(self, rel: str, line: bytes, *, durable: bool) -> None: ...

    def _log_with_spans(self, metrics: Mapping[str, Any], step: int | None) -> None:
        """``log_metrics`` with the pending spans: ``time/<name>`` metrics, then their line."""
        s = step if step is not None else (
            metrics.get("step") if isinstance(metrics, Mapping) else None)
        spans = self._timer.take()  # nothing pending while the metrics are logged
        if not (isinstance(s, int) and not isinstance(s, bool) and isinstance(metrics, Mapping)):
            try:  # no step to file the spans under: they wait for the next call
                self.log_metrics(metrics, step)
            finally:
                self._timer.put_back(spans)
            return
        try:
            self.log_metrics(span_metrics(metrics, spans), step)
        except BaseException:
            self._timer.put_back(spans)
            raise
        self.log_timing_spans(s, spans)

    def log_timing_spans(self, step: int, spans: Iterable[Mapping[str, Any]]) -> None:
        """Append a line to ``timing_spans.jsonl`` (docs/format.md §8): ``{"step", "spans": [..]}``.

        Each span is a mapping with ``name``, ``duration`` (seconds), ``wall_start`` and
        ``wall_end`` (Unix times), written in that order, then its other keys.

        Raises:
            RecordError: the line breaks the timing-spans schema; nothing is written.
        """
        index = self._counts[L.TIMING_SPANS]
        record = timing_line(step, spans)
        if self._check:
            record = self._checked("timing-spans-line", record, "timing spans record", index)
        self._append(L.TIMING_SPANS, self._encode_line(record, index), durable=False)

    def timer(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Measure a block as a span: ``with run.timer("sample"): ...``.

        The spans measured since the last ``log_metrics`` are written with the next
        ``log_metrics(..., step=s)``: one ``timing_spans.jsonl`` line for step ``s`` and
        ``time/<name>`` metrics (seconds, summed per name; a key the call gives wins).
        """
        self._require_open()
        return self._timer.measure(name)

