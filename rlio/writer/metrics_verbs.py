"""``RunWriter.log_metrics``: one ``metrics.jsonl`` line per call, on the writer's hottest path.

The Python method is the reference. A plain dict and an int step are checked with the step apart
by the compiled check of their key layout (``rlio._schema.metrics_check``), encoded in one orjson
call (numpy scalars natively) and the step spliced in front, so the dict is never copied; then
the appender's ``line_appender`` (local: one ``os.write``). Anything unusual takes the general
path, which names what is wrong. Where the optional C extension is built, the writer's
``log_metrics`` attribute is its ``MetricsLine`` (``rlio.writer.metrics_fast``), which does the
same for the layouts this method teaches it and hands every other call here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from rlio import layout as L
from rlio._codec.jsonl import _LINE_OPTS, INT_MAX, INT_MIN, NonFinite, normalize_value
from rlio.errors import RecordError
from rlio.writer import metrics_fast
from rlio.writer.support import metrics_layouts

if TYPE_CHECKING:
    from rlio._schema.metrics_check import MetricsCheck
    from rlio.storage.base import Appender


class MetricsVerbs:
    """``log_metrics`` and its hot paths (a mixin over the writer's appenders and checks)."""

    _check: bool
    _closed: bool
    _nonfinite: NonFinite
    _spans: list[Any]

    if TYPE_CHECKING:
        def _require_open(self) -> None: ...
        def _checked(self, schema: str, record: Any, what: str, index: int) -> Any: ...
        def _encode_line(self, record: Any, index: int) -> bytes: ...
        def _appender(self, rel: str, *, repair: bool = True) -> Appender: ...
        def _log_with_spans(self, metrics: Mapping[str, Any], step: int | None) -> None: ...

    def _init_metrics(self) -> None:
        """The hot path's state before the metrics file is open (see ``_arm_metrics``)."""
        self._metrics_lock = metrics_fast.metrics_lock()
        self._metrics_line: Callable[[bytes], None] | None = None
        self._n_metrics = 0
        self._metrics_layouts: MetricsCheck | None = None
        self._layout_get: Callable[[tuple[Any, ...]], Any] | None = None
        # The last layout used, (its keys as a list, its check): a list compare costs less than
        # hashing a tuple; equal lists are the same layout (orjson writes exact str keys only).
        self._last_layout: tuple[Any, Any] = ((), None)
        self._hot = False
        self._fast: Any = None  # the C log_metrics, when armed

    def _arm_metrics(self, app: Appender) -> None:
        """Set up the ``log_metrics`` hot paths once the metrics file is open."""
        self._metrics_line = app.line_appender()
        if self._check:
            self._metrics_layouts = metrics_layouts()
            if self._metrics_layouts is not None:
                self._layout_get = self._metrics_layouts.layouts.get
        # The hot path splices ``step`` into the encoded metrics: it needs the strict-JSON
        # encoder and, when checking, a schema that judges ``step`` apart from the other keys.
        self._hot = self._nonfinite == "null" and (
            not self._check or self._metrics_layouts is not None)
        if self._hot and type(self).log_metrics is MetricsVerbs.log_metrics:
            self._fast = metrics_fast.arm(
                app, self._metrics_lock, layouts=self._metrics_layouts, spans=self._spans,
                fallback=MetricsVerbs.log_metrics.__get__(self))
            if self._fast is not None:  # the instance's log_metrics: the C one
                self.log_metrics = self._fast  # type: ignore[method-assign]

    def _disarm_fast(self) -> None:
        """Every later ``log_metrics`` on the Python path (call with the metrics lock held)."""
        if self._fast is not None:
            self._fast.disarm()

    def _metrics_index(self) -> int:
        """The index of the next metrics line this writer appends (for error messages)."""
        return self._n_metrics + (self._fast.count if self._fast is not None else 0)

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Append one line to ``metrics.jsonl``: ``step`` first, then the metrics in order.

        One ``write`` on a persistent handle, handed to the OS before this returns (not fsync'd;
        see ``flush``). Values must be scalars (number, string, boolean, None); numpy scalars and
        enums are converted; NaN and infinities follow the writer's ``nonfinite`` policy.

        Raises:
            RecordError: a value is an object or array, breaks the metrics schema, or ``step``
                conflicts with a ``"step"`` key in ``metrics``; nothing is written.
        """
        if self._spans:  # spans measured by timer() since the last call
            self._log_with_spans(metrics, step)
            return
        if type(metrics) is dict and type(step) is int and self._hot:
            body = None
            get = self._layout_get
            try:
                if get is None:  # unchecked: only what orjson can write
                    if "step" not in metrics and INT_MIN <= step <= INT_MAX:
                        body = orjson.dumps(metrics, default=normalize_value, option=_LINE_OPTS)
                else:
                    keys, (last, check) = [*metrics], self._last_layout
                    if keys != last:  # not the last layout (a list compare: no tuple hashed)
                        check = self._metrics_layouts.layout(tuple(keys), metrics.values())  # type: ignore[union-attr]
                        if check is not None:
                            self._last_layout = (keys, check)
                    if check is not None and check(metrics, step):
                        body = orjson.dumps(metrics, None, _LINE_OPTS)
                        if self._fast is not None:  # the C path missed it: teach it
                            metrics_fast.learn(self._fast, keys, metrics,
                                               self._metrics_layouts.plans.get(tuple(keys)))  # type: ignore[union-attr]
            except Exception:  # a user type the check or the encoder trips on: general path
                body = None
            if body is not None:
                # body[0] is its "{": replacing it is one copy (a slice and a concatenation: two)
                line = body.replace(b"{", b'{"step":%d,' % step, 1) if len(body) > 3 else (
                    b'{"step":%d}\n' % step)
                self._metrics_lock.acquire()  # half the cost of a with block
                try:
                    if self._closed:
                        self._require_open()
                    self._metrics_line(line)  # type: ignore[misc]  # set: _hot implies it
                    self._n_metrics += 1
                except OSError:
                    self._disarm_fast()  # a failed append: the Python path from now on
                    raise
                finally:
                    self._metrics_lock.release()
                return
        index = self._metrics_index()
        if step is not None:
            if "step" in metrics and metrics["step"] is not step and metrics["step"] != step:
                raise RecordError(
                    f"metrics record {index} at /step: step={step!r} is given as an argument "
                    f"but the metrics hold step={metrics['step']!r}", index=index,
                    pointer="/step",
                )
            record: Any = {"step": step, **metrics}
        elif type(metrics) is dict and ("step" not in metrics or next(iter(metrics)) == "step"):
            record = metrics
        elif isinstance(metrics, Mapping):
            record = {"step": metrics["step"], **metrics} if "step" in metrics else {**metrics}
        else:
            raise TypeError(f"metrics must be a mapping of name to value, got {metrics!r}")
        if self._check:
            record = self._checked("metrics-line", record, "metrics record", index)
        self._append_metrics(self._encode_line(record, index))

    def _append_metrics(self, line: bytes) -> None:
        # None while the file could not be opened: _appender raises why (a symbolic link)
        append = self._metrics_line or self._appender(L.METRICS).line_appender()
        with self._metrics_lock:
            self._require_open()
            try:
                append(line)
            except OSError:
                self._disarm_fast()  # a failed append: the Python path from now on
                raise
            self._n_metrics += 1
