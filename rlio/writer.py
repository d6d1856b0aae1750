"""RunWriter: the training loop's facade for writing a run directory (SPEC §1-§8).

Verbs are named by their durability (DESIGN): ``log_*`` appends one line with one ``write`` on a
persistent handle, handed to the OS before it returns; ``record_*`` appends durably (fsync) under
an inter-process lock; ``write_*`` and logtree outputs replace a whole file atomically (temp file in
the same directory, fsync, rename). Every record is checked against its schema on a fast path
before anything is written, so a bad record raises ``RecordError`` and leaves the file unchanged.
All I/O goes through ``rlio.storage``; nothing here imports jsonschema or fsspec for a local run.
"""

from __future__ import annotations

import contextlib
import operator
import os
import subprocess
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from . import layout as L
from ._jsonl import DecodeError, NonFinite, decode, encode_line
from ._normalize import OnUnserializable, has_nonfinite, nonfinite_to_none, to_json_value
from ._normalize_rollouts import cross_check, ordered_rollout
from .errors import LabelCollisionError, RecordError, UnsafeStorageError
from .schema import explain, is_valid
from .storage import Appender, Storage, open_storage

if TYPE_CHECKING:
    from .logtree import LogTree
    from .resume import ResumeState

__all__ = ["RunWriter", "git_diff", "repair_torn_tail"]

_TAIL_CHUNK = 1 << 16
_GIT_TIMEOUT = 30.0


# --------------------------------------------------------------------------------------------
# Torn tails


def _torn_offset(storage: Storage, rel: str, size: int, check_json: bool) -> int:
    """Where the torn tail of an append-only file starts (``size`` when there is none).

    Torn: bytes after the last ``\\n``; for JSONL files also a last complete line that does not
    parse (what a crash can leave behind a zero-filled or half-flushed block).
    """
    buf, pos = b"", size
    while True:
        start = max(0, pos - _TAIL_CHUNK)
        buf = storage.read_range(rel, start, pos) + buf
        pos = start
        last_nl = buf.rfind(b"\n")
        if last_nl < 0 and pos > 0:
            continue  # the unterminated tail is longer than what was read
        tail = pos + last_nl + 1  # start of the unterminated tail (== size when none)
        if not check_json or last_nl < 0:
            return tail
        prev_nl = buf.rfind(b"\n", 0, last_nl)
        if prev_nl < 0 and pos > 0:
            continue  # the last complete line starts before what was read
        line = buf[prev_nl + 1:last_nl]
        if not line.strip():
            return tail  # a blank line is tolerated, not torn
        try:
            decode(line)
        except DecodeError as exc:
            if exc.kind in ("json", "utf8"):
                return pos + prev_nl + 1
        return tail


def repair_torn_tail(storage: Storage, rel: str) -> int:
    """Move a torn last line of the append-only file ``rel`` to ``rel + ".torn"``.

    The bytes are appended to the sidecar (never deleted) before ``rel`` is cut, under the file's
    inter-process lock. A missing or empty file is left alone (and not created).

    Returns:
        The number of bytes moved aside (0 when the file ends cleanly).
    """
    entry = storage.stat(rel)
    if entry is None or entry.kind != "file" or entry.size == 0:
        return 0
    with storage.lock(rel):
        entry = storage.stat(rel)
        if entry is None or entry.size == 0:
            return 0
        offset = _torn_offset(storage, rel, entry.size, rel.endswith(".jsonl"))
        if offset >= entry.size:
            return 0
        return storage.move_tail(rel, offset, rel + L.TORN_SUFFIX)


# --------------------------------------------------------------------------------------------
# code.diff


