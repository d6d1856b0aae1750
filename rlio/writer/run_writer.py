"""RunWriter: the training loop's facade for writing a run directory (docs/format.md §1-§8).

Verbs are named by their durability (DESIGN): ``log_*`` appends one line with one ``write`` on a
persistent handle, handed to the OS before it returns; ``record_*`` appends durably (fsync) under
an inter-process lock; ``write_*`` and logtree outputs replace a whole file atomically (temp file in
the same directory, fsync, rename). All I/O goes through ``rlio.storage``.

Every record takes one path: built in documented key order, encoded by orjson, judged by its
schema (``rlio.schema.record_schema(...).passes``: the error-level rules, what the validator reports
as an error) and the cross-record rules of ``rlio.rules``, then handed to storage under the
file's lock. A refused record raises ``RecordError`` (explained by the same ``RecordSchema``) and
leaves the file unchanged.

The checker judges a record as written: its encoded line decoded, exactly what the validator
will read (numpy scalars as their values, NaN as null), so the writer refuses what the validator
calls an error by construction, whatever Python types the record held.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from time import monotonic
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from rlio import layout as L
from rlio._codec.jsonl import _LINE_OPTS, NonFinite, decode, encode_line, normalize_value
from rlio._codec.lines import MAX_LINE
from rlio._codec.normalize import OnUnserializable, config_bytes, nonfinite_to_none, to_json_value
from rlio.errors import LabelCollisionError, LeaseLostError, RecordError, RlioWarning
from rlio.resume import ResumeState, prepare_resume
from rlio.schema import record_schema
from rlio.storage.base import Appender, Storage
from rlio.storage.opener import open_storage
from rlio.storage.tail import repair_torn_tail
from rlio.writer import ownership
from rlio.writer.logtree_files import logtree_block
from rlio.writer.summaries import cross_check, ordered_rollout, records_argument
from rlio.writer.support import (
    checkpoint_record,
    git_diff,
    metrics_call,
    metrics_record,
    refuse_fresh_start,
    refuse_symlinks,
    refuse_unresumable,
)
from rlio.writer.timing import SpanTimer, check_span_name, span_metrics, timing_line

if TYPE_CHECKING:
    from rlio.logtree.builder import LogTree

#: The schemas of the records the writer checks (docs/format.md §3, §5, §6, §8).
_SCHEMAS = ("metrics-line", "checkpoint-line", "timing-spans-line", "rollout-summary-line")
#: The append-only files: each has a lock (one line at a time) and a count of lines appended.
_APPENDED = (L.METRICS, L.CHECKPOINTS, L.TIMING_SPANS)


def _noting(converted: list[bool]) -> Callable[[Any], Any]:
    """orjson's ``default`` that converts like ``normalize_value`` and notes in ``converted``
    that a value was not written as it is (the line then no longer decodes to the record)."""
    def default(obj: Any) -> Any:
        converted.append(True)
        return normalize_value(obj)
    return default


class RunWriter:
    """Writes one run directory (a local path or a URI) in the format of docs/format.md.

    Args:
        log_path: the run directory; created when absent, with an empty ``metrics.jsonl`` (a
            run killed before its first record is then "not started", not broken).
        layout: ``"flat"`` (default for a new run) or ``"nested"``. An existing run keeps the
            layout found on disk (a differing explicit choice gives a ``UserWarning``).
        resume: prepare a restart: metrics lines the restart will log again go to
            ``metrics.jsonl.superseded``; see ``resume_state``. (Torn last lines of
            ``metrics.jsonl`` and ``checkpoints.jsonl`` are moved to ``<file>.torn`` whenever an
            existing run is opened.) Without it, a run that already holds records (a metrics
            line, a checkpoint, a per-iteration file) raises ``RunExistsError``, unchanged.
        nonfinite: ``"null"`` (default) writes NaN and infinities as ``null``; ``"token"`` writes
            ``NaN``/``Infinity`` like Python's ``json`` (parity with older readers).
        check: check each record against its schema (and rollout summaries: docs/format.md §9)
            before writing. Turn off only when the records are known good.
        attach: join a live run as a helper, without its lease (see ``rlio.writer.ownership``).
        lease_seconds: lease expiry on object stores (renewed every third of it).

    Raises:
        RunInUseError: another live writer holds the run's lease.

    Fenced (DESIGN §8): once the lease holder lost its lease, or may have (see
    ``rlio.storage.lease``), every verb raises ``LeaseLostError`` and writes nothing.
    Ordered (DESIGN §9): ``record_checkpoint`` returns only once every line this writer logged
    before it is as durable as the checkpoint.

    Thread-safe: threads sharing a writer never interleave lines. Use as a context manager, or
    call ``close()``.
    """

    def __init__(
        self,
        log_path: str | os.PathLike[str],
        *,
        layout: L.Layout | None = None,
        resume: bool = False,
        nonfinite: NonFinite = "null",
        check: bool = True,
        attach: bool = False,
        lease_seconds: float = ownership.LEASE_SECONDS,
    ) -> None:
        if layout not in (None, "flat", "nested"):
            raise ValueError(f"layout must be 'flat', 'nested' or None, got {layout!r}")
        if nonfinite not in ("null", "token"):
            raise ValueError(f"nonfinite must be 'null' or 'token', got {nonfinite!r}")
        self.log_path: str = os.fspath(log_path)
        if os.path.lexists(self.log_path) and not os.path.isdir(self.log_path):
            raise ValueError(f"RunWriter(log_path={self.log_path!r}): that path is a file, not a "
                             "run directory; pass a folder (it is created when absent)")
        self._attach = attach
        self._nonfinite: NonFinite = nonfinite
        self._check = check
        self._checks: dict[str, Callable[[Any], bool]] = {
            schema: record_schema(schema).check() for schema in _SCHEMAS}
        self._lock = threading.Lock()  # guards the appenders, labels and the closed flag
        self._appenders: dict[str, Appender] = {}
        self._file_locks = {rel: threading.Lock() for rel in _APPENDED}
        self._counts = dict.fromkeys(_APPENDED, 0)  # lines appended: the next record's index
        self._labels: dict[str, str] = {}  # label -> the evaluator name that claimed it
        self._timer = SpanTimer()
        self._last_step = 0  # where spans pending at close() are filed
        self._top_step: int | None = None  # the highest step logged (a lower one warns, once)
        self._warned_back = False
        self._closed = False
        self.resume_state: ResumeState | None = None
        self._storage = open_storage(self.log_path, create=not attach)
        self._lease = ownership.join_run(self._storage, attach=attach, resume=resume,
                                         lease_seconds=lease_seconds)
        try:
            self._open(layout, resume=resume)
        except BaseException:
            ownership.release(self._lease)
            raise

    def _open(self, layout: L.Layout | None, *, resume: bool) -> None:
        """The rest of the constructor, once the run's lease is held (or attached)."""
        found = L.detect_layout((e.path for e in self._storage.walk()), first=True)
        if found is not None and layout is not None and found != layout:
            warnings.warn(
                f"run {self.log_path!r} already uses the {found} layout; keeping it instead of "
                f"the requested {layout!r}", UserWarning, stacklevel=3,
            )
        if not resume and not self._attach:
            refuse_fresh_start(self._storage, has_iteration_files=found is not None)
        self._layout: L.Layout = found or layout or "flat"
        if resume:
            self.resume_state = prepare_resume(self._storage, required_key="state_path")
        if not self._attach:  # the lease holder only: attached writers never repair
            for rel in (L.METRICS, L.CHECKPOINTS):  # a crashed run: keep torn tails aside
                repair_torn_tail(self._storage, rel)  # (leaves symlinks alone)
        ownership.open_metrics(self._storage, lambda: self._appender(L.METRICS))

    # -- properties and lifecycle ------------------------------------------------------------

    @property
    def layout(self) -> L.Layout:
        """The run's layout: ``"flat"`` or ``"nested"``."""
        return self._layout

    @property
    def storage(self) -> Storage:
        """The storage backend the writer goes through."""
        return self._storage

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.close()
        except LeaseLostError:
            if exc_type is None:  # else the block's own exception goes on (this one is its cause)
                raise

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"RunWriter({self.log_path!r}, layout={self._layout!r}) [{state}]"

    def flush(self) -> None:
        """Make every line appended so far durable (fsync; gs://: the pending batches
        committed)."""
        ownership.require_lease(self._lease, durable=True)
        self._sync(_APPENDED)

    def _sync(self, rels: Iterable[str]) -> None:
        """Make the lines appended so far to each of ``rels`` durable."""
        for rel in rels:
            app = self._appenders.get(rel)
            if app is not None:
                with self._file_locks[rel]:
                    app.flush()

    def close(self) -> None:
        """Make the appended lines durable and close the handles.

        Spans ``timer`` measured since the last ``log_metrics`` are written first, as one
        ``timing_spans.jsonl`` line for the last step logged (0 when none was). Idempotent;
        every verb raises ``ValueError`` afterwards. A writer that lost its lease closes its
        handles without writing anything more, then raises ``LeaseLostError``.
        """
        try:
            if not self._closed and self._timer.spans:
                self.log_timing_spans(self._last_step, self._timer.take())
        finally:
            self._close()

    def _close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            appenders, self._appenders = self._appenders, {}
        lost = ownership.lease_lost(self._lease)
        try:
            for rel, app in appenders.items():
                with self._file_locks[rel]:
                    ownership.close_appender(app, flush=lost is None)
        finally:
            ownership.release(self._lease)
        if lost is not None:
            raise lost

    def _require_open(self, *, durable: bool = False) -> None:
        if self._closed:
            raise ValueError(f"RunWriter for {self.log_path!r} is closed")
        ownership.require_lease(self._lease, durable=durable)

    # -- names and paths ---------------------------------------------------------------------

    def label_for(self, evaluator: str | int | None) -> str | None:
        """The file label of an evaluator name (None for training), claiming it for this writer.

        Raises:
            LabelCollisionError: another evaluator name already maps to the same label in this
                writer's lifetime (labels on disk do not keep the raw name, so a collision with
                a name used by an earlier process is not detected).
        """
        if evaluator is None:
            return None
        if isinstance(evaluator, bool) or not isinstance(evaluator, (str, int)):
            raise TypeError(f"evaluator must be a str (or an int index), got {evaluator!r}")
        name = str(evaluator)
        label = L.sanitize_label(name)
        with self._lock:
            claimed = self._labels.setdefault(label, name)
        if claimed != name:
            raise LabelCollisionError(
                f"evaluator names {claimed!r} and {name!r} both sanitize to the label {label!r} "
                f"in run {self.log_path!r}; rename one of them"
            )
        return label

    def _target(self, iteration: Any, artifact: L.Artifact, evaluator: str | int | None) -> str:
        rel = L.iteration_path(self._layout, L.iteration_number(iteration), artifact,
                               label=self.label_for(evaluator))
        refuse_symlinks(self._storage, rel)
        return rel

    # -- records: encoded, judged -----------------------------------------------------------

    def _encode(self, record: Any, what: str, index: int, *,
                call: Callable[[], str] | None = None,
                converted: list[bool] | None = None) -> bytes:
        """One JSONL line: orjson at once under the strict policy; a record orjson refuses (or
        the token policy) is made plain JSON values first (``to_json_value``). ``converted``
        gets an item when a value was not written as it is (see ``_line``).

        Raises:
            RecordError: a value has no faithful JSON form; names its pointer.
        """
        if self._nonfinite == "null":
            default = normalize_value if converted is None else _noting(converted)
            try:
                return orjson.dumps(record, default, _LINE_OPTS)
            except (TypeError, ValueError, RecursionError):
                pass
        if converted is not None:
            converted.append(True)
        plain = to_json_value(record, what=what, index=index, call=call and call())
        return encode_line(plain, nonfinite=self._nonfinite, index=index)

    def _line(self, schema: str, record: Any, what: str, index: int,
              line: bytes | None = None, *, converted: list[bool] | None = None,
              call: Callable[[], str] | None = None) -> tuple[Any, bytes]:
        """The line of ``record`` (``line`` when given), and the record as the validator will
        read it: the line decoded (NaN tokens as the null they stand for), judged by schema
        ``schema``'s checker. Without ``check``: ``record`` and its line. A line that orjson
        wrote from ``record`` with every value as it is (``converted`` empty: encoded here, or
        by the caller with ``_noting``; no null) decodes to an equal record: ``record`` itself
        is judged then, without the decode (write_rollout_summaries 4096x4, checked: 3.1x ->
        2.7x its floor; log_metrics, 20 floats: see benchmarks/writer_floor.py).

        Raises:
            RecordError: naming ``what`` and the index (or ``call()``, the caller's call, when
                given) and the JSON pointer of the problem.
        """
        if line is None:
            converted = []
            line = self._encode(record, what, index, call=call, converted=converted)
        if len(line) > MAX_LINE:  # the validator's RL114: no reader reads it
            where = call() if call is not None else f"{what} {index}"
            raise RecordError(f"{where} at /: its line is {len(line):,} bytes, over the "
                              f"{MAX_LINE >> 20} MiB a reader reads", index=index, pointer="")
        if not self._check:
            return record, line
        if converted == [] and b"null" not in line:  # the line decodes to ``record`` itself:
            # orjson wrote every value as it is (a null may be a NaN, which the engine judges
            # as neither number nor null); a type the engine does not know raises ValueError
            try:
                if self._checks[schema](record):
                    return record, line
            except ValueError:
                pass
        try:
            image = orjson.loads(line)
        except orjson.JSONDecodeError:  # the token policy's NaN: read as the null it stands for
            image, nonfinite = decode(line)
            if nonfinite:
                image = nonfinite_to_none(image)
        if self._checks[schema](image):
            return image, line
        pointer, reason = record_schema(schema).refusal(image) or ("", "")
        where = call() if call is not None else f"{what} {index}"
        raise RecordError(f"{where} at {pointer or '/'}: {reason}",
                          index=index, pointer=pointer)

    # -- append-only files -------------------------------------------------------------------

    def _appender(self, rel: str) -> Appender:
        with self._lock:
            self._require_open()
            app = self._appenders.get(rel)
            if app is None:
                refuse_symlinks(self._storage, rel)
                if rel == L.TIMING_SPANS and not self._attach:
                    repair_torn_tail(self._storage, rel)  # lease holder: a crash's torn tail
                app = self._appenders[rel] = self._storage.appender(rel)
            return app

    def _append(self, rel: str, line: bytes, *, durable: bool) -> None:
        app = self._appenders.get(rel) or self._appender(rel)
        lease = self._lease
        with self._file_locks[rel]:
            if self._closed or (lease is not None and lease.valid_until <= monotonic()):
                self._require_open()  # a lease check past valid_until: renews, or raises why
            if durable:
                app.append_durable(line)
            else:
                app.append(line)
            self._counts[rel] += 1

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Append one line to ``metrics.jsonl``: ``step`` first, then the metrics in order.

        One ``write`` on a persistent handle, handed to the OS before this returns (not fsync'd;
        see ``flush``). Values must be scalars (number, string, boolean, None); numpy scalars and
        enums are converted; NaN and infinities follow the writer's ``nonfinite`` policy. Spans
        measured by ``timer`` since the last call go with it (see ``timer``).

        Raises:
            RecordError: a value is an object or array, breaks the metrics schema, or ``step``
                conflicts with a ``"step"`` key in ``metrics``; nothing is written.
        """
        if self._timer.spans:
            self._log_with_spans(metrics, step)
            return
        index = self._counts[L.METRICS]
        if type(step) is int and type(metrics) is dict and "step" not in metrics \
                and self._nonfinite == "null" and step.bit_length() < 64:
            converted: list[bool] = []
            try:  # the step goes in front of the encoded metrics (the caller's dict unchanged)
                body = orjson.dumps(metrics, _noting(converted), _LINE_OPTS)
            except (TypeError, ValueError, RecursionError):
                body = None  # the record is built and encoded below, which names the problem
            if body is not None:
                line = (b'{"step":%d,' % step + body[1:] if len(body) > 3
                        else b'{"step":%d}\n' % step)
                encoded = {"step": step, **metrics} if self._check else metrics  # as written
                self._line("metrics-line", encoded, "metrics record", index, line,
                           converted=converted, call=lambda: metrics_call(step))
                self._append(L.METRICS, line, durable=False)
                self._logged_step(step)
                return
        call = metrics_call(step)
        record = metrics_record(metrics, step, index, call)
        _, line = self._line("metrics-line", record, "metrics record", index, call=lambda: call)
        self._append(L.METRICS, line, durable=False)
        self._logged_step(record.get("step", self._last_step))

    def _logged_step(self, step: Any) -> None:
        """Note the step of a metrics line just written (pending spans are filed under it);
        warn (once per writer) when it went below the highest step logged."""
        self._last_step = step
        if type(step) is not int:
            return
        top = self._top_step
        if top is None or step > top:
            self._top_step = step
            return
        if step == top or self._warned_back:
            return
        self._warned_back = True
        warnings.warn(
            f"log_metrics(..., step={step}) after step={top}: the metrics step went backwards "
            f"(written as given; `rlio validate` reports it as RL408 unless a resume or an eval "
            f"line explains it). Warned once per RunWriter.", RlioWarning, stacklevel=3)

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
        _, line = self._line("timing-spans-line", timing_line(step, spans),
                             "timing spans record", index)
        self._append(L.TIMING_SPANS, line, durable=False)

    def timer(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Measure a block as a span: ``with run.timer("sample"): ...``.

        The spans measured since the last ``log_metrics`` are written with the next
        ``log_metrics(..., step=s)``: one ``timing_spans.jsonl`` line for step ``s`` and
        ``time/<name>`` metrics (seconds, summed per name; a key the call gives wins). Spans
        still pending at ``close()`` are written then, under the last step logged.

        Raises:
            TypeError: ``name`` is not a non-empty string.
            ValueError: ``name`` cannot be written (no UTF-8 form), refused at this call.
        """
        check_span_name(name)  # refused here, not at the next log_metrics or close()
        self._require_open()
        return self._timer.measure(name)

    def record_checkpoint(
        self,
        /,
        name: str,
        *,
        batch: int | None = None,
        epoch: int | None = None,
        final: bool | None = None,
        state_path: str | os.PathLike[str] | None = None,
        sampler_path: str | os.PathLike[str] | None = None,
        **extra: Any,
    ) -> None:
        """Append one record to ``checkpoints.jsonl`` durably (fsync, inter-process lock).

        Keys are written in the documented order (docs/format.md §5: name, batch, epoch, final,
        state_path, sampler_path, rolling, cumulative_tokens, discarded_tokens; arguments that are
        None are omitted), then other ``extra`` keys in call order. The final
        checkpoint is recognised by ``name == "final"``. ``state_path`` and ``sampler_path``
        are URIs or local paths (``os.PathLike`` is written as a string).

        Raises:
            RecordError: the record breaks the checkpoint schema (an empty path, say), or
                carries ``state_path`` without ``batch`` (resume could not restart from it);
                nothing is written.
        """
        index = self._counts[L.CHECKPOINTS]
        record = checkpoint_record(name, (("batch", batch), ("epoch", epoch), ("final", final),
                                          ("state_path", state_path),
                                          ("sampler_path", sampler_path)), extra)
        judged, line = self._line("checkpoint-line", record, "checkpoint record", index)
        if self._check:
            refuse_unresumable(judged, index)
        self._require_open(durable=True)
        self._sync((L.METRICS, L.TIMING_SPANS))  # ordered: what came before is durable first
        self._append(L.CHECKPOINTS, line, durable=True)

    # -- whole files -------------------------------------------------------------------------

    def write_config(self, obj: Any, *, on_unserializable: OnUnserializable = "text") -> None:
        """Replace ``config.json`` atomically with ``obj`` serialized (indent 2).

        Accepts dataclasses, pydantic models, enums, paths, mappings and sequences. A value with
        no JSON form (a function, a class such as ``np.float32``, bytes, a non-string key) is
        written as the cookbook's logger writes it (``"numpy.float32"``, ``"<class 'bytes'>"``)
        with an ``RlioWarning`` naming the field; ``on_unserializable="repr"`` writes its
        ``repr()`` instead and ``"error"`` refuses it. Only the lease holder writes it: an
        attached writer is refused.

        Raises:
            RecordError: a reference cycle, or (with ``on_unserializable="error"``) a value with
                no JSON form; names its key path.
        """
        self._require_open(durable=True)
        ownership.refuse_attached(self._attach, f"write_config: {L.CONFIG}", self.log_path)
        data = config_bytes(obj, on_unserializable=on_unserializable, nonfinite=self._nonfinite)
        self._storage.replace(L.CONFIG, data)

    def write_code_diff(self, text: str | bytes | None = None) -> None:
        """Replace ``code.diff`` atomically (only the lease holder writes it).

        Args:
            text: the diff to write; by default ``git diff HEAD`` of the current working
                directory plus the names of untracked files (see ``git_diff``); empty outside
                a git repository.
        """
        self._require_open(durable=True)
        ownership.refuse_attached(self._attach, f"write_code_diff: {L.CODE_DIFF}", self.log_path)
        if text is None:
            data = git_diff()
        elif isinstance(text, bytes):
            data = text
        elif isinstance(text, str):
            data = text.encode("utf-8", "surrogateescape")
        else:
            raise TypeError(f"write_code_diff(text=...) takes the diff as str or bytes (or None "
                            f"for the git diff of the current directory), got "
                            f"{type(text).__name__} {text!r:.80}")
        self._storage.replace(L.CODE_DIFF, data)

    # -- per-iteration files ----------------------------------------------------------------

    def write_rollout_summaries(
        self, iteration: int, records: Iterable[Mapping[str, Any]], *,
        evaluator: str | int | None = None,
    ) -> None:
        """Replace one iteration's ``*_rollout_summaries.jsonl`` atomically, one line per record.

        Keys are put in docs/format.md §6 order (steps too). ``schema_version``, ``split`` and
        ``iteration`` are filled in when absent and must match the call when present; every
        other key is required. With ``check`` on, ``(group_idx, traj_idx)`` must be unique,
        ``step_idx`` must run 0..n-1 and ``total_reward`` must equal the step rewards plus
        ``final_reward``.

        Raises:
            TypeError: ``records`` is not a list (an iterable) of mappings, such as one mapping.
            RecordError: naming the record index and the JSON pointer; the file is unchanged.
        """
        self._require_open(durable=True)
        records_argument(iteration, records)
        it = L.iteration_number(iteration)
        rel = self._target(it, "rollout_summaries", evaluator)
        split = L.split_name(L.parse_path(rel).label)
        seen: set[tuple[Any, Any]] = set()
        lines = []
        for i, rec in enumerate(records):
            out = ordered_rollout(rec, it, split, i)
            if self._check:
                out, line = self._line("rollout-summary-line", out, "rollout summary record", i)
                cross_check(out, i, seen)
            else:
                line = self._encode(out, "rollout summary record", i)
            lines.append(line)
        self._storage.replace(rel, b"".join(lines))

    @contextlib.contextmanager
    def logtree(
        self, iteration: int, *, title: str, evaluator: str | int | None = None
    ) -> Iterator[LogTree]:
        """A logtree builder for one iteration; its HTML and JSON are written when the block exits.

        Both files are written also when the block raises: the exception is recorded into the
        tree first, then re-raised. The JSON's ``path`` is the HTML twin's full path or URI.
        """
        self._require_open(durable=True)
        it = L.iteration_number(iteration)
        with logtree_block(self._storage, title, html_rel=self._target(it, "html", evaluator),
                           json_rel=self._target(it, "logtree", evaluator),
                           before_write=lambda: self._require_open(durable=True)) as tree:
            yield tree
