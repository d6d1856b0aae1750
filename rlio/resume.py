"""Where a preempted run restarts (docs/format.md §5): the last resumable checkpoint, read backward.

``read_resume_state`` reads ``checkpoints.jsonl`` backwards in 64 KiB chunks until it meets the last
record whose required key (``state_path`` by default) is non-null, so its time and memory do not
grow with the number of records. Blank lines, unparseable lines and a torn last line met on the
way are skipped and reported. It also says what a restart at that checkpoint's ``batch``
supersedes: the suffix of ``metrics.jsonl`` whose steps are at or after it (found by reading
metrics backwards too) and the per-iteration files at or after it.

Line numbers are the one thing the end of a file cannot tell: the 1-based number of a line is one
plus the count of newlines before it, and counting them reads every byte in front (tens of ms per
100 MB, in 1 MiB chunks, flat memory). ``ResumeState`` therefore computes ``line``,
``skipped_lines`` and ``superseded_metrics_lines`` on first access and caches them; a restart
that only needs ``next_batch`` never pays for them. The count reads the bytes *before* the found
record, which append-only writers never change, so it stays right after later appends, after a
torn tail is moved aside and after ``prepare_resume`` rewinds metrics.

``prepare_resume`` (called by ``RunWriter(..., resume=True)``) acts on the state: it moves torn
tails to ``<file>.torn`` and the superseded metrics suffix to ``metrics.jsonl.superseded``, so the
resumed run's ``metrics.jsonl`` has no repeated steps and nothing is deleted. Without a resumable
checkpoint the restart is at iteration 0: every metrics line is superseded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from rlio import layout
from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_TAIL_LINE, BackwardLine, backward_lines, count_newlines
from rlio._supersede import (
    STEP_LOGS,
    MetricsCut,
    metrics_cut,
    superseded_files,
    whole_file_cut,
)
from rlio.errors import ResumeError, RunNotFoundError, StorageUnavailableError
from rlio.rules import resume_problem
from rlio.storage.base import Storage
from rlio.storage.opener import open_storage

__all__ = [
    "ResumeState",
    "SkippedLine",
    "prepare_resume",
    "read_resume_state",
    "resume_document",
]


SkipKind = Literal["blank", "unparseable", "torn", "too_long", "not_object"]
#: Kinds of per-iteration files a restart rewrites.


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A ledger line the resume reader passed over.

    Attributes:
        line: 1-based line number in ``checkpoints.jsonl``.
        kind: ``blank``, ``unparseable``, ``torn`` (the unterminated or unparseable last line a
            crash leaves), ``too_long`` (over 16 MiB, not read) or ``not_object``.
        reason: a one-line explanation naming what was found.
    """

    line: int
    kind: SkipKind
    reason: str


def _backward(storage: Storage, rel: str, size: int) -> Iterator[BackwardLine]:
    """The lines of ``rel[:size]``, last first, each over ``MAX_TAIL_LINE`` bytes passed unread."""
    return backward_lines(storage, rel, size, max_line=MAX_TAIL_LINE + 1)


@dataclass(frozen=True, slots=True)
class _Skip:
    """A skipped ledger line as found: lines after the resumable record, kind, reason."""

    after: int
    kind: SkipKind
    reason: str


class _LedgerScan:
    """What a backward scan of the ledger found (the record is None when none is resumable);
    ``from_end``: lines after the record (0: the record is the last line)."""

    __slots__ = ("from_end", "offset", "record", "skips", "torn")

    def __init__(self, torn: bool, record: dict[str, Any] | None, offset: int,
                 skips: tuple[_Skip, ...], from_end: int = 0) -> None:
        self.torn, self.record, self.offset = torn, record, offset
        self.skips, self.from_end = skips, from_end


def _classify(seg: BackwardLine, is_last: bool) -> tuple[Any, _Skip | None]:
    """Decode one segment; returns (record, None) or (None, skip) with ``after`` left at 0."""
    if not seg.terminated:
        return None, _Skip(0, "torn", "torn last line (no final newline): ignored, what a crash "
                                      "leaves")
    if seg.data is None:
        return None, _Skip(0, "too_long", f"line longer than {MAX_TAIL_LINE} bytes: not read")
    if not seg.data.strip():
        return None, _Skip(0, "blank", "blank line")
    try:
        value, _ = decode(seg.data)
    except DecodeError as exc:
        if is_last and exc.kind in ("json", "utf8"):  # the writer's repair rule for a torn line
            return None, _Skip(0, "torn", f"torn last line (not parseable: {exc}): ignored")
        return None, _Skip(0, "unparseable", f"unparseable line ({exc}): {seg.data[:40]!r}")
    if not isinstance(value, dict):
        return None, _Skip(0, "not_object", f"line is a JSON {type(value).__name__}, expected an "
                                            "object")
    return value, None


