"""RunWriter: the training loop's facade for writing a run directory (docs/format.md §1-§8).

Verbs are named by their durability (DESIGN): ``log_*`` appends one line with one ``write`` on a
persistent handle, handed to the OS before it returns; ``record_*`` appends durably (fsync) under
an inter-process lock; ``write_*`` and logtree outputs replace a whole file atomically (temp file in
the same directory, fsync, rename). Every record is checked against its schema on a fast path
before the file changes, so a bad record raises ``RecordError`` and leaves the file unchanged.
All I/O goes through ``rlio.storage``; nothing here imports jsonschema or fsspec for a local run.

Hot paths: ``log_metrics`` (``rlio.writer.metrics_verbs``, in C where the optional extension is
built); ``write_rollout_summaries`` runs the compiled one-pass scan of
``rlio._schema.rollout_scan`` and streams the lines through ``Storage.replacing`` (on a local
disk, straight to the temp file).
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from rlio import layout as L
from rlio._codec.jsonl import _LINE_OPTS, NonFinite, encode_line, normalize_value
from rlio._codec.normalize import checked_slow
from rlio._schema.rollout_scan import rollout_scan
from rlio.errors import LabelCollisionError
from rlio.resume import ResumeState, prepare_resume
from rlio.schema import fast_check
from rlio.storage.base import Appender, Storage
from rlio.storage.opener import open_storage
from rlio.storage.tail import repair_torn_tail
from rlio.writer import lease as run_lease
from rlio.writer.logtree_files import logtree_block
from rlio.writer.metrics_verbs import MetricsVerbs
from rlio.writer.rollouts import (
    cross_check,
    in_order,
    ordered_rollout,
    stream_rollouts,
    stream_straight,
)
from rlio.writer.support import (
    checkpoint_record,
    refuse_fresh_start,
    refuse_symlinks,
    refuse_unresumable,
)
from rlio.writer.timing import SpanTimer, TimingVerbs
from rlio.writer.whole_files import WholeFileVerbs

if TYPE_CHECKING:
    from rlio.logtree.builder import LogTree


# --------------------------------------------------------------------------------------------
# The writer


class RunWriter(MetricsVerbs, TimingVerbs, WholeFileVerbs):
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
        attach: join a run as a helper writer (no fresh-start check).
        nonfinite: ``"null"`` (default) writes NaN and infinities as ``null``; ``"token"`` writes
            ``NaN``/``Infinity`` like Python's ``json`` (parity with older readers).
        check: check each record against its schema (and rollout summaries: docs/format.md §9)
            before writing. Turn off only when the records are known good.
        attach: join a live run as a helper, without its lease (see ``rlio.writer.lease``).
        lease_seconds: lease expiry on object stores (renewed every third of it).

    Raises:
        RunInUseError: another live writer holds the run's lease.

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
        lease_seconds: float = run_lease.LEASE_SECONDS,
    ) -> None:
        if layout not in (None, "flat", "nested"):
            raise ValueError(f"layout must be 'flat', 'nested' or None, got {layout!r}")
        if nonfinite not in ("null", "token"):
            raise ValueError(f"nonfinite must be 'null' or 'token', got {nonfinite!r}")
        self.log_path: str = os.fspath(log_path)
        self._attach = attach
        self._storage = open_storage(self.log_path, create=not attach)
        self._lease = run_lease.join_run(self._storage, attach=attach, resume=resume,
                                         lease_seconds=lease_seconds)
        try:
            self._open(layout, resume=resume, nonfinite=nonfinite, check=check)
        except BaseException:
            run_lease.release(self._lease)
            raise

    def _open(self, layout: L.Layout | None, *, resume: bool, nonfinite: NonFinite,
              check: bool) -> None:
        """The rest of the constructor, once the run's lease is held (or attached)."""
        self._nonfinite: NonFinite = nonfinite
        self._check = check
        found = L.detect_layout((e.path for e in self._storage.walk()), first=True)
        if found is not None and layout is not None and found != layout:
            warnings.warn(
                f"run {self.log_path!r} already uses the {found} layout; keeping it instead of "
                f"the requested {layout!r}", UserWarning, stacklevel=3,
            )
        if not resume and not self._attach:
            refuse_fresh_start(self._storage, has_iteration_files=found is not None)
        self._layout: L.Layout = found or layout or "flat"
        self._lock = threading.Lock()
        self._appenders: dict[str, Appender] = {}
        self._init_metrics()
        self._file_locks: dict[str, threading.Lock] = {
            L.METRICS: self._metrics_lock, L.CHECKPOINTS: threading.Lock(),
            L.TIMING_SPANS: threading.Lock(),
        }
        self._predicates: dict[str, Callable[[Any], bool]] = {}
        self._labels: dict[str, str] = {}  # label -> the evaluator name that claimed it
        self._counts = {L.CHECKPOINTS: 0, L.TIMING_SPANS: 0}
        self._timer = SpanTimer()
        self._spans = self._timer.spans  # truthy while timer() spans wait for log_metrics
        self._closed = False
        self.resume_state: ResumeState | None = None
        if resume:
            self.resume_state = prepare_resume(self._storage, required_key="state_path")
        if not self._attach:  # the lease holder only: attached writers never repair
            for rel in (L.METRICS, L.CHECKPOINTS):  # a crashed run: keep torn tails aside
                repair_torn_tail(self._storage, rel)  # (leaves symlinks alone)
        self._repaired = {L.METRICS, L.CHECKPOINTS}
        run_lease.open_metrics(self._storage, lambda: self._appender(L.METRICS, repair=False))

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
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"RunWriter({self.log_path!r}, layout={self._layout!r}) [{state}]"

    def flush(self) -> None:
        """Make every line appended so far durable (fsync)."""
        for rel, app in list(self._appenders.items()):
            with self._file_locks[rel]:
                app.flush()

    def close(self) -> None:
        """Make the appended lines durable and close the handles.

        Idempotent; every verb raises ``ValueError`` afterwards.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            appenders, self._appenders = self._appenders, {}
        with self._metrics_lock:
            self._disarm_fast()  # the C log_metrics writes no more: the descriptor closes
        try:
            for rel, app in appenders.items():
                with self._file_locks[rel]:
                    try:
                        app.flush()
                    finally:
                        app.close()
        finally:
            run_lease.release(self._lease)

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"RunWriter for {self.log_path!r} is closed")
        run_lease.require_lease(self._lease, self.log_path)

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

    # -- validation --------------------------------------------------------------------------

    def _predicate(self, schema: str) -> Callable[[Any], bool]:
        """The compiled fast check of ``schema`` (looked up once per writer)."""
        check = self._predicates.get(schema)
        if check is None:
            check = self._predicates[schema] = fast_check(schema)
        return check

    def _checked(self, schema: str, record: Any, what: str, index: int) -> Any:
        """The record to encode: ``record`` when valid, else a normalized valid copy.

        Raises:
            RecordError: naming ``what``, the index and the JSON pointer of the problem.
        """
        try:
            if self._predicate(schema)(record):
                return record
        except Exception:  # a user type the fast check trips on: take the slow path
            pass
        return checked_slow(schema, record, what, index)

    def _encode(self, record: Any, index: int) -> bytes:
        return encode_line(record, nonfinite=self._nonfinite, index=index)

    def _encode_line(self, record: Any, index: int) -> bytes:
        """One JSONL line: orjson at once under the strict policy, else (or to name the pointer
        of a value it refuses) ``encode_line``."""
        if self._nonfinite == "null":
            try:
                return orjson.dumps(record, default=normalize_value, option=_LINE_OPTS)
            except (TypeError, ValueError, RecursionError):
                pass
        return self._encode(record, index)

    # -- append-only files -------------------------------------------------------------------

    def _appender(self, rel: str, *, repair: bool = True) -> Appender:
        with self._lock:
            self._require_open()
            app = self._appenders.get(rel)
            if app is None:
                refuse_symlinks(self._storage, rel)
                if repair and not self._attach and rel not in self._repaired:
                    repair_torn_tail(self._storage, rel)  # lease holder: a crash's torn tail
                app = self._appenders[rel] = self._storage.appender(rel)
                if rel == L.METRICS:
                    self._arm_metrics(app)
            return app

    def _append(self, rel: str, line: bytes, *, durable: bool) -> None:
        app = self._appenders.get(rel) or self._appender(rel)
        with self._file_locks[rel]:
            self._require_open()
            if durable:
                app.append_durable(line)
            else:
                app.append(line)
            self._counts[rel] += 1

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

        Keys are written as name, batch, epoch, final, state_path, sampler_path (those that are
        None are omitted), then ``extra`` in call order (e.g. ``rolling=True``). The final
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
        if self._check:
            record = self._checked("checkpoint-line", record, "checkpoint record", index)
            refuse_unresumable(record, index)
        self._append(L.CHECKPOINTS, self._encode_line(record, index), durable=True)

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
        ``final_reward``. With ``check`` off, a batch whose records all have their keys in
        order (and the call's split and iteration) is encoded straight, steps as given.

        Raises:
            RecordError: naming the record index and the JSON pointer; the file is unchanged.
        """
        self._require_open()
        it = L.iteration_number(iteration)
        rel = self._target(it, "rollout_summaries", evaluator)
        split = L.split_name(L.parse_path(rel).label)
        recs = records if type(records) is list else list(records)
        with self._storage.replacing(rel) as write:
            self._write_rollouts(recs, it, split, write)

    def _write_rollouts(self, recs: list[Any], it: int, split: str,
                        write: Callable[[bytes | bytearray], None]) -> None:
        """Check, order and encode ``recs`` (see ``stream_rollouts``), streaming to ``write``."""
        scan = rollout_scan() if self._check and self._nonfinite == "null" else None
        if scan is not None and not scan.fixed(it, split):
            scan = None  # every record would fail: the general path names the problem
        check = self._predicate("rollout-summary-line") if self._check else None

        def general(rec: Any, i: int, seen: set[tuple[Any, Any]]) -> bytes:
            out = ordered_rollout(rec, it, split, i)
            if check is not None:
                try:
                    valid = check(out)
                except Exception:  # a user type the fast check trips on: the slow path
                    valid = False
                if not valid:
                    out = checked_slow("rollout-summary-line", out, "rollout summary record", i)
                cross_check(out, i, seen)
            return self._encode_line(out, i)

        if check is None and self._nonfinite == "null" and in_order(recs, it, split):
            stream_straight(recs, write, general)  # unchecked and in order: orjson straight
        else:
            stream_rollouts(recs, it, split, write, scan=scan, general=general)

    @contextlib.contextmanager
    def logtree(
        self, iteration: int, *, title: str, evaluator: str | int | None = None
    ) -> Iterator[LogTree]:
        """A logtree builder for one iteration; its HTML and JSON are written when the block exits.

        Both files are written also when the block raises: the exception is recorded into the
        tree first, then re-raised. The JSON's ``path`` is the HTML twin's full path or URI.
        """
        self._require_open()
        it = L.iteration_number(iteration)
        with logtree_block(self._storage, title, html_rel=self._target(it, "html", evaluator),
                           json_rel=self._target(it, "logtree", evaluator)) as tree:
            yield tree
