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
from typing import Any, Final

from rlio.schema import record_schema

#: The documented key order of one span (docs/format.md §8, from its schema); other keys follow
#: in the caller's.
SPAN_KEYS: Final = record_schema("timing-spans-line").keys_at("properties", "spans", "items")


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
        #: The pending spans: truthy while spans wait for the next ``log_metrics``.
        self.spans: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def measure(self, name: str) -> Iterator[None]:
        """Measure the block as one span named ``name`` (also when it raises).

        Raises:
            TypeError: ``name`` is not a non-empty string.
            ValueError: ``name`` has no UTF-8 form (a lone surrogate).
        """
        check_span_name(name)
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


def check_span_name(name: Any) -> None:
    """Refuse a span name that cannot be written (its span line and ``time/<name>`` metric).

    Raises:
        TypeError: ``name`` is not a non-empty string.
        ValueError: ``name`` has no UTF-8 form (a lone surrogate such as ``"\\ud800"``).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"timer name must be a non-empty string, got {name!r}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"timer name {name!r} cannot be written: it has no UTF-8 form "
                         f"({exc.reason} at index {exc.start})") from None
