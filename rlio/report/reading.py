"""What the run report reads from a run: metrics columns, checkpoints, pages, resume point.

The run is read only through ``rlio.storage`` (any backend) and the tolerant JSONL decoder.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rlio import layout
from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_LINE, ForwardLines
from rlio.errors import ResumeError
from rlio.findings import Report
from rlio.report.columns import FileStats, MetricsReader, MetricsScan, ObservedChecks
from rlio.resume import read_resume_state
from rlio.storage.base import Storage
from rlio.validate import validate_run
from rlio.validate.checks.registry import RecordChecks
from rlio.validate.scan import Sink


def _iter_jsonl(storage: Storage, rel: str, stats: FileStats) -> Iterator[dict[str, Any]]:
    """The objects of a JSONL file, streamed; blank, bad, too long and torn lines are counted,
    skipped.

    A symlink is never followed and an unreadable file ends the stream; both are noted.
    """
    entry = storage.stat(rel)
    if entry is None:
        return
    if entry.kind != "file":
        stats.error = f"{rel} is a {entry.kind}, not a file: not read"
        return
    try:
        with storage.open_read(rel) as f:
            for number, raw, terminated in ForwardLines(f, max_line=MAX_LINE):
                stats.lines = number
                if raw is None:
                    stats.bad += 1  # too long to read: skipped like an unparseable line
                    continue
                if not terminated:
                    stats.torn = True  # what a crash leaves: readers ignore it (docs/format.md §2)
                    return
                if not raw.strip():
                    stats.blank += 1
                    continue
                try:
                    value, had_nonfinite = decode(raw)
                except DecodeError:
                    stats.bad += 1
                    continue
                if not isinstance(value, dict):
                    stats.bad += 1
                    continue
                stats.nonfinite_lines += had_nonfinite
                yield value
    except OSError as exc:
        stats.error = f"{rel} could not be read past line {stats.lines}: {exc}"


def read_metrics(storage: Storage, wanted: Sequence[str],
                 stand_in: Mapping[str, str] | None = None) -> MetricsScan:
    """Stream ``metrics.jsonl`` once, keeping only the wanted (and eval reward) columns.

    The report's own pass, when it runs without the validator (``MetricsObserver`` takes the
    validator's records otherwise). See ``MetricsReader`` for the x axis, the columns and
    ``stand_in``.
    """
    m = MetricsScan(present=storage.stat(layout.METRICS) is not None)
    reader = MetricsReader(wanted, m, stand_in)
    for rec in _iter_jsonl(storage, layout.METRICS, m.stats):
        reader(rec)
    return reader.close()


class MetricsObserver:
    """Reads the metrics columns from the validator's own parse of ``metrics.jsonl``.

    Passed to ``validate_run(..., observe=...)``: it wraps the metrics file's record checks, so
    each line is parsed once for both. The skipped-line counts come from the file's findings
    (uncapped counts). ``scan`` is None unless the validator read the whole file.
    """

    def __init__(self, storage: Storage, wanted: Sequence[str],
                 stand_in: Mapping[str, str] | None = None) -> None:
        self.storage = storage
        self.wanted = wanted
        self.stand_in = stand_in
        self.scan: MetricsScan | None = None

    def __call__(self, kind: str, sink: Sink, checks: RecordChecks | None) -> RecordChecks | None:
        """The record hook the validator uses for one file of ``kind``."""
        if kind != "metrics" or checks is None:
            return checks
        return ObservedChecks(checks, self.wanted, lambda m: self._done(m, sink), self.stand_in)

    def _done(self, m: MetricsScan, sink: Sink) -> None:
        """Keep the scan, with the skipped lines counted from the file's findings."""
        counts, st = sink.counts, m.stats
        st.blank = counts.get("RL105", 0)
        st.bad += sum(counts.get(c, 0) for c in _BAD_LINE_CODES)
        st.nonfinite_lines = sink.nonfinite_lines
        if counts.get("RL103"):  # a bad last line: torn only when it lacks its newline
            size = self.storage.size(layout.METRICS)
            if self.storage.read_range(layout.METRICS, max(0, size - 1), size) == b"\n":
                st.bad += 1
            else:
                st.torn = True
        self.scan = m


#: Findings of a line that is no record: not UTF-8, not JSON, too deep, too long.
_BAD_LINE_CODES: Final = ("RL101", "RL102", "RL106", "RL114")


@dataclass
class CheckpointScan:
    """The checkpoint ledger as read."""

    stats: FileStats = field(default_factory=FileStats)
    #: (1-based line, record, kind) with kind ``periodic``, ``rolling`` or ``final``.
    records: list[tuple[int, dict[str, Any], str]] = field(default_factory=list)
    present: bool = False


def read_checkpoints(storage: Storage) -> CheckpointScan:
    c = CheckpointScan(present=storage.stat(layout.CHECKPOINTS) is not None)
    for rec in _iter_jsonl(storage, layout.CHECKPOINTS, c.stats):
        c.records.append((c.stats.lines, rec, checkpoint_kind(rec)))
    return c


def checkpoint_kind(rec: dict[str, Any]) -> str:
    """``final`` (named ``final``), ``rolling`` (``rolling: true``) or ``periodic``."""
    if rec.get("name") == "final" or rec.get("final") is True:
        return "final"
    return "rolling" if rec.get("rolling") is True else "periodic"


@dataclass(frozen=True)
class ResumePoint:
    """Where a resume restarts, as a sentence, with ``describe()``'s detail when known."""

    line: int | None  # 1-based line of the resumable record in checkpoints.jsonl
    batch: int | None
    text: str
    detail: str = ""


def _resume_text(name: Any, batch: int | None, line: int | None) -> str:
    where = f"batch {batch}" if batch is not None else "an unknown batch (the record has none)"
    return f"restart at {where} from checkpoint {name!s} (checkpoints.jsonl line {line})"


def resume_point(run: str) -> ResumePoint | None:
    """Where a resume would restart (``read_resume_state``); a ledger it refuses is shown, not
    raised: the page reports ``cannot resume`` with the line."""
    try:
        state = read_resume_state(run)
    except Exception as exc:  # a ledger resume refuses (or cannot read) is shown, not raised
        line = exc.line if isinstance(exc, ResumeError) else None
        return ResumePoint(line, None, f"cannot resume: {exc}")
    if state is None:
        return None
    name = state.checkpoint.get("name")
    return ResumePoint(state.line, state.next_batch,
                       _resume_text(name, state.next_batch, state.line), state.describe())



def validation(run: str, own: str | None, observe: MetricsObserver | None = None) -> Report:
    """``validate_run(run)``, less the one finding the report causes: itself as an unknown file.

    The GC is paused meanwhile: the charts keep blocks of parsed records alive (acyclic dicts),
    and collections would only traverse them again and again, finding no garbage.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        report = validate_run(run, observe=observe)
    finally:
        if enabled:
            gc.enable()
    mine = [f for f in report.findings if f.file == own and f.code == "RL301"]
    if not mine:
        return report
    kept = [f for f in report.findings if f not in mine]
    return Report.build(report.run, kept, layout=getattr(report, "layout", None))