def _scan_ledger(storage: Storage, required_key: str, *, last_only: bool = False) -> _LedgerScan:
    """Read the ledger backwards to its last resumable record (or just its last line)."""
    entry = storage.stat(layout.CHECKPOINTS)
    if entry is None:
        return _LedgerScan(False, None, 0, ())
    if entry.kind != "file":
        raise ResumeError(f"{storage.display(layout.CHECKPOINTS)} is a {entry.kind}, not a "
                          "regular file: no restart point can be read from it")
    size = entry.size
    torn = False
    found: list[tuple[int, _Skip]] = []  # (backward index, skip)
    for i, seg in enumerate(_backward(storage, layout.CHECKPOINTS, size)):
        value, skip = _classify(seg, i == 0)
        if skip is not None:
            torn = torn or skip.kind == "torn"
            found.append((i, skip))
        elif value.get(required_key) is not None:
            skips = tuple(_Skip(i - j, s.kind, s.reason) for j, s in reversed(found))
            return _LedgerScan(torn, value, seg.start, skips, i)
        if last_only:
            break
    return _LedgerScan(torn, None, 0, ())


@dataclass(frozen=True)
class ResumeState:
    """Where a run restarts: the last resumable checkpoint and what restarting there supersedes.

    Attributes:
        checkpoint: the checkpoint record as written (every key, extras kept).
        offset: byte offset of that record's first byte in ``checkpoints.jsonl``.
        next_batch: the record's ``batch``: RL training restarts at this iteration.
        next_epoch: the record's ``epoch`` (SL/DPO restart at ``(epoch, batch)``), or None.
        torn_tail: the ledger's last line was torn (unterminated, or unparseable) when read.
        superseded_iteration_files: run-relative paths of per-iteration files (html, logtree,
            rollout summaries, timing gantt; both layouts, every split) whose iteration is
            ``>= next_batch``: the restart rewrites them, each atomically. Sorted.

    ``line``, ``skipped_lines`` and ``superseded_metrics_lines`` are properties computed on first
    access (they count newlines from the start of a file; see the module docstring). Compared
    and shown by the attributes above; immutable.
    """

    checkpoint: dict[str, Any]
    offset: int
    next_batch: int
    next_epoch: int | None
    torn_tail: bool
    superseded_iteration_files: list[str]
    _storage: Storage = field(compare=False, repr=False)
    _skips: tuple[_Skip, ...] = field(default=(), compare=False, repr=False)
    _metrics: MetricsCut | None = field(default=None, compare=False, repr=False)
    _from_end: int = field(default=0, compare=False, repr=False)

    def _with_metrics(self, cut: MetricsCut | None) -> ResumeState:
        """This state with the superseded metrics cut replaced (line caches not carried)."""
        return ResumeState(self.checkpoint, self.offset, self.next_batch, self.next_epoch,
                           self.torn_tail, self.superseded_iteration_files, self._storage,
                           self._skips, cut, self._from_end)

    @cached_property
    def line(self) -> int:
        """1-based line number of the checkpoint record in ``checkpoints.jsonl``.

        It is one plus the number of ``\\n`` bytes before the record, so blank and unparseable
        lines count (the same numbering as an editor and the validator's findings).
        """
        return count_newlines(self._storage, layout.CHECKPOINTS, self.offset) + 1

    @cached_property
    def skipped_lines(self) -> list[SkippedLine]:
        """Blank, unparseable and torn ledger lines after the record (all that was read), in order.

        Lines before the record are never read, so they are not reported here (the validator
        reports every line).
        """
        if not self._skips:
            return []
        return [SkippedLine(self.line + s.after, s.kind, s.reason) for s in self._skips]

    @cached_property
    def superseded_metrics_lines(self) -> tuple[int, int] | None:
        """1-based ``(first, last)`` lines of ``metrics.jsonl`` a restart supersedes, or None.

        The range is the file's suffix from the first line with ``step >= next_batch`` (see
        ``metrics_cut`` for lines with repeated or missing steps); a torn last line is not
        counted. After ``prepare_resume`` these lines live in ``metrics.jsonl.superseded``.
        """
        cut = self._metrics
        if cut is None:
            return None
        first = count_newlines(self._storage, layout.METRICS, cut.offset) + 1
        return first, first + cut.lines - 1

    @property
    def lines_after(self) -> int:
        """How many ledger lines follow the checkpoint record (0: it is the last line); known
        from the backward read, so free, unlike ``line``."""
        return self._from_end

    @property
    def superseded_metrics_count(self) -> int:
        """How many complete ``metrics.jsonl`` lines a restart supersedes (free, unlike
        ``superseded_metrics_lines``)."""
        return 0 if self._metrics is None else self._metrics.lines

    def describe(self, *, lines: bool = True) -> str:
        """A few human-readable lines: the checkpoint, the restart point, what is superseded.

        With ``lines`` False no line is numbered from the start of a file (that reads every byte
        before it): lines are placed from the end, what the backward read already knows.
        """
        return "\n".join(self.describe_lines(lines=lines))

    def describe_lines(self, *, lines: bool = True) -> list[str]:
        """``describe`` as a list of lines: a field holding a newline (a ``state_path`` from
        the ledger) stays inside its line, for a caller that escapes each line."""
        ck = self.checkpoint
        epoch = "" if self.next_epoch is None else f", epoch {self.next_epoch}"
        where = f"line {self.line}" if lines else _from_end_text(self._from_end)
        out = [
            f"resume from checkpoint {ck.get('name')!r} ({layout.CHECKPOINTS} {where}): "
            f"restart at batch {self.next_batch}{epoch}"
        ]
        for key in ("state_path", "sampler_path"):
            if ck.get(key) is not None:
                out.append(f"  {key}: {ck[key]}")
        if lines:
            for s in self.skipped_lines:
                out.append(f"  skipped {layout.CHECKPOINTS} line {s.line}: {s.reason}")
        else:
            for k in self._skips:
                out.append(f"  skipped {layout.CHECKPOINTS} "
                           f"{_from_end_text(self._from_end - k.after)}: {k.reason}")
        count = self.superseded_metrics_count
        if count == 0:
            out.append(f"  supersedes no {layout.METRICS} lines")
        elif lines:
            first, last = self.superseded_metrics_lines or (0, 0)
            out.append(f"  supersedes {layout.METRICS} lines {first}-{last} "
                       f"(step >= {self.next_batch})")
        else:
            out.append(f"  supersedes the last {count:,} {layout.METRICS} "
                       f"line{'' if count == 1 else 's'} (step >= {self.next_batch})")
        n = len(self.superseded_iteration_files)
        out.append(f"  supersedes {n} per-iteration file{'' if n == 1 else 's'} "
                   f"(iteration >= {self.next_batch})")
        return out