def git_diff(cwd: str | os.PathLike[str] | None = None, *, timeout: float = _GIT_TIMEOUT) -> bytes:
    """``git diff HEAD`` of the repository at ``cwd``, then the untracked files' names.

    Untracked (not ignored) files are listed after the diff as ``# untracked: <path>`` lines,
    which ``git apply`` ignores. Outside a git repository, or without git, the result is empty.
    """
    where = os.fspath(cwd) if cwd is not None else os.getcwd()
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}

    def run(*args: str) -> bytes | None:
        try:
            proc = subprocess.run(
                ["git", *args], cwd=where, capture_output=True, timeout=timeout, check=False,
                env=env, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout if proc.returncode == 0 else None

    diff_args = ("diff", "--no-color", "--no-ext-diff")
    diff = run(*diff_args, "HEAD")
    if diff is None:
        diff = run(*diff_args)  # a repository without commits has no HEAD yet
    if diff is None:
        return b""
    untracked = run("ls-files", "--others", "--exclude-standard", "-z") or b""
    names = [n for n in untracked.split(b"\0") if n]
    if names:
        if diff and not diff.endswith(b"\n"):
            diff += b"\n"
        diff += b"".join(b"# untracked: " + n.replace(b"\n", b"\\n") + b"\n" for n in names)
    return diff


# --------------------------------------------------------------------------------------------
# The writer


def _iteration(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"iteration must be an int >= 0, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"iteration must be an int >= 0, got {value!r}") from None
    if n < 0:
        raise ValueError(f"iteration must be >= 0, got {n}")
    return n


def _detect_layout(storage: Storage) -> L.Layout | None:
    """The layout of the first per-iteration file found, or None for a run with none."""
    if not storage.exists():
        return None
    for entry in storage.walk():
        found = L.parse_path(entry.path).layout
        if found is not None:
            return found
    return None


class RunWriter:
    """Writes one run directory (a local path or a URI) in the format of SPEC.md.

    Args:
        log_path: the run directory; created when absent.
        layout: ``"flat"`` (default for a new run) or ``"nested"``. An existing run keeps the
            layout found on disk (a differing explicit choice gives a ``UserWarning``).
        resume: prepare a restart: torn tails are moved aside, metrics lines the restart will
            log again go to ``metrics.jsonl.superseded``; see ``resume_state``.
        nonfinite: ``"null"`` (default) writes NaN and infinities as ``null``; ``"token"`` writes
            ``NaN``/``Infinity`` like Python's ``json`` (parity with older readers).
        check: check each record against its schema (and rollout summaries against SPEC §9)
            before writing. Turn off only when the records are known good.

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
    ) -> None:
        if layout not in (None, "flat", "nested"):
            raise ValueError(f"layout must be 'flat', 'nested' or None, got {layout!r}")
        if nonfinite not in ("null", "token"):
            raise ValueError(f"nonfinite must be 'null' or 'token', got {nonfinite!r}")
        self.log_path: str = os.fspath(log_path)
        self._storage = open_storage(self.log_path, create=True)
        self._nonfinite: NonFinite = nonfinite
        self._check = check
        found = _detect_layout(self._storage)
        if found is not None and layout is not None and found != layout:
            warnings.warn(
                f"run {self.log_path!r} already uses the {found} layout; keeping it instead of "
                f"the requested {layout!r}", UserWarning, stacklevel=2,
            )
        self._layout: L.Layout = found or layout or "flat"
        self._lock = threading.Lock()
        self._appenders: dict[str, Appender] = {}
        self._file_locks: dict[str, threading.Lock] = {
            L.METRICS: threading.Lock(), L.CHECKPOINTS: threading.Lock(),
        }
        self._labels: dict[str, str] = {}  # label -> the evaluator name that claimed it
        self._counts = {L.METRICS: 0, L.CHECKPOINTS: 0}
        self._closed = False
        self.resume_state: ResumeState | None = None
        if resume:
            from .resume import prepare_resume

            self.resume_state = prepare_resume(self._storage, required_key="state_path")

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
        """Flush and close the append handles. Idempotent; the writer cannot be used after."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            appenders, self._appenders = self._appenders, {}
        for rel, app in appenders.items():
            with self._file_locks[rel]:
                app.close()

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"RunWriter for {self.log_path!r} is closed")

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
        rel = L.iteration_path(self._layout, _iteration(iteration), artifact,
                               label=self.label_for(evaluator))
        self._refuse_symlinks(rel)
        return rel

    def _refuse_symlinks(self, rel: str) -> None:
        """No write may follow a symbolic link out of (or around) the run directory."""
        if not self._storage.is_local:
            return  # object stores have no symbolic links
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            entry = self._storage.stat("/".join(parts[:i]))
            if entry is not None and entry.kind == "symlink":
                raise UnsafeStorageError(
                    f"refusing to write through the symbolic link {self._storage.display(rel)!r}"
                )

    # -- validation --------------------------------------------------------------------------

    def _checked(self, schema: str, record: Any, what: str, index: int) -> Any:
        """The record to encode: ``record`` when valid, else a normalized valid copy.

        Raises:
            RecordError: naming ``what``, the index and the JSON pointer of the problem.
        """
        try:
            if is_valid(schema, record):
                return record
        except Exception:  # a user type the fast check trips on: take the slow path
            pass
        plain = to_json_value(record, what=what, index=index)
        judged = nonfinite_to_none(plain) if has_nonfinite(plain) else plain
        if is_valid(schema, judged):
            return plain
        pointer, reason = explain(schema, judged) or ("", f"does not match schema {schema}")
        raise RecordError(f"{what} {index} at {pointer or '/'}: {reason}", index=index,
                          pointer=pointer)

    def _encode(self, record: Any, index: int) -> bytes:
        return encode_line(record, nonfinite=self._nonfinite, index=index)

    # -- append-only files -------------------------------------------------------------------

    def _appender(self, rel: str) -> Appender:
        with self._lock:
            self._require_open()
            app = self._appenders.get(rel)
            if app is None:
                self._refuse_symlinks(rel)
                repair_torn_tail(self._storage, rel)
                app = self._appenders[rel] = self._storage.appender(rel)
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

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Append one line to ``metrics.jsonl``: ``step`` first, then the metrics in order.

        One ``write`` on a persistent handle, handed to the OS before this returns (not fsync'd;
        see ``flush``). Values must be scalars (number, string, boolean, None); numpy scalars and
        enums are converted; NaN and infinities follow the writer's ``nonfinite`` policy.

        Raises:
            RecordError: a value is an object or array, breaks the metrics schema, or ``step``
                conflicts with a ``"step"`` key in ``metrics``; nothing is written.
        """
        index = self._counts[L.METRICS]
        if not isinstance(metrics, Mapping):
            raise TypeError(f"metrics must be a mapping of name to value, got {metrics!r}")
        if step is not None:
            inner = metrics.get("step", step)
            if inner is not step and inner != step:
                raise RecordError(
                    f"metrics record {index} at /step: step={step!r} is given as an argument "
                    f"but the metrics hold step={inner!r}", index=index, pointer="/step",
                )
            record: Any = {"step": step, **metrics}
        elif "step" in metrics and next(iter(metrics)) != "step":
            record = {"step": metrics["step"], **metrics}
        else:
            record = metrics if type(metrics) is dict else dict(metrics)
        if self._check:
            record = self._checked("metrics-line", record, "metrics record", index)
        self._append(L.METRICS, self._encode(record, index), durable=False)

    def record_checkpoint(
        self,
        /,
        name: str,
        *,
        batch: int | None = None,
        epoch: int | None = None,
        final: bool | None = None,
        state_path: str | None = None,
        sampler_path: str | None = None,
        **extra: Any,
    ) -> None:
        """Append one record to ``checkpoints.jsonl`` durably (fsync, inter-process lock).

        Keys are written as name, batch, epoch, final, state_path, sampler_path (those that are
        None are omitted), then ``extra`` in call order (e.g. ``rolling=True``). The final
        checkpoint is recognised by ``name == "final"``.

        Raises:
            RecordError: the record breaks the checkpoint schema; nothing is written.
        """
        index = self._counts[L.CHECKPOINTS]
        record: dict[str, Any] = {"name": name}
        for key, value in (("batch", batch), ("epoch", epoch), ("final", final),
                           ("state_path", state_path), ("sampler_path", sampler_path)):
            if value is not None:
                record[key] = value
        record.update(extra)
        if self._check:
            record = self._checked("checkpoint-line", record, "checkpoint record", index)
        self._append(L.CHECKPOINTS, self._encode(record, index), durable=True)

    # -- whole files -------------------------------------------------------------------------

    def write_config(self, obj: Any, *, on_unserializable: OnUnserializable = "error") -> None:
        """Replace ``config.json`` atomically with ``obj`` serialized (indent 2).

        Accepts dataclasses, pydantic models, enums, paths, mappings and sequences.

        Raises:
            RecordError: a value has no faithful JSON form (a function, a class, bytes, a
                non-string key, a reference cycle); names its key path. With
                ``on_unserializable="repr"`` such values are written as their ``repr()``.
        """
        self._require_open()
        plain = to_json_value(obj, on_unserializable=on_unserializable, what="config")
        if not isinstance(plain, dict):
            raise RecordError(
                f"config at /: must serialize to a JSON object, got a {type(plain).__name__} "
                f"from {type(obj).__qualname__}", pointer="",
            )
        if self._nonfinite == "token":
            import json

            data = json.dumps(plain, indent=2, ensure_ascii=False, allow_nan=True).encode()
        else:
            data = orjson.dumps(plain, option=orjson.OPT_INDENT_2)
        self._storage.replace(L.CONFIG, data + b"\n")

    def write_code_diff(self, text: str | bytes | None = None) -> None:
        """Replace ``code.diff`` atomically.

        Args:
            text: the diff to write; by default ``git diff HEAD`` of the current working
                directory plus the names of untracked files (see ``git_diff``); empty outside
                a git repository.
        """
        self._require_open()
        if text is None:
            data = git_diff()
        elif isinstance(text, bytes):
            data = text
        else:
            data = text.encode("utf-8", "surrogateescape")
        self._storage.replace(L.CODE_DIFF, data)

    def write_rollout_summaries(
        self, iteration: int, records: Iterable[Mapping[str, Any]], *,
        evaluator: str | int | None = None,
    ) -> None:
        """Replace one iteration's ``*_rollout_summaries.jsonl`` atomically, one line per record.

        Keys are reordered into SPEC §6 order (steps too). ``schema_version``, ``split`` and
        ``iteration`` are filled in when absent and must match the call when present; every
        other key is required. With ``check`` on, ``(group_idx, traj_idx)`` must be unique,
        ``step_idx`` must run 0..n-1 and ``total_reward`` must equal the step rewards plus
        ``final_reward``.

        Raises:
            RecordError: naming the record index and the JSON pointer; nothing is written.
        """
        self._require_open()
        it = _iteration(iteration)
        rel = self._target(it, "rollout_summaries", evaluator)
        split = L.split_name(L.parse_path(rel).label)
        lines = []
        seen: set[tuple[Any, Any]] = set()
        for index, rec in enumerate(records):
            out = ordered_rollout(rec, it, split, index)
            if self._check:
                out = self._checked("rollout-summary-line", out, "rollout summary record", index)
                cross_check(out, index, seen)
            lines.append(self._encode(out, index))
        self._storage.replace(rel, b"".join(lines))

    @contextlib.contextmanager
    def logtree(
        self, iteration: int, *, title: str, evaluator: str | int | None = None
    ) -> Iterator[LogTree]:
        """A logtree builder for one iteration; its HTML and JSON are written when the block exits.

        Both files are written also when the block raises: the exception is recorded into the
        tree first, then re-raised. The JSON's ``path`` is the HTML twin's full path or URI.
        """
        from .logtree import LogTree

        self._require_open()
        it = _iteration(iteration)
        html_rel = self._target(it, "html", evaluator)
        json_rel = self._target(it, "logtree", evaluator)
        tree = LogTree(title)
        try:
            yield tree
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):
                with contextlib.suppress(Exception):
                    tree.exception(exc)
                try:
                    self._write_logtree(tree, html_rel, json_rel)
                except Exception as write_exc:
                    exc.add_note(f"rlio: the logtree {json_rel!r} could not be written: "
                                 f"{write_exc!r}")
            raise
        self._write_logtree(tree, html_rel, json_rel)

    def _write_logtree(self, tree: LogTree, html_rel: str, json_rel: str) -> None:
        # JSON first: a crash in between leaves JSON without HTML (info), not HTML without its
        # JSON twin (a warning).
        self._storage.replace(json_rel, tree.to_json_bytes(path=self._storage.display(html_rel)))
        self._storage.replace(html_rel, tree.to_html().encode("utf-8"))