def _from_end_text(after: int) -> str:
    """Where a line is, counted from the end of its file."""
    return "last line" if after == 0 else f"line {after + 1:,} from the end"


def _as_storage(log_path: str | os.PathLike[str] | Storage) -> Storage:
    return log_path if isinstance(log_path, Storage) else open_storage(log_path)


def _state_from_scan(storage: Storage, scan: _LedgerScan, required_key: str) -> ResumeState | None:
    record = scan.record
    if record is None:
        return None
    batch, epoch = record.get("batch"), record.get("epoch")
    problem = resume_problem(record, required_key, null_batch=True)
    if problem is not None or not isinstance(batch, int):
        line = count_newlines(storage, layout.CHECKPOINTS, scan.offset) + 1
        raise ResumeError(
            f"{storage.display(layout.CHECKPOINTS)}:{line}: resumable checkpoint "
            f"{record.get('name')!r} ({required_key}={record.get(required_key)!r}) {problem}",
            line=line,
        )
    return ResumeState(
        checkpoint=record,
        offset=scan.offset,
        next_batch=batch,
        next_epoch=epoch,
        torn_tail=scan.torn,
        superseded_iteration_files=superseded_files(storage, batch),
        _storage=storage,
        _skips=scan.skips,
        _metrics=metrics_cut(storage, batch),
        _from_end=scan.from_end,
    )


def read_resume_state(
    log_path: str | os.PathLike[str] | Storage, *, required_key: str = "state_path"
) -> ResumeState | None:
    """The restart point of a run: its last checkpoint record with a non-null ``required_key``.

    Reads ``checkpoints.jsonl`` from its end (cost independent of the number of records); never
    writes. Returns None when the run has no resumable checkpoint yet (no run directory at all,
    no ledger, an empty one, or no record with ``required_key``): training starts at iteration
    0, as ``RunWriter(log_path, resume=True)`` does.

    Args:
        log_path: the run directory or URI (or an open ``Storage``).
        required_key: the key that makes a record resumable (``sampler_path`` for sampling).

    Raises:
        ResumeError: the resumable record has no integer ``batch`` >= 0 (or a bad ``epoch``):
            the message and ``.line`` name its line; or the ledger is not a regular file, or the
            run or a file cannot be read (permission, I/O: only a missing run or ledger means
            "none").
        StorageUnavailableError: a cloud store that cannot be reached (or has no credentials).
    """
    try:
        storage = _as_storage(log_path)
        return _state_from_scan(storage, _scan_ledger(storage, required_key), required_key)
    except RunNotFoundError:
        return None  # a fresh run: nothing was written yet
    except StorageUnavailableError:
        raise  # the store, not the run, failed: the error names it in one line
    except OSError as exc:  # permission denied, I/O error: "cannot read" is never "absent"
        where = exc.filename or (log_path.root if isinstance(log_path, Storage)
                                 else os.fspath(log_path))
        raise ResumeError(f"{where}: cannot be read: {exc.strerror or exc}; no restart point "
                          "can be given for this run") from exc


def resume_document(
    state: ResumeState | None, *, run: str | os.PathLike[str] | Storage | None = None,
    lines: bool = True,
) -> dict[str, Any]:
    """The JSON document of ``rlio resume --format json``.

    ``{"checkpoint", "line", "next_batch", "next_epoch", "torn_tail", "superseded":
    {"metrics_lines": [first, last] | null, "iteration_files": [...]}}``. ``torn_tail`` is about
    ``checkpoints.jsonl`` only: whether its last line is torn (a torn ``metrics.jsonl`` tail is
    not counted in ``metrics_lines`` and is moved aside by the writer).

    ``line`` and ``superseded.metrics_lines`` are numbered from the start of their files, which
    reads every byte before them; with ``lines`` False (``rlio resume`` without ``--line``) both
    are null and nothing is read in full: the document keeps its keys.

    With no resumable checkpoint (``state`` None) ``checkpoint``, ``line``, ``next_batch`` and
    ``next_epoch`` are null, and, when ``run`` is given, ``torn_tail`` says whether the ledger's
    last line is torn and ``superseded`` is what a restart from iteration 0 supersedes: every
    complete metrics line and every per-iteration file (what ``prepare_resume`` moves aside and
    the restarted run rewrites). Without ``run``: ``torn_tail`` false and nothing superseded.
    """
    if state is None:
        torn, span, files = False, None, []
        if run is not None:
            storage = _as_storage(run)
            torn = _scan_ledger(storage, "", last_only=True).torn
            cut = whole_file_cut(storage) if lines else None
            span = None if cut is None else [1, cut.lines]
            files = superseded_files(storage, 0)
        return {
            "checkpoint": None, "line": None, "next_batch": None, "next_epoch": None,
            "torn_tail": torn, "superseded": {"metrics_lines": span, "iteration_files": files},
        }
    numbered = state.superseded_metrics_lines if lines else None
    return {
        "checkpoint": state.checkpoint,
        "line": state.line if lines else None,
        "next_batch": state.next_batch,
        "next_epoch": state.next_epoch,
        "torn_tail": state.torn_tail,
        "superseded": {
            "metrics_lines": None if numbered is None else [numbered[0], numbered[1]],
            "iteration_files": list(state.superseded_iteration_files),
        },
    }


def prepare_resume(storage: Storage, *, required_key: str = "state_path") -> ResumeState | None:
    """Make a run ready to restart at its last resumable checkpoint; returns that state.

    Torn last lines of ``checkpoints.jsonl``, ``metrics.jsonl`` and ``timing_spans.jsonl`` are
    moved to their ``.torn`` sidecars; then, under each file's lock, the superseded suffix of
    ``metrics.jsonl`` (see ``ResumeState.superseded_metrics_lines``) and the same suffix of
    ``timing_spans.jsonl`` (the spans of those steps) are moved to their ``.superseded``
    sidecars, appended after what earlier resumes moved there. Nothing is deleted.
    Per-iteration files are left in place: the restarted run replaces each atomically when it
    rewrites it. The returned state's ``torn_tail`` says whether the ledger was torn before the
    repair.

    With no resumable checkpoint the run restarts at iteration 0, so every metrics and timing
    line is superseded: both files move to their sidecars whole and None is returned.
    """
    from rlio.storage.tail import repair_torn_tail  # the writer's path only, not a reader's

    state = read_resume_state(storage, required_key=required_key)  # torn_tail as found
    for rel in (layout.CHECKPOINTS, *STEP_LOGS):
        repair_torn_tail(storage, rel)
    cuts = {rel: _rewind(storage, rel, state) for rel in STEP_LOGS}
    # The returned state reports the metrics lines that moved; its line numbers stay right
    # because the bytes before the cut are unchanged.
    return None if state is None else state._with_metrics(cuts[layout.METRICS])


def _rewind(storage: Storage, rel: str, state: ResumeState | None) -> MetricsCut | None:
    """Move the lines of the step log ``rel`` a restart at ``state`` supersedes (all of them
    without a state) to ``rel``'s ``.superseded`` sidecar, under ``rel``'s lock."""
    if storage.stat(rel) is None:  # lock() would create the file
        return None
    with storage.lock(rel):
        cut = (whole_file_cut(storage, rel) if state is None
               else metrics_cut(storage, state.next_batch, rel))
        if cut is not None:
            storage.move_tail(rel, cut.offset, rel + layout.SUPERSEDED_SUFFIX)
    return cut
